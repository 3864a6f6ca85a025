"""em.save / em.load: safetensors files, nested structures, and a training run that
resumes from a checkpoint with the same losses as one that never stopped."""

from __future__ import annotations

import math
import os
import pickle

import numpy as np
import pytest

import execmode as em
from execmode import nn
from execmode.optim import lr_scheduler as S

safetensors_numpy = pytest.importorskip("safetensors.numpy",
                                        reason="checkpoints need the safetensors package")


def test_nested_structures_round_trip(tmp_path):
    obj = {
        "weights": {"0.weight": em.ones((2, 3)), "0.bias": em.tensor([1.5, -2.0],
                                                                    dtype=em.float64)},
        "state": {0: {"step": em.tensor(3.0), "ids": em.tensor([[1, 2]], dtype=em.int32)}},
        "mask": em.tensor([True, False]),
        "array": np.arange(3, dtype=np.int64),
        "groups": [{"lr": 0.1, "betas": (0.9, 0.999), "nesterov": False, "name": "g",
                    "extra": None}],
        "numbers": [1, 2.5, math.inf, -0.0, np.float32(0.5)],
        "epoch": 7,
    }
    path = tmp_path / "ckpt.safetensors"
    em.save(obj, path)
    back = em.load(path)
    assert list(back) == list(obj)
    for key in ("0.weight", "0.bias"):
        assert back["weights"][key].dtype == obj["weights"][key].dtype
        np.testing.assert_array_equal(back["weights"][key].numpy(), obj["weights"][key].numpy())
    assert list(back["state"]) == [0]  # an int key stays an int
    assert back["state"][0]["step"].shape == () and back["state"][0]["step"].item() == 3.0
    assert back["state"][0]["ids"].dtype == em.int32
    assert back["mask"].tolist() == [True, False]
    assert isinstance(back["array"], em.Tensor) and back["array"].tolist() == [0, 1, 2]
    assert back["groups"] == [{"lr": 0.1, "betas": (0.9, 0.999), "nesterov": False,
                               "name": "g", "extra": None}]
    assert back["numbers"] == [1, 2.5, math.inf, -0.0, 0.5] and back["epoch"] == 7
    assert not back["weights"]["0.weight"].requires_grad
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]  # no temporary file left behind


def test_a_state_dict_is_a_plain_safetensors_file(tmp_path):
    em.random.seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    path = str(tmp_path / "model.safetensors")
    em.save(model.state_dict(), path)
    raw = safetensors_numpy.load_file(path)  # any safetensors reader: the same keys
    assert set(raw) == set(model.state_dict())
    np.testing.assert_array_equal(raw["0.weight"], model[0].weight.numpy())
    # a file written by another tool (no execmode metadata) loads as a flat dict
    safetensors_numpy.save_file({"w": np.ones((2, 2), np.float32)}, str(tmp_path / "o.st"))
    other = em.load(tmp_path / "o.st")
    assert list(other) == ["w"] and other["w"].shape == (2, 2)
    # and PyTorch loads our file into the same model written in PyTorch
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    from safetensors.torch import load_file

    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    twin.load_state_dict(load_file(path))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    model.eval(), twin.eval()
    np.testing.assert_allclose(model(em.tensor(x)).numpy(),
                               twin(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_save_refuses_what_it_cannot_store_and_load_explains_bad_files(tmp_path):
    with pytest.raises(em.ArgumentError, match=r"'sched.fn' is a function.*never pickled"):
        em.save({"sched": {"fn": lambda e: e}}, tmp_path / "x.safetensors")
    with pytest.raises(em.ArgumentError, match="a dict key.*object"):
        em.save({object(): 1}, tmp_path / "x.safetensors")
    assert not os.listdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="no checkpoint file"):
        em.load(tmp_path / "missing.safetensors")
    pickled = tmp_path / "model.pt"
    pickled.write_bytes(pickle.dumps({"w": [1, 2]}))
    with pytest.raises(em.ArgumentError, match="not a readable safetensors file"):
        em.load(pickled)


def _training(ckpt, stop_at=None, resume=False, jit=False, steps=8):
    """Train a small classifier with AdamW, warm-up + cosine and clipping; optionally
    checkpoint after ``stop_at`` steps, or resume from the checkpoint."""
    em.random.seed(0)
    model = nn.Sequential(nn.Embedding(10, 8), nn.Flatten(), nn.Linear(24, 16),
                          nn.BatchNorm1d(16), nn.GELU(), nn.Linear(16, 3))
    opt = em.optim.AdamW([{"params": [p for n, p in model.named_parameters() if "bias" not in n]},
                          {"params": [p for n, p in model.named_parameters() if "bias" in n],
                           "weight_decay": 0.0}], lr=0.05)
    sched = S.SequentialLR(opt, [S.LinearLR(opt, 0.2, total_iters=3),
                                 S.CosineAnnealingLR(opt, T_max=steps)], milestones=[3])
    rng = np.random.default_rng(1)
    data = [(em.tensor(rng.integers(0, 10, (16, 3))), em.tensor(rng.integers(0, 3, 16)))
            for _ in range(steps)]

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    run = em.jit(step, on_break="error") if jit else step
    start = 0
    if resume:
        saved = em.load(ckpt)
        model.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        sched.load_state_dict(saved["scheduler"])
        start = saved["step"]
    losses = []
    for i in range(start, steps):
        losses.append(run(*data[i]).item())
        sched.step()
        if stop_at is not None and i + 1 == stop_at:
            em.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                     "scheduler": sched.state_dict(), "step": i + 1}, ckpt)
            break
    return losses


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_resume_from_a_checkpoint_continues_with_identical_losses(tmp_path, jit):
    ckpt = tmp_path / "run.safetensors"
    straight = _training(ckpt, jit=jit)
    first = _training(ckpt, stop_at=5, jit=jit)
    resumed = _training(ckpt, resume=True, jit=jit)
    assert first == straight[:5]
    assert resumed == straight[5:]  # bit for bit
    assert len(resumed) == 3
