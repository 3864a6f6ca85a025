"""One session folder for every recording verb: real child processes, real session files
(profilers/session_dir.py, profilers/sessions_cli.py, `execmode open` without SESSION)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from execmode.profilers.session import open_session
from execmode.profilers.session_dir import latest_session, recent_sessions, session_dir

from execmode.cli import main

# Slow tier: CLI verbs run as subprocesses.
pytestmark = pytest.mark.slow

OPS_SCRIPT = """\
import execmode as em
x = em.ones(3)
print(float(em.sum(x + x)))
"""


def execmode(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "execmode", *map(str, args)], cwd=cwd,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    path = tmp_path / "S"
    monkeypatch.setenv("EXECMODE_SESSION_DIR", str(path))
    return path


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "three_ops.py"
    path.write_text(OPS_SCRIPT)
    return path


@pytest.mark.parametrize("verb, options", [("run", []), ("profile", ["-o", "r.md"])])
def test_each_recording_verb_saves_into_the_folder_and_says_where(tmp_path, folder, script,
                                                                  verb, options):
    result = execmode(verb, *options, script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (session,) = folder.glob("three_ops-*.emsession")
    assert result.stderr.rstrip().splitlines()[-1] == (
        f"execmode: session saved to {session} (browse it: execmode open {session})")
    with open_session(session) as s:
        assert s.count("op_events") == 3 and s.status == "finished"


@pytest.mark.parametrize("verb, options", [("run", []), ("profile", ["-o", "r.md"])])
def test_session_option_puts_one_session_elsewhere(tmp_path, folder, script, verb, options):
    chosen = tmp_path / "mine.emsession"
    result = execmode(verb, "--session", chosen, *options, script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert chosen.exists() and f"session saved to {chosen}" in result.stderr
    assert recent_sessions(folder) == []  # not in the folder itself
    # but in its index: listed, and the latest for `execmode open` / `report`
    assert recent_sessions() == [chosen] and latest_session() == chosen
    listing = execmode("sessions", cwd=tmp_path)
    assert listing.returncode == 0 and str(chosen) in listing.stdout
    chosen.unlink()  # gone: no longer listed
    assert recent_sessions() == []


def test_an_existing_session_is_replaced_only_with_force(tmp_path, folder, script):
    chosen = tmp_path / "mine.emsession"
    assert execmode("profile", "--session", chosen, "-o", "r.md", script,
                    cwd=tmp_path).returncode == 0
    with open_session(chosen) as s:
        first = s.meta["t0_ns"]
    again = execmode("run", "--session", chosen, script, cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr and "--force" in again.stderr
    forced = execmode("run", "--session", chosen, "--force", script, cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    with open_session(chosen) as s:
        assert s.count("op_events") == 3 and s.status == "finished"
        assert s.meta["t0_ns"] != first  # a new recording in its place
    notes = tmp_path / "notes.emsession"  # a file of the user's that is not a session
    notes.write_text("keep me")
    refused = execmode("profile", "--session", notes, "--force", "-o", "r.md", script,
                       cwd=tmp_path)
    assert refused.returncode == 2 and "not an execmode session" in refused.stderr
    assert notes.read_text() == "keep me"


def test_em_profile_overwrites_a_session_only_when_asked(tmp_path, folder):
    from execmode.profilers.errors import SessionError

    import execmode as em

    chosen = tmp_path / "block.emsession"
    with em.profile(chosen, calibrate=False):
        em.ones(2) + 1
    with pytest.raises(SessionError, match="overwrite=True"):
        with em.profile(chosen, calibrate=False):
            pass
    with em.profile(chosen, calibrate=False, overwrite=True) as prof:
        em.ones(2) * 3
        em.ones(2) * 3
    assert prof.session.count("op_events") == 4
    assert latest_session() == chosen


def test_run_without_a_session(tmp_path, folder, script):
    result = execmode("run", "--no-session", script, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "session saved" not in result.stderr and not folder.exists()
    result = execmode("run", "--no-session", "--session", "x.emsession", script, cwd=tmp_path)
    assert result.returncode == 2 and "contradict" in result.stderr


def test_an_unusable_folder_is_refused(tmp_path, script):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    result = execmode("profile", script, cwd=tmp_path,
                      env={"EXECMODE_SESSION_DIR": str(blocker / "sub")})
    assert result.returncode == 2
    assert f"cannot use the session folder {blocker / 'sub'} (EXECMODE_SESSION_DIR)" \
        in result.stderr
    assert "Traceback" not in result.stderr


def test_sessions_lists_newest_first_with_script_ops_size_and_status(tmp_path, folder,
                                                                     script):
    other = tmp_path / "other.py"
    other.write_text("print('no ops')\n")
    assert execmode("run", script, cwd=tmp_path).returncode == 0
    assert execmode("run", other, cwd=tmp_path).returncode == 0
    first, second = sorted(folder.glob("*.emsession"), key=lambda p: p.name.startswith("o"))
    os.utime(first, (1_000_000, 1_000_000))  # three_ops is older, other is newer
    (folder / "broken.emsession").write_text("not a session")
    os.utime(folder / "broken.emsession", (0, 0))

    result = execmode("sessions", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"sessions in {folder}, newest first"
    assert lines[1].split() == ["date", "script", "ops", "size", "path", "status"]
    rows = [line.split() for line in lines[2:]]
    assert [r[2] for r in rows] == ["other.py", "three_ops.py", "?"]
    assert [r[3] for r in rows] == ["0", "3", "-"]
    assert rows[0][-1] == rows[1][-1] == "finished" and str(second) in lines[2]
    assert "unreadable: not an execmode session" in lines[4]

    result = execmode("sessions", "-n", "1", cwd=tmp_path)
    assert "(1 of 3; -n 0 shows all)" in result.stdout and len(result.stdout.splitlines()) == 3


def test_sessions_on_an_empty_or_missing_folder(tmp_path, folder):
    result = execmode("sessions", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == f"no sessions in {folder}"
    result = execmode("sessions", "--dir", tmp_path / "nowhere", cwd=tmp_path)
    assert result.returncode == 2 and "no such folder" in result.stderr
    result = execmode("sessions", "-n", "-1", cwd=tmp_path)
    assert result.returncode == 2 and "expected 0 or more" in result.stderr


def test_open_without_a_session_takes_the_latest(tmp_path, folder, script, capsys):
    assert main(["open"]) == 2
    assert f"no sessions in {folder}" in capsys.readouterr().err
    folder.mkdir(parents=True, exist_ok=True)  # --session does not create folders
    for name in ("a", "b"):
        assert execmode("run", "--session", folder / f"{name}.emsession", script,
                        cwd=tmp_path).returncode == 0
    os.utime(folder / "b.emsession", (1_000_000, 1_000_000))
    assert session_dir() == folder and latest_session() == folder / "a.emsession"
    # A latest that is damaged is refused like a named one (exit 2), after saying which.
    (folder / "a.emsession").write_text("not a session")
    assert main(["open"]) == 2
    err = capsys.readouterr().err
    assert f"the latest session, {folder / 'a.emsession'}" in err
    assert "not an execmode session" in err
