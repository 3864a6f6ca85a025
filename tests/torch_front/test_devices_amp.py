"""``torch.cuda``, ``torch.accelerator``, ``torch.backends`` answer for this machine;
``autocast`` changes no result; ``GradScaler`` is PyTorch's algorithm (twin)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close
from pytorch_twins import torch_or_skip

import execmode as em
import execmode.torch as torch
from execmode.backend import cuda_device_count, cuda_is_available


def test_device_questions_answer_for_this_machine():
    assert torch.cuda.is_available() is cuda_is_available()
    assert torch.cuda.device_count() == cuda_device_count()
    assert torch.accelerator.is_available() is cuda_is_available()
    expected = torch.device("cuda") if cuda_is_available() else None
    assert torch.accelerator.current_accelerator() == expected
    assert torch.cuda.is_bf16_supported() is False
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    assert torch.cuda.memory_allocated() >= 0
    if not cuda_is_available():
        with pytest.raises(em.DeviceError, match="GPU"):
            torch.cuda.current_device()
        with pytest.raises(em.DeviceError):
            torch.ones(1).cuda()


def test_backends_are_honest_switches():
    assert torch.backends.cudnn.is_available() is False
    assert torch.backends.mps.is_available() is False and torch.backends.mps.is_built() is False
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    assert torch.backends.cuda.math_sdp_enabled() and not torch.backends.cuda.flash_sdp_enabled()
    import execmode.torch.backends.cudnn as cudnn

    assert cudnn.benchmark is True


def test_autocast_keeps_float32_and_the_results():
    x, w = torch.randn(4, 3), torch.randn(3, 2)
    assert not torch.is_autocast_enabled()
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled()
        y = x @ w
    with torch.amp.autocast("cuda", dtype=torch.float16, enabled=False):
        assert not torch.is_autocast_enabled()
    assert y.dtype == torch.float32
    assert_close(y, x.numpy() @ w.numpy(), rtol=1e-6)

    @torch.cuda.amp.autocast()
    def decorated():
        return torch.is_autocast_enabled()

    assert decorated()


def _run_scaler(lib, scaler_cls, grads_seq):
    """Steps with the given gradients; the parameter and scale after each."""
    p = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
    opt = lib.optim.SGD([p], lr=0.5)
    scaler = scaler_cls(init_scale=8.0, growth_interval=2)
    out = []
    for g in grads_seq:
        opt.zero_grad()
        loss = (p * lib.tensor(g, dtype=lib.float32)).sum()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        scaler.step(opt)
        scaler.update()
        out.append((p.detach().numpy().copy(), scaler.get_scale()))
    return out


def test_grad_scaler_is_pytorchs_algorithm():
    real = torch_or_skip()
    steps = [[1.0, 1.0], [0.5, np.inf], [1.0, -1.0], [2.0, 0.0], [np.nan, 0.0], [1.0, 1.0]]
    ours = _run_scaler(torch, lambda **k: torch.amp.GradScaler("cpu", **k), steps)
    theirs = _run_scaler(real, lambda **k: real.amp.GradScaler("cpu", **k), steps)
    for (p, scale), (tp, tscale) in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p, tp, rtol=1e-6)
        assert scale == tscale


def test_a_cuda_scaler_without_a_gpu_is_disabled_as_pytorchs():
    if cuda_is_available():
        assert torch.cuda.amp.GradScaler().is_enabled()
        return
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = torch.amp.GradScaler()
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0
    assert torch.amp.GradScaler("cpu").get_scale() == 65536.0


def test_a_disabled_scaler_passes_everything_through():
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    loss = torch.ones(1)
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and not scaler.is_enabled()
    p = torch.nn.Parameter(torch.ones(1))
    opt = torch.optim.SGD([p], lr=1.0)
    (p * 2).sum().backward()
    scaler.step(opt)
    scaler.update()
    assert p.tolist() == [-1.0] and scaler.state_dict() == {}
