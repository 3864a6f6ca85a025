"""The other views' modules are imported by a worker after the launch, so that a view's
first opening pays only for its compose (bench_tui_latency.py's "first opening")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent

# A fresh interpreter: in the test process another test may have imported them already.
SCRIPT = f"""
import asyncio, sys, tempfile
from pathlib import Path
sys.path.insert(0, {str(HERE)!r})
from fixture_session import build_session
from execmode.tui import app as app_module
from execmode.tui.app import ExecmodeApp
from execmode.tui.launch import SessionLaunch
from execmode.tui.screens import SCREEN_CLASSES

app_module.IMPORT_VIEWS_AFTER_S = 1.0
views = [f"execmode.tui.screens.{{m}}" for m, _ in SCREEN_CLASSES.values()]

async def main():
    app = ExecmodeApp(SessionLaunch(str(build_session(Path(tempfile.mkdtemp())))))
    async with app.run_test(size=(80, 24)) as pilot:
        before = sorted(v for v in views if v in sys.modules)
        for _ in range(200):
            await asyncio.sleep(0.05)
            if all(v in sys.modules for v in views):
                break
        print(before, sorted(v for v in views if v not in sys.modules))

asyncio.run(main())
"""


def test_a_worker_imports_the_other_views_after_the_launch():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    before, missing = done.stdout.strip().splitlines()[-1].split("] [")
    assert "screens.profile" not in before  # not with the app: the launch stays light
    assert missing == "]"                   # all of them, shortly after
