"""benchmarks/bench_example_first_calls.py times examples/char_gpt.py's jitted step against
a PyTorch twin; the twin must stay the same model and step, or the comparison is of
different work. Its check child (one eager step of each, no dropout, execmode's weights
copied) is run here as the benchmark runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pytorch_twins import NEEDS_TORCH

pytest.importorskip("torch", reason=NEEDS_TORCH)
# Slow tier: two frameworks imported and a GPT step run in a fresh interpreter.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_example_first_calls.py"
RESULT_TAG = "benchmark-child-result:"


def test_char_gpt_twin_gives_execmode_losses(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--child", "gpt-check"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=dict(os.environ, EXECMODE_CACHE_DIR=str(tmp_path)))
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith(RESULT_TAG))
    losses = json.loads(line[len(RESULT_TAG):])
    # Before and after one AdamW update: the same weights, batch, rate and clipping.
    assert losses["execmode"] == pytest.approx(losses["torch"], rel=1e-5)
    assert losses["execmode"][1] < losses["execmode"][0]
