"""A PyTorch-style training script (programs/blobs_classifier.py) runs on execmode with
only its imports changed: eagerly and under torch.compile with the same losses, and with
the same losses as on PyTorch itself (its imports swapped back)."""

from __future__ import annotations

import re
import runpy
import sys
from pathlib import Path

import pytest
from pytorch_twins import torch_or_skip

SCRIPT = Path(__file__).parent / "programs" / "blobs_classifier.py"


def _losses(path, capsys, monkeypatch, *args) -> list[float]:
    monkeypatch.setattr(sys, "argv", [str(path), "--epochs", "3", *args])
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert "restored from checkpoint: same outputs" in out
    return [float(v) for v in re.findall(r"loss (\S+)", out)]


@pytest.mark.slow  # compiles a model's training step
def test_eager_and_compiled_train_alike(capsys, monkeypatch):
    eager = _losses(SCRIPT, capsys, monkeypatch)
    compiled = _losses(SCRIPT, capsys, monkeypatch, "--compile")
    assert len(eager) == 3 and eager[-1] < eager[0]
    assert compiled == pytest.approx(eager, abs=1e-6)


def test_the_same_script_on_pytorch_gives_the_same_losses(capsys, monkeypatch, tmp_path):
    torch_or_skip()
    theirs = tmp_path / "blobs_classifier_torch.py"
    theirs.write_text(SCRIPT.read_text().replace("execmode.torch", "torch"))
    ours = _losses(SCRIPT, capsys, monkeypatch)
    want = _losses(theirs, capsys, monkeypatch)
    assert ours == pytest.approx(want, abs=1e-4)
