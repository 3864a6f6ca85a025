"""A session's end (profilers/session_end.py): built from how the runner saw the script
end, read back from meta (``end``, an older ``exit``, or nothing), written by the starter
of a script that died, and shown by every exporter. In-process and real files; the runs
with real child processes are tests/cli/test_session_status.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from execmode.profilers import session_end, store
from execmode.profilers.api import profile
from execmode.profilers.exporters import FORMATS, export, suffix_for
from execmode.profilers.session import open_session
from execmode.profilers.session_end import BY_STARTER, SessionEnd, from_meta

import execmode as em
from execmode.lifeline import Terminated
from execmode.script_runner import ScriptExit

HUNT = {"text": "%3 = log produced the first NaN/Inf at train.py:35", "found_op_by_op": True,
        "origin": {"node": 3, "op": "log", "location": {"filename": "/w/train.py",
                                                        "lineno": 35,
                                                        "function": "loss"}}}
PAUSE_AT = {"filename": "/w/train.py", "lineno": 48, "function": "<module>"}


def error_exit(exc: BaseException, kind="exception", code=1) -> ScriptExit:
    return ScriptExit(kind, code, exception=f"{type(exc).__name__}: {exc}",
                      file="/w/train.py", line=12, error=exc)


# --- from how the runner saw the end ---------------------------------------------------------
@pytest.mark.parametrize("result, kind, text", [
    (ScriptExit("normal", 0), "finished", "finished"),
    (ScriptExit("exit", 0), "finished", "finished"),
    (ScriptExit("exit", 3, file="/w/train.py", line=9), "exited",
     "exited with sys.exit(3) at train.py:9"),
    (error_exit(ValueError("bad value 3.0")), "raised", "raised ValueError at train.py:12"),
    (error_exit(KeyboardInterrupt(), "interrupted", 130), "interrupted",
     "interrupted (Ctrl-C) at train.py:12"),
    (ScriptExit("terminated", 143, exception="the script was stopped by SIGTERM",
                file="/w/train.py", line=7,
                error=Terminated("the script was stopped by SIGTERM", signal.SIGTERM)),
     "killed", "killed by SIGTERM at train.py:7"),
    (ScriptExit("terminated", 143, exception="the execmode process that started the script "
                "is gone", error=Terminated("gone", parent_gone=True)),
     "killed", "killed: the execmode process that started the script is gone"),
    (ScriptExit("quit", 130, file="/w/train.py", line=20), "stopped",
     "stopped in the debugger (while running) at train.py:20"),
])
def test_an_end_from_the_runners_report(result, kind, text):
    end = session_end.from_script_exit(result)
    assert (end.kind, end.text(), end.code, end.closed_by) == \
        (kind, text, result.code, "script")


def test_an_exception_keeps_its_type_and_first_line():
    end = session_end.from_script_exit(ScriptExit(
        "exception", 1, exception="ShapeError: matmul(f32[3,4], f32[5,6])\n  at x.py:8 in f",
        file="/w/x.py", line=8, error=em.errors.ShapeError("matmul")))
    assert (end.error, end.message) == ("ShapeError", "ShapeError: matmul(f32[3,4], f32[5,6])")


def test_quit_at_a_nan_breakpoint_keeps_the_breakpoint_and_the_hunts_origin():
    held = session_end.stop_record("breakpoint 1: nan", "after",
                                   breakpoint={"id": 1, "spec": "nan", "hits": 1},
                                   kernel="k7", location=PAUSE_AT, hunt=HUNT)
    end = session_end.from_script_exit(ScriptExit("quit", 130), held)
    assert end.kind == "breakpoint" and end.breakpoint == {"id": 1, "spec": "nan"}
    assert (end.file, end.line, end.at) == ("/w/train.py", 48, "after kernel k7")
    assert end.evidence == {"text": HUNT["text"], "op": "log", "node": 3,
                            "file": "/w/train.py", "line": 35, "function": "loss"}
    assert end.text() == ("stopped at breakpoint 1 (nan) after kernel k7 at train.py:48; "
                          "origin: log at train.py:35")
    assert any("(/w/train.py:35 in loss)" in d for d in end.details())


def test_an_origin_that_is_a_pass_or_a_kernel_is_said_in_words():
    hunt = {"text": "op by op the segment stays finite ...: the generated kernel k2 (c) "
                    "introduced the NaN/Inf", "origin": None, "introduced_by_kernel": "k2"}
    held = session_end.stop_record("breakpoint 2: inf", "after", breakpoint={"id": 2,
                                   "spec": "inf"}, kernel="k2", location=PAUSE_AT, hunt=hunt)
    end = session_end.from_script_exit(ScriptExit("quit", 130), held)
    assert end.evidence["kernel"] == "k2"
    assert end.text().endswith("; origin: " + hunt["text"])


def test_quit_while_paused_elsewhere_is_stopped_with_the_reason():
    held = session_end.stop_record("step", "before", op="matmul", location=PAUSE_AT)
    end = session_end.from_script_exit(ScriptExit("quit", 130), held)
    assert end.text() == "stopped in the debugger (paused: step) at train.py:48"
    held = session_end.stop_record("em.breakpoint()", "breakpoint",
                                   breakpoint={"id": None, "spec": "em.breakpoint()"},
                                   location=PAUSE_AT)
    end = session_end.from_script_exit(ScriptExit("quit", 130), held)
    assert end.text() == "stopped at em.breakpoint() at train.py:48"


@pytest.mark.parametrize("returncode, kind, text", [
    (-signal.SIGKILL, "killed", "killed by SIGKILL (not closed: rows up to the last flush)"),
    (-signal.SIGSEGV, "crashed", "crashed with SIGSEGV (not closed: rows up to the last flush)"),
    (7, "crashed", "crashed: ended with exit status 7 without closing the session "
                   "(os._exit(7), or the interpreter died): rows up to the last flush"),
])
def test_an_end_from_a_return_code(returncode, kind, text):
    end = session_end.from_returncode(returncode)
    assert (end.kind, end.text(), end.closed_by) == (kind, text, BY_STARTER)


# --- reading ---------------------------------------------------------------------------------
@pytest.mark.parametrize("exit_, text", [
    ({"kind": "normal", "code": 0}, "finished"),
    ({"kind": "exit", "code": 3}, "exited with sys.exit(3)"),
    ({"kind": "exception", "code": 1, "exception": "ValueError: bad", "file": "/w/t.py",
      "line": 4}, "raised ValueError at t.py:4"),
    ({"kind": "exception", "code": 1}, "raised an exception"),
    ({"kind": "terminated", "code": 143, "exception": "the script was stopped by SIGTERM"},
     "killed by SIGTERM"),
    ({"kind": "quit", "code": 130}, "stopped in the debugger (the file does not say where)"),
    ({"kind": "killed", "code": 137, "signal": "SIGKILL", "closed_by": BY_STARTER},
     "killed by SIGKILL (not closed: rows up to the last flush)"),
    ({"kind": "vanished", "code": 7, "closed_by": BY_STARTER},
     "crashed: ended with exit status 7 without closing the session (os._exit(7), or the "
     "interpreter died): rows up to the last flush"),
    ({"kind": "martian"}, "unknown: an exit this execmode does not know: 'martian'"),
])
def test_older_files_read_through_their_exit(exit_, text):
    assert from_meta({"exit": exit_, "end_ns": 5}).text() == text


def test_a_missing_end_is_never_finished():
    dead = {"writer": {"pid": _dead_pid(), "host": os.uname().nodename}}
    assert from_meta(dead).kind == "unknown"
    assert "without closing" in from_meta(dead).text()
    assert from_meta({"end_ns": 5}).kind == "unknown"  # closed, but nobody said how
    assert from_meta({}).kind == "unknown"
    alive = {"writer": {"pid": os.getpid(), "host": os.uname().nodename}}
    assert from_meta(alive).kind == "recording"


def test_end_wins_over_exit_and_bad_fields_are_dropped():
    meta = {"exit": {"kind": "quit", "code": 130},
            "end": {"kind": "breakpoint", "code": "130", "line": True, "breakpoint": [1],
                    "file": "/w/t.py"}}
    end = from_meta(meta)
    assert end == SessionEnd("breakpoint", file="/w/t.py")
    assert from_meta({"end": {"kind": "teleported"}}).kind == "unknown"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# --- writing into a real file ----------------------------------------------------------------
def test_the_starter_writes_the_end_of_a_session_left_open(tmp_path):
    path = store.create(tmp_path / "s.emsession", {"script": "/w/t.py"})
    written = session_end.record_unclosed(path, -signal.SIGKILL)
    assert written.kind == "killed"
    with open_session(path) as s:
        assert s.end == written and s.status == "interrupted"
        assert s.meta["exit"] == {"kind": "killed", "code": 137, "signal": "SIGKILL",
                                  "closed_by": BY_STARTER}  # as older readers know it
    assert session_end.record_unclosed(path, -signal.SIGSEGV) is None  # said once


def test_the_starter_leaves_a_closed_session_alone(tmp_path):
    path = tmp_path / "s.emsession"
    with profile(path, calibrate=False):
        em.sum(em.ones(3))
    assert session_end.record_unclosed(path, 7) is None
    with open_session(path) as s:
        assert s.end.kind == "finished"


def test_em_profile_stores_the_exception_that_left_the_block(tmp_path):
    path = tmp_path / "s.emsession"
    with pytest.raises(ValueError), profile(path, calibrate=False):
        em.sum(em.ones(3))
        raise ValueError("not this way")  # RAISES HERE
    line = next(i for i, text in enumerate(open(__file__), 1) if "# RAISES HERE" in text)
    with open_session(path) as s:
        end = s.end
    assert (end.kind, end.error, end.message) == ("raised", "ValueError",
                                                  "ValueError: not this way")
    assert (end.file, end.line) == (__file__, line)


def test_an_op_error_is_placed_at_the_users_line_not_inside_execmode(tmp_path):
    path = tmp_path / "s.emsession"
    with pytest.raises(em.errors.ShapeError), profile(path, calibrate=False):
        em.ones((3, 4)) @ em.ones((5, 6))  # MATMUL HERE
    with open_session(path) as s:
        end = s.end
    line = next(i for i, text in enumerate(open(__file__), 1) if "# MATMUL HERE" in text)
    assert (end.error, end.file, end.line) == ("ShapeError", __file__, line)


# --- every exporter shows it ------------------------------------------------------------------
def test_every_export_shows_the_end(tmp_path):
    held = session_end.stop_record("breakpoint 1: nan", "after", breakpoint={"id": 1,
                                   "spec": "nan"}, kernel="k7", location=PAUSE_AT, hunt=HUNT)
    end = session_end.from_script_exit(ScriptExit("quit", 130), held)
    path = store.create(tmp_path / "s.emsession", {
        "script": "/w/train.py", "argv": ["train.py"], "t0_ns": 0, "end_ns": 1000,
        "end": end.to_json(), "exit": {"kind": "quit", "code": 130}})
    words = end.text()
    for fmt in FORMATS:
        options = {"table": "session"} if fmt == "csv" else {}
        out = export(path, tmp_path / f"r{suffix_for(fmt)}", fmt, **options)
        assert words in out.read_text(), fmt
    trace = json.loads((tmp_path / "r.trace.json").read_text())
    (mark,) = [e for e in trace["traceEvents"] if e.get("cat") == "end"]
    assert mark["ph"] == "i" and mark["ts"] == 1.0 and mark["args"]["kind"] == "breakpoint"
