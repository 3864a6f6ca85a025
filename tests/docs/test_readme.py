"""The README's python blocks run as written (each on its own, in a fresh folder): they are
the first code a newcomer copies."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

# Slow tier: the README runs whole.
pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = [body for lang, body in re.findall(r"^```(\w+)\n(.*?)^```", README.read_text(),
                                            re.S | re.M) if lang == "python"]


@pytest.mark.parametrize("body", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_block_runs(body, tmp_path):
    script = tmp_path / "block.py"
    script.write_text(body)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 2
