"""``torch.save``/``torch.load``: state_dicts on safetensors, ``map_location``, file
objects; a whole module and PyTorch's pickles are refused with the way to do it."""

from __future__ import annotations

import io

import pytest
from pytorch_twins import torch_or_skip

import execmode as em
import execmode.torch as torch


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


def test_state_dicts_round_trip_with_map_location(tmp_path):
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(2, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": 3}, path)
    for where in (None, "cpu", torch.device("cpu"), {"cuda:0": "cpu"},
                  lambda storage, loc: storage):
        loaded = torch.load(path, map_location=where, weights_only=True)
        fresh = _model()
        fresh.load_state_dict(loaded["model"])
        for a, b in zip(fresh.parameters(), model.parameters(), strict=True):
            assert a.tolist() == b.tolist()
        assert loaded["step"] == 3
    opt2 = torch.optim.Adam(_model().parameters(), lr=1e-3)
    opt2.load_state_dict(torch.load(path)["opt"])


def test_file_objects(tmp_path):
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(3)}, buffer)
    buffer.seek(0)
    assert torch.load(buffer)["w"].tolist() == [0, 1, 2]


def test_a_whole_module_is_refused_with_the_state_dict_way(tmp_path):
    for obj in (_model(), {"model": _model()}):
        with pytest.raises(em.ArgumentError, match=r"model\.state_dict\(\)"):
            torch.save(obj, tmp_path / "m.pt")
    assert not (tmp_path / "m.pt").exists()


def test_pytorchs_pickles_are_refused(tmp_path):
    real = torch_or_skip()
    path = tmp_path / "theirs.pt"
    real.save({"w": real.ones(2)}, path)
    with pytest.raises(em.ArgumentError, match="safetensors"):
        torch.load(path)
    from safetensors.torch import save_file

    save_file({"w": real.ones(2)}, tmp_path / "theirs.safetensors")
    assert torch.load(tmp_path / "theirs.safetensors")["w"].tolist() == [1.0, 1.0]
