"""`-o` into a missing folder is refused, as py-spy's and memray's `-o` refuse it: a usage
error (exit 2) naming the folder, no folder created, and for `profile` before the script
runs. The in-code export refuses it the same way."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from execmode.profilers.api import profile
from execmode.profilers.errors import SessionError

import execmode as em

# Slow tier: CLI verbs run as subprocesses.
pytestmark = pytest.mark.slow


def execmode(*args, cwd):
    return subprocess.run([sys.executable, "-m", "execmode", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def session(tmp_path):
    path = tmp_path / "s.emsession"
    with profile(path, calibrate=False):
        em.sum(em.ones(4) * 2)
    return path


def test_report_into_a_missing_folder_is_a_usage_error(tmp_path, session):
    done = execmode("report", session, "-o", "some/missing/dir/x.html", cwd=tmp_path)
    assert done.returncode == 2
    assert ("some/missing/dir/x.html: the folder some/missing/dir does not exist; create it "
            "first (mkdir -p some/missing/dir)") in done.stderr
    assert not (tmp_path / "some").exists()
    (tmp_path / "there").mkdir()
    done = execmode("report", session, "-o", "there/x.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "there" / "x.html").is_file()


def test_profile_refuses_before_running_the_script(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("open('ran', 'w').close()\n")
    done = execmode("profile", "-o", "missing/x.md", script, cwd=tmp_path)
    assert done.returncode == 2 and "the folder missing does not exist" in done.stderr
    assert not (tmp_path / "ran").exists() and not (tmp_path / "missing").exists()


def test_a_file_where_the_folder_should_be(tmp_path, session):
    (tmp_path / "afile").write_text("")
    done = execmode("report", session, "-o", "afile/x.csv", cwd=tmp_path)
    assert done.returncode == 2 and "afile is a file, not a folder" in done.stderr


def test_the_api_export_refuses_too(tmp_path, session):
    with profile(tmp_path / "p.emsession", calibrate=False) as prof:
        em.sum(em.ones(4))
        with pytest.raises(SessionError, match="does not exist; create it first"):
            prof.export(tmp_path / "no" / "x.html")
    assert not (tmp_path / "no").exists()


def test_report_without_a_session_exports_the_latest(tmp_path, session):
    folder = tmp_path / "sessions"
    folder.mkdir()
    session.rename(folder / "a.emsession")
    env = dict(os.environ, EXECMODE_SESSION_DIR=str(folder))
    done = subprocess.run([sys.executable, "-m", "execmode", "report", "-o", "r.md"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"the latest session, {folder / 'a.emsession'}" in done.stderr
    assert (tmp_path / "r.md").is_file()
    empty = dict(env, EXECMODE_SESSION_DIR=str(tmp_path / "none"))
    done = subprocess.run([sys.executable, "-m", "execmode", "report"], cwd=tmp_path,
                          env=empty, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no sessions in" in done.stderr


@pytest.mark.parametrize("verb", ["profile", "run", "tui"])
def test_a_session_into_a_missing_folder_is_a_usage_error(verb, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("print('ran')\n")
    done = subprocess.run([sys.executable, "-m", "execmode", verb, "--session",
                           "missing/dir/s.emsession", str(script)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "the folder missing/dir does not exist; create it first (mkdir -p missing/dir)" \
        in done.stderr
    assert "ran" not in done.stdout  # refused before the script runs
    assert not (tmp_path / "missing").exists()
