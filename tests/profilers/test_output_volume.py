"""A script that prints a lot: all of it reaches the terminal (byte for byte, as under
python), and the session records the first EXECMODE_OUTPUT_MAX_MB of it, then says it
stopped. The speed (>= 100 MB/s) is measured by benchmarks/bench_output.py."""

from __future__ import annotations

import subprocess
import sys

import pytest
from execmode.profilers.session import open_session
from profiler_fixtures import SCRIPTS

# Slow tier: scripts that print a lot, run under the profiler and the debugger.
pytestmark = pytest.mark.slow

SPEW = SCRIPTS / "spew.py"


def _plain_stdout(mib: str) -> str:
    return subprocess.run([sys.executable, SPEW, mib], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize("command", ["profile", "run"])
def test_output_past_the_limit_reaches_the_terminal_and_is_not_recorded(command, tmp_path):
    session = tmp_path / "spew.emsession"
    env = dict(__import__("os").environ, EXECMODE_OUTPUT_MAX_MB="0.5")
    result = subprocess.run([sys.executable, "-m", "execmode", command, "--session",
                             str(session), SPEW, "3"], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    want = _plain_stdout("3")
    got = result.stdout[:len(want)]  # profile prints its report after the script's output
    assert got == want
    assert "done" in result.stderr
    with open_session(session) as s:
        rows = s.output()
        stdout_rows = [r.text for r in rows if r.stream == "stdout"]
        # The first half MiB, line for line, then the note, and nothing after it.
        assert stdout_rows == want.splitlines()[:len(stdout_rows)]
        recorded = sum(len(t) + 1 for t in stdout_rows)
        # The write that crossed the limit is kept whole (spew.py writes 100,000 chars).
        assert 2**19 <= recorded < 2**19 + 100_000
        assert "not recorded in the session" in rows[-1].text
        truncated = s.meta["output_truncated"]
        assert truncated["recorded_chars"] == recorded
        assert truncated["recorded_chars"] + truncated["not_recorded_chars"] \
            == len(want) + len("done\n")


def test_output_under_the_limit_is_recorded_whole(tmp_path):
    session = tmp_path / "small.emsession"
    result = subprocess.run([sys.executable, "-m", "execmode", "run", "--session",
                             str(session), SPEW, "0.01"], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    with open_session(session) as s:
        assert [r.text for r in s.output() if r.stream == "stdout"] == \
            _plain_stdout("0.01").splitlines()
        assert "output_truncated" not in s.meta


def test_the_tui_controller_keeps_the_last_lines_only():
    from execmode.debug.controller import OUTPUT_LINES_KEPT, Controller

    mib = "1.5"  # 15,728 lines through the pipes, line by line, as the TUI reads them
    with Controller(str(SPEW), [mib], start_paused=False) as c:
        assert c.wait_for("exited", timeout=120)["status"] == "ok"
        kept = [line for stream, line in c.output if stream == "stdout"]
    want = _plain_stdout(mib).splitlines()
    assert len(want) > OUTPUT_LINES_KEPT
    assert kept == want[len(want) - len(kept):]  # the newest, in order
    assert len(c.output) == OUTPUT_LINES_KEPT  # "done" on stderr is the last of them
