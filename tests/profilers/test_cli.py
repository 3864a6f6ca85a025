"""`execmode profile` and `execmode report` end to end, in child processes."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from execmode.profilers.session import open_session
from profiler_fixtures import SCRIPTS, run_python, write_fixed_session

# Slow tier: the profiler's CLI in subprocesses.
pytestmark = pytest.mark.slow


def execmode(*args, cwd=None, **kwargs):
    return run_python("-m", "execmode", *args, cwd=cwd, **kwargs)


def _no_internal_traceback(result):
    assert "Traceback" not in result.stderr, result.stderr


def test_profile_writes_session_report_and_summary(tmp_path, monkeypatch):
    monkeypatch.setenv("EXECMODE_SESSION_DIR", str(tmp_path / "sessions"))
    result = execmode("profile", "-o", "mlp.html", SCRIPTS / "tiny_mlp.py", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "step 1 loss" in result.stdout  # the script's own output
    assert "Top eager ops by total time" in result.stdout and "matmul" in result.stdout
    assert "session file" in result.stdout
    html = (tmp_path / "mlp.html").read_text()
    assert "tiny_mlp.py" in html and "<svg" in html
    (session,) = (tmp_path / "sessions").glob("tiny_mlp-*.emsession")
    assert f"session saved to {session}" in result.stderr
    with open_session(session) as s:
        assert s.meta["exit"]["kind"] == "normal" and s.meta["argv"][1:] == ["2"]
        assert s.count("op_events") > 20 and "calibration" in s.meta
        assert s.output()[0].text.startswith("step 0 loss")


def test_profile_chrome_format_and_explicit_session(tmp_path):
    session = tmp_path / "runs" / "a.emsession"
    session.parent.mkdir()  # --session does not create folders (as -o)
    result = execmode("profile", "--session", session, "--format", "chrome", "--summaries",
                      SCRIPTS / "tiny_mlp.py", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    trace = json.loads((tmp_path / "runs" / "a.trace.json").read_text())
    assert any(ev.get("cat") == "op" for ev in trace["traceEvents"])
    with open_session(session) as s:
        assert all(o.v_nan is not None for o in s.ops())


def test_options_before_the_script_and_its_arguments_after_it(tmp_path):
    # Ours come before the script; everything after it is the script's, even spellings of
    # our options and a `--` (tests/cli/test_passthrough.py covers every verb).
    result = execmode("profile", "-o", "before.md", "--top", "3", SCRIPTS / "exits.py", "ok",
                      "-o", "after.md", "--", "x", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "argv ['ok', '-o', 'after.md', '--', 'x']" in result.stdout
    assert (tmp_path / "before.md").exists() and not (tmp_path / "after.md").exists()
    result = execmode("profile", "--top", "zero", SCRIPTS / "exits.py", cwd=tmp_path)
    assert result.returncode == 2 and "positive integer" in result.stderr


def test_the_scripts_exit_status_is_returned(tmp_path):
    result = execmode("profile", "-o", "r.md", SCRIPTS / "exits.py", "exit", "7", cwd=tmp_path)
    assert result.returncode == 7
    assert "status 7" in result.stderr and (tmp_path / "r.md").exists()


def test_a_script_that_raises(tmp_path):
    result = execmode("profile", "-o", "r.html", SCRIPTS / "exits.py", "raise", cwd=tmp_path)
    assert result.returncode == 1
    # The script's own traceback, as Python prints it, and none of execmode's frames.
    assert "ValueError: bad value 3.0" in result.stderr
    assert "exits.py" in result.stderr
    assert "execmode/" not in result.stderr and "runpy" not in result.stderr
    assert "raised ValueError: bad value 3.0" in result.stdout  # the summary's status
    assert "ValueError: bad value 3.0" in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize("args, message", [
    (["profile", "missing.py"], "no such script"),
    (["profile", "-o", "r.pdf", str(SCRIPTS / "exits.py")], "cannot tell the report format"),
    (["profile", "--rate", "0", str(SCRIPTS / "exits.py")], "positive integer"),
    (["profile", "--format", "pdf", str(SCRIPTS / "exits.py")], "invalid choice"),
    (["report", "x.emsession", "-o", "r.doc"], "cannot tell the report format"),
    (["frobnicate"], "invalid choice"),
    ([], "usage"),
    (["profile"], "the script to run is missing"),
])
def test_usage_errors_exit_2(tmp_path, monkeypatch, args, message):
    monkeypatch.setenv("EXECMODE_SESSION_DIR", str(tmp_path / "sessions"))
    result = execmode(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    _no_internal_traceback(result)
    assert not (tmp_path / "sessions").exists()


def test_report_from_a_session(tmp_path):
    session = write_fixed_session(tmp_path / "fixed.emsession")
    result = execmode("report", session, "--format", "speedscope", "--summary")
    assert result.returncode == 0, result.stderr
    doc = json.loads((tmp_path / "fixed.speedscope.json").read_text())
    assert doc["profiles"][0]["type"] == "evented"
    assert "Eager vs graph" in result.stdout
    result = execmode("report", session, "-o", tmp_path / "ops.csv", "--table", "op_totals")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ops.csv").read_text().startswith("op,calls,total_ns")


def _newer(path):
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("spoil, message", [
    (lambda p: p.unlink(), "no such session file"),
    (lambda p: p.write_bytes(p.read_bytes()[:3000]), "truncated"),
    (lambda p: p.write_text("not a database at all"), "not an SQLite database"),
    (_newer, "newer execmode (session schema version 99"),
])
def test_report_on_bad_session_files(tmp_path, spoil, message):
    path = tmp_path / "bad.emsession"
    shutil.copy(write_fixed_session(tmp_path / "good.emsession"), path)
    spoil(path)
    result = execmode("report", path, "-o", tmp_path / "r.html")
    assert result.returncode == 2
    assert message in result.stderr and str(path) in result.stderr
    _no_internal_traceback(result)
    assert not (tmp_path / "r.html").exists()
