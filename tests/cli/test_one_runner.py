"""`execmode run`, `profile` and `explain` run a script as `python script.py` does, through
one runner (execmode/script_runner.py): the same sys.argv, sys.path[0] and exit status,
and a failure printed the same way."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# Slow tier: CLI verbs run as subprocesses.
pytestmark = pytest.mark.slow

SCRIPT = '''
import os, sys
import execmode as em
print("argv", sys.argv[1:])
print("path0", sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
print("cwd on path", os.getcwd() in sys.path)
print("sum", em.ones(3).sum().item())
sys.exit(int(sys.argv[1]))
'''
FAILS = '''
import execmode as em
x = em.ones(2)
y = em.ones(3)
print(x @ y)
'''


def _run(argv, cwd):
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd,
                          timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture
def folders(tmp_path):
    """The script in its own folder, run from another: sys.path[0] must be the script's."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "work").mkdir()
    return tmp_path / "scripts", tmp_path / "work"


@pytest.mark.parametrize("code", ["3", "-1"])
def test_argv_path_and_exit_status_are_pythons(folders, code):
    scripts, work = folders
    script = scripts / "show.py"
    script.write_text(SCRIPT)
    plain = _run([str(script), code, "--flag"], work)
    assert plain.returncode == int(code) & 0xFF
    for verb in (["run", "--no-session"], ["profile", "--session", "p.emsession"],
                 ["explain"]):
        done = _run(["-m", "execmode", *verb, str(script), code, "--flag"], work)
        assert done.returncode == plain.returncode, (verb, done.stderr)
        # The script's lines come first (profile prints its report after them).
        lines = done.stdout.splitlines()[:len(plain.stdout.splitlines())]
        assert lines == plain.stdout.splitlines(), verb


def test_a_failure_reads_the_same_under_every_verb(folders):
    scripts, work = folders
    script = scripts / "fails.py"
    script.write_text(FAILS)
    plain = _run([str(script)], work)
    assert plain.returncode == 1
    want = plain.stderr[plain.stderr.index("Traceback"):].splitlines()
    for verb in (["run", "--no-session"], ["profile", "--session", "p.emsession"]):
        done = _run(["-m", "execmode", *verb, str(script)], work)
        assert done.returncode == 1, (verb, done.stderr)
        got = done.stderr[done.stderr.index("Traceback"):].splitlines()
        # Python's own lines, then the error: no runner, runpy or agent frame in between.
        assert got[:len(want)] == want, verb
        os.remove(work / "p.emsession") if (work / "p.emsession").exists() else None
