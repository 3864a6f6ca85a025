"""Damaged, foreign and half-written session files: `execmode report` and `execmode open`
either read them (an intact session whose writer died) or refuse them with exit status 2
and a message naming the file and the problem: never a traceback, never a hang.

Every file here is real: recorded by a real child process, then spoiled the way a crash, a
copy or another program would spoil it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time

import pytest
from execmode.profilers.session import open_session
from execmode.tui.data import SessionReader, SessionUnreadable
from fault_helpers import run_execmode, start_cli, wait_gone

# Slow tier: faults injected into real processes.
pytestmark = pytest.mark.slow

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
HANG_LIMIT_S = 30  # a FIFO used to block report and open forever


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """{"closed": a finished session, "killed": one whose writer was SIGKILLed, leaving its
    rows in the -wal file}. Copy before spoiling."""
    folder = tmp_path_factory.mktemp("recorded")
    out = {}
    for how in ("close", "kill"):
        path = folder / f"{how}.emsession"
        proc = subprocess.run([sys.executable, os.path.join(SCRIPTS, "record.py"), str(path),
                               how], capture_output=True, text=True, timeout=120)
        assert proc.returncode == (0 if how == "close" else -9), proc.stderr
        out[how] = path
    assert os.path.getsize(f"{out['kill']}-wal") > 100_000  # the rows are in the WAL
    return out


def copy_session(source, folder, name="s.emsession", wal=True, shm=False):
    target = folder / name
    shutil.copyfile(source, target)
    for suffix, wanted in (("-wal", wal), ("-shm", shm)):
        if wanted and os.path.exists(f"{source}{suffix}"):
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")
    return target


def assert_readable(path, tmp_path):
    """report works, and the TUI's reader (what `open` checks first) opens it."""
    result = run_execmode("report", str(path), "-o", str(tmp_path / "r.json"),
                          timeout=HANG_LIMIT_S)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report
    with SessionReader(path) as reader:
        assert reader.meta()["format"] == "execmode-session"
    with open_session(path) as s:
        assert s.count("op_events") >= 1000
        assert s.count("kernels") >= 10
        return s.status


def assert_refused(path, tmp_path, problem, commands=("report", "open"), report="r.html"):
    for command in commands:
        args = ["report", str(path), "-o", str(tmp_path / report)] \
            if command == "report" else ["open", str(path)]
        result = run_execmode(*args, timeout=HANG_LIMIT_S)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert str(path) in result.stderr and problem in result.stderr, (command, result.stderr)
        assert "Traceback" not in result.stderr
        assert not (tmp_path / report).exists()


# --- intact sessions a killed writer left behind --------------------------------------


def test_a_session_whose_writer_was_killed_opens(recorded, tmp_path):
    path = copy_session(recorded["kill"], tmp_path, shm=True)
    assert assert_readable(path, tmp_path) == "interrupted"


def test_sigkill_of_the_script_inside_profile_loses_at_most_100_ms_of_ops(tmp_path):
    """The writer commits every 50 ms; what it committed survives the process. Op start
    times and the test's clock are both CLOCK_MONOTONIC (time.perf_counter_ns on Linux)."""
    proc, pid, session = start_cli(tmp_path, "profile")
    time.sleep(0.5)  # a run of ops (one per ~1 ms) that spans many 50 ms commits
    killed_at = time.perf_counter_ns()
    os.kill(pid, signal.SIGKILL)
    assert wait_gone(pid, 10)
    assert proc.wait(30) == 128 + signal.SIGKILL  # the script's status, as a shell gives it
    with open_session(session) as s:
        assert s.status == "interrupted"
        last = max(op.start_ns for op in s.ops())
        assert s.count("op_events") >= 20
    lost_ms = (killed_at - last) / 1e6
    assert lost_ms <= 100, f"the last recorded op started {lost_ms:.0f} ms before the kill"
    assert_readable_report(session, tmp_path)


def assert_readable_report(session, tmp_path):
    result = run_execmode("report", str(session), "-o", str(tmp_path / "after.html"),
                          timeout=HANG_LIMIT_S)
    assert result.returncode == 0, result.stderr


def test_a_killed_session_without_its_shm_index_opens(recorded, tmp_path):
    path = copy_session(recorded["kill"], tmp_path, shm=False)
    assert assert_readable(path, tmp_path) == "interrupted"


def test_a_writer_killed_during_a_checkpoint_leaves_an_intact_session(recorded, tmp_path):
    """A checkpoint copies pages from the WAL into the file in page order: page 1 (the header,
    with the new page count) first. Killed then, the file is shorter than its header says,
    yet every page is still in the WAL. The old byte-level check called it truncated."""
    path = copy_session(recorded["kill"], tmp_path)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    assert os.path.getsize(path) < pages * page_size
    with open(path, "r+b") as f:
        header = bytearray(f.read(100))
        header[28:32] = pages.to_bytes(4, "big")   # the page count the checkpoint wrote
        header[92:96] = header[24:28]              # valid for this change counter
        f.seek(0)
        f.write(header)
    assert_readable(path, tmp_path)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="needs root and unshare to mount a read-only folder")
