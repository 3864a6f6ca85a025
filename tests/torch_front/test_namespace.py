"""``import execmode.torch as torch``: PyTorch's spellings and semantics where they differ
from em's, checked against real PyTorch (twins, where torch is installed) and under jit."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from helpers import assert_close
from pytorch_twins import assert_jit_agrees, torch_or_skip

import execmode as em
import execmode.torch as torch

RNG = np.random.default_rng(32)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((2, 3, 4)).astype(np.float32)


# Slow tier: a fresh interpreter.
@pytest.mark.slow
def test_importing_the_front_end_loads_nothing_until_a_name_is_used():
    code = ("import sys, execmode.torch as torch; assert 'numpy' not in sys.modules; "
            "torch.zeros(1); assert 'execmode.api' in sys.modules; "
            "import execmode.torch.nn, execmode.torch.utils.data; "
            "assert 'torch' not in sys.modules and 'cupy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_everything_it_makes_is_an_execmode_tensor():
    made = [torch.tensor([1, 2]), torch.Tensor([1.0]), torch.zeros(2), torch.randn(2),
            torch.from_numpy(np.zeros(2)), torch.arange(3), torch.randperm(4)]
    assert all(type(t) is em.Tensor for t in made)
    assert all(isinstance(t, torch.Tensor) for t in made)
    assert isinstance(torch.nn.Parameter(torch.zeros(1)), torch.Tensor)
    assert issubclass(torch.nn.Parameter, torch.Tensor) and not isinstance(A, torch.Tensor)


def test_dtype_names_and_defaults():
    assert torch.long is em.int64 and torch.float is em.float32 and torch.double is em.float64
    assert torch.int is em.int32 and torch.bool is em.bool
    assert torch.tensor([1, 2]).dtype == torch.int64 and torch.tensor([1.0]).dtype == torch.float32
    assert torch.Tensor([1, 2]).dtype == torch.float32 and torch.Tensor(2, 3).shape == (2, 3)
    assert torch.LongTensor([1]).dtype == torch.long and torch.FloatTensor(2).shape == (2,)
    assert isinstance(torch.tensor([1]), torch.LongTensor)
    assert not isinstance(torch.tensor([1.0]), torch.LongTensor)
    assert torch.get_default_dtype() == torch.float32
    assert torch.finfo(torch.float32).eps == np.finfo(np.float32).eps


@pytest.mark.parametrize("make", [
    lambda: torch.zeros(2, dtype=torch.float16), lambda: torch.ones(1).half(),
    lambda: torch.ones(1).to(torch.bfloat16), lambda: torch.tensor([1.0], dtype=torch.bfloat16),
    lambda: torch.set_default_dtype(torch.float64)])
def test_half_precision_is_refused_naming_what_works(make):
    with pytest.raises((em.DTypeError, AttributeError)) as info:
        make()
    assert "float32" in str(info.value)


def test_from_numpy_shares_memory():
    a = np.zeros(3, np.float32)
    t = torch.from_numpy(a)
    a[0] = 5.0
    t[1] = 7.0
    assert t.tolist() == [5.0, 7.0, 0.0] and a[1] == 7.0
    with pytest.raises(em.DTypeError, match="float16"):
        torch.from_numpy(np.zeros(2, np.float16))


def test_device_and_to():
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.ones(2).to(dev)
    assert x.device == dev and x.device.type == dev.type
    assert torch.device("cpu") == "cpu" and torch.device("cuda", 1).index == 1
    assert torch.ones(2).to("cpu", torch.float64).dtype == torch.float64
    with pytest.raises(em.DeviceError, match="cpu"):
        torch.device("mps")


def test_twins_against_pytorch():
    real = torch_or_skip()
    a, ta = torch.tensor(A), real.tensor(A)
    b, tb = torch.tensor(B), real.tensor(B)
    pairs = [
        (torch.max(a, 1).values, real.max(ta, 1).values),
        (torch.max(a, 1)[1], real.max(ta, 1)[1]),
        (torch.min(b, dim=2, keepdim=True).indices, real.min(tb, dim=2, keepdim=True).indices),
        (torch.max(a, torch.flip(a, [0])), real.max(ta, real.flip(ta, [0]))),
        (torch.max(a), real.max(ta)),
        (torch.transpose(b, 1, 2), real.transpose(tb, 1, 2)),
        (torch.sort(a)[0], real.sort(ta)[0]), (torch.sort(a, 0)[1], real.sort(ta, 0)[1]),
        (torch.var(a), real.var(ta)), (torch.std(b, 1), real.std(tb, 1)),
        (torch.var(a, 1, unbiased=False), real.var(ta, 1, unbiased=False)),
        (torch.squeeze(b[:1], 0), real.squeeze(tb[:1], 0)),
        (torch.squeeze(b, 1), real.squeeze(tb, 1)),
        (torch.unsqueeze(a, 1), real.unsqueeze(ta, 1)),
        (torch.where(a > 0)[1], real.where(ta > 0)[1]),
        (torch.nonzero(a > 0), real.nonzero(ta > 0)),
        (torch.add(a, a, alpha=2.0), real.add(ta, ta, alpha=2.0)),
        (torch.div(torch.tensor([7, -7]), 2, rounding_mode="trunc"),
         real.div(real.tensor([7, -7]), 2, rounding_mode="trunc")),
        (torch.div(a, 0.3, rounding_mode="floor"), real.div(ta, 0.3, rounding_mode="floor")),
        (torch.mm(a, a.T), real.mm(ta, ta.T)), (torch.bmm(b, b.mT), real.bmm(tb, tb.mT)),
        (torch.outer(a[0], a[1]), real.outer(ta[0], ta[1])),
        (torch.amax(b, (0, 2)), real.amax(tb, (0, 2))), (torch.amin(b, 1), real.amin(tb, 1)),
        (torch.norm(a), real.norm(ta)), (torch.norm(b, 1, dim=2), real.norm(tb, 1, dim=2)),
        (torch.rsqrt(torch.abs(a)), real.rsqrt(real.abs(ta))),
        (torch.log2(torch.abs(a)), real.log2(real.abs(ta))),
        (torch.isclose(a, a + 1e-6), real.isclose(ta, ta + 1e-6)),
        (torch.hstack([a, a]), real.hstack([ta, ta])), (torch.vstack([a[0], a[1]]),
                                                        real.vstack([ta[0], ta[1]])),
        (torch.narrow(b, 2, 1, 2), real.narrow(tb, 2, 1, 2)),
        (torch.unbind(b, 1)[2], real.unbind(tb, 1)[2]),
        (torch.linspace(0, 1, steps=5), real.linspace(0, 1, steps=5)),
        (torch.logical_xor(a > 0, a > 1), real.logical_xor(ta > 0, ta > 1)),
        (torch.var_mean(b, 2)[0], real.var_mean(tb, 2)[0]),
        (torch.tensordot(b, a, dims=([1, 2], [0, 1])), real.tensordot(tb, ta, dims=([1, 2], [0, 1]))),
        (torch.tensordot(a, b[0].T, dims=1), real.tensordot(ta, tb[0].T, dims=1)),
        (torch.take_along_dim(a, torch.argsort(a, 1), 1),
         real.take_along_dim(ta, real.argsort(ta, 1), 1)),
    ]
    for got, want in pairs:
        assert_close(got, want.numpy(), rtol=1e-5, atol=1e-6)
    assert torch.equal(a, a.clone()) is real.equal(ta, ta.clone()) is True
    assert torch.allclose(a, a + 1e-9) and not torch.equal(a, a[:2])


def test_torch_spellings_under_jit():
    def f(a, b):
        values, indices = torch.max(b, dim=2)
        return (torch.transpose(b, 1, 2) * 2, values + torch.var(a, 1).sum(), indices,
                torch.sort(a, descending=True)[0], torch.addmm(a[:, :3], a, a.T[:, :3]),
                torch.flip(a, [1]), torch.roll(b, 1, 2), torch.max(a, a * 0.5))

    assert_jit_agrees(f, torch.tensor(A), torch.tensor(B), rtol=1e-5, atol=1e-6)


def test_compile_is_em_jit_and_a_decorator():
    f = torch.compile(lambda x: torch.sinh(x) + 1)
    assert isinstance(f, type(em.jit(lambda x: x)))
    assert_close(f(torch.tensor(A)), np.sinh(A) + 1, rtol=1e-5)

    @torch.compile(fullgraph=True, mode="max-autotune")
    def g(x):
        return x * 2

    assert_close(g(torch.tensor(A)), A * 2)
    assert torch.compile(disable=True)(len) is len


def test_grad_switches():
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        assert not (x * 2).requires_grad
    with torch.inference_mode():
        assert not (x * 2).requires_grad

    @torch.no_grad
    def bare(y):
        return y * 2

    assert not bare(x).requires_grad
    torch.set_grad_enabled(False)
    assert not torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled() and (x * 2).requires_grad


def test_small_namespaces():
    assert torch.jit.script(len) is len and torch.jit.is_scripting() is False
    v = torch.autograd.Variable(torch.ones(2), requires_grad=True)
    torch.autograd.backward(v.sum())
    assert v.grad.tolist() == [1.0, 1.0]
    torch.set_float32_matmul_precision("high")
    assert torch.get_float32_matmul_precision() == "high"
    assert torch.Size([2, 3]).numel() == 6 and torch.zeros(2, 3).shape == torch.Size([2, 3])
