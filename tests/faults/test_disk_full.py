"""The disk fills up while a session is recorded: the script runs on to its end, the session
is closed with what fit, marked partial, and `execmode report` says so.

Two real ways to fill it: SQLite's own size cap (``EXECMODE_SESSION_MAX_MB`` sets
``PRAGMA max_page_count``, so writes fail with SQLITE_FULL exactly as on a full disk; no
privileges needed), and, where the test may mount one, a 1 MiB tmpfs that the script itself
fills (the case the reserve file exists for).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from execmode.profilers.session import open_session
from fault_helpers import SCRIPTS, child_env, run_execmode

# Slow tier: faults injected into real processes.
pytestmark = pytest.mark.slow

MANY_OPS = os.path.join(SCRIPTS, "many_ops.py")
FILLS_THE_DISK = os.path.join(SCRIPTS, "fills_the_disk.py")


def assert_partial(session, stdout, stderr, report_text):
    assert "done 4.0" in stdout  # the script ran to its end
    assert "recording stops here and the session is marked partial" in stderr
    with open_session(session) as s:
        partial = s.meta["partial"]
        assert "full" in partial["reason"] or "I/O" in partial["reason"]
        assert partial["dropped"] > 0
        assert s.meta["exit"]["kind"] == "normal"  # closed cleanly: the exit is recorded
        assert s.status == "finished"
        assert 0 < s.count("op_events")
    assert "PARTIAL session: recording stopped early" in report_text
    assert "items after that point were not recorded" in report_text


def test_a_session_that_reaches_its_size_cap_is_closed_partial(tmp_path):
    session = tmp_path / "capped.emsession"
    # One commit holds at most 20,000 items (~1.2 MiB): the first ones fit under 2 MiB,
    # 60,000 ops (~4 MiB) do not.
    result = run_execmode("profile", "--session", str(session), "-o", str(tmp_path / "r.md"),
                          MANY_OPS, "60000", EXECMODE_SESSION_MAX_MB="2", timeout=300)
    assert result.returncode == 0, result.stderr
    assert os.path.getsize(session) <= 2 * 2**20
    assert_partial(session, result.stdout, result.stderr, result.stdout)
    assert not (tmp_path / ".capped.emsession.reserve").exists()
    again = run_execmode("report", str(session), "-o", str(tmp_path / "again.md"), "--summary")
    assert again.returncode == 0 and "PARTIAL" in again.stdout


def test_a_bad_size_cap_is_refused(tmp_path):
    result = run_execmode("profile", "--session", str(tmp_path / "s.emsession"), MANY_OPS, "1",
                          EXECMODE_SESSION_MAX_MB="lots")
    assert result.returncode == 2
    assert "EXECMODE_SESSION_MAX_MB='lots': expected a number of MiB" in result.stderr


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="needs root and unshare to mount a 1 MiB tmpfs")
def test_a_disk_that_the_script_fills_leaves_a_partial_session(tmp_path):
    """Another writer (here the script, writing a ballast file) takes the last free block:
    the session's next commit fails. The reserve file, deleted then, is the room the final
    meta rows need (without it this session ended unmarked, its exit status lost)."""
    mount = tmp_path / "small"
    mount.mkdir()
    session = mount / "s.emsession"
    command = (f"mount -t tmpfs -o size=1m tmpfs {mount} && "
               f"{sys.executable} -m execmode profile --session {session} "
               f"-o {tmp_path / 'r.md'} {FILLS_THE_DISK} {mount / 'ballast'}; code=$?; "
               f"{sys.executable} -c 'import shutil, sys; "
               f"shutil.copytree(sys.argv[1], sys.argv[2])' {mount} {tmp_path / 'copy'}; "
               "exit $code")
    result = subprocess.run(["unshare", "-m", "sh", "-c", command], capture_output=True,
                            text=True, env=child_env(), timeout=300)
    if "mount:" in result.stderr and not os.path.exists(tmp_path / "copy"):
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    report = (tmp_path / "r.md").read_text()
    assert_partial(tmp_path / "copy" / "s.emsession", result.stdout, result.stderr, report)