def test_a_killed_session_in_a_read_only_folder_opens(recorded, tmp_path):
    """SQLite must create the -shm index to read a WAL; in a read-only folder it cannot,
    so the reader works on a private copy."""
    folder = tmp_path / "readonly"
    folder.mkdir()
    path = copy_session(recorded["kill"], folder)
    code = (f"mount --bind {folder} {folder} && mount -o remount,ro,bind {folder} {folder} "
            f"&& {sys.executable} -m execmode report {path} -o {tmp_path / 'r.json'}")
    result = subprocess.run(["unshare", "-m", "sh", "-c", code], capture_output=True,
                            text=True, timeout=HANG_LIMIT_S, env=dict(os.environ))
    if "mount:" in result.stderr and result.returncode != 0:
        pytest.skip(f"cannot mount here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "r.json").read_text())
    assert not os.path.exists(f"{path}-shm")


def test_a_truncated_session_without_a_wal_is_named_truncated(recorded, tmp_path):
    path = copy_session(recorded["close"], tmp_path)
    assert assert_readable(path, tmp_path) == "finished"
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    assert_refused(path, tmp_path, "the session file is truncated")


# --- not session files ------------------------------------------------------------------


def test_an_empty_file(tmp_path):
    path = tmp_path / "empty.emsession"
    path.write_bytes(b"")
    assert_refused(path, tmp_path, "the file is empty")


def test_a_folder(tmp_path):
    path = tmp_path / "folder.emsession"
    path.mkdir()
    assert_refused(path, tmp_path, "is a folder")


def test_a_fifo_does_not_hang(tmp_path):
    path = tmp_path / "pipe.emsession"
    os.mkfifo(path)
    assert_refused(path, tmp_path, "is a FIFO")


def test_a_socket(tmp_path):
    path = tmp_path / "sock.emsession"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        assert_refused(path, tmp_path, "is a socket")


def test_a_text_file(tmp_path):
    path = tmp_path / "notes.emsession"
    path.write_text("not a database\n" * 20)
    assert_refused(path, tmp_path, "not an SQLite database")


def test_a_foreign_sqlite_database(tmp_path):
    path = tmp_path / "foreign.emsession"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")
        conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    assert_refused(path, tmp_path, "an SQLite database, but not an execmode session")


def test_garbage_after_a_valid_header(recorded, tmp_path):
    path = copy_session(recorded["close"], tmp_path)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(4096)
        f.write(os.urandom(size - 4096))
    assert_refused(path, tmp_path, "damaged")


# --- sessions with values execmode never writes -------------------------------------------


def spoiled(recorded, tmp_path, sql, params=()):
    path = copy_session(recorded["close"], tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute(sql, params)
    conn.close()
    return path


@pytest.mark.parametrize("sql, params, problem", [
    ("UPDATE meta SET value = '99' WHERE key = 'schema_version'", (),
     "newer execmode (session schema version 99; this execmode reads versions up to 3)"),
    ("UPDATE meta SET value = '\"one\"' WHERE key = 'schema_version'", (),
     "unreadable schema_version"),
    ("UPDATE meta SET value = '{\"kind\": ' WHERE key = 'exit'", (),
     "meta 'exit' is not valid JSON"),
    ("UPDATE meta SET value = '5' WHERE key = 'exit'", (),
     "meta 'exit' should be a JSON object, found '5'"),
    ("UPDATE meta SET value = '\"x\"' WHERE key = 't0_ns'", (),
     "meta 't0_ns' should be a JSON integer"),
])
def test_bad_meta_is_refused_by_report_and_open(recorded, tmp_path, sql, params, problem):
    assert_refused(spoiled(recorded, tmp_path, sql, params), tmp_path, problem)


@pytest.mark.parametrize("sql, problem", [
    ("UPDATE events SET data = '{not json' WHERE id = 3", "events row 3: data is not a JSON"
     " object"),
    ("UPDATE kernels SET member_ops = '[\"tanh\"' WHERE id = 2",
     "kernels row 2: member_ops is not a JSON array"),
    ("UPDATE kernels SET member_nodes = '{}' WHERE id = 1",
     "kernels row 1: member_nodes is not a JSON array"),
])
@pytest.mark.parametrize("report", ["r.json", "r.trace.json"])
def test_bad_rows_are_refused_by_reports_that_read_them(recorded, tmp_path, sql, problem,
                                                         report):
    """The full JSON export and the Chrome trace read every row (an HTML summary may not
    read the damaged one, and is then right to succeed)."""
    path = spoiled(recorded, tmp_path, sql)
    assert_refused(path, tmp_path, problem, commands=("report",), report=report)


def test_a_column_of_the_wrong_type_is_refused_by_the_chrome_trace(recorded, tmp_path):
    path = spoiled(recorded, tmp_path, "UPDATE op_events SET start_ns = 'soon' WHERE seq = 7")
    assert_refused(path, tmp_path, "holds values this execmode cannot read (TypeError",
                   commands=("report",), report="r.trace.json")


def test_the_tui_shows_a_damaged_kernel_row_as_stored(recorded, tmp_path):
    """The TUI browses what it can: a bad row is shown as stored, the rest as usual."""
    from execmode.tui import formatting as fmt

    path = spoiled(recorded, tmp_path, "UPDATE kernels SET member_ops = '5' WHERE id = 1")
    with SessionReader(path) as reader:
        reader.meta()
        index = reader.snapshot().kernels
        rows = reader.page("kernels", index, 0, 3)
    assert fmt.op_names(rows[0].member_ops) == "5"
    assert fmt.op_names(rows[1].member_ops).split()[-1] == "add"
    assert fmt.op_names("[\"tanh\"") == "[\"tanh\""


def test_the_tui_reader_refuses_bad_meta(recorded, tmp_path):
    path = spoiled(recorded, tmp_path, "UPDATE meta SET value = 'nope' WHERE key = 'pyspy'")
    with pytest.raises(SessionUnreadable, match="meta 'pyspy' is not valid JSON"):
        with SessionReader(path) as reader:
            reader.meta()
