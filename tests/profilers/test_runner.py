"""Running scripts as __main__: argv, sys.path, cwd, exit statuses, tracebacks, output."""

from __future__ import annotations

import os
import sys

import pytest
from execmode.profilers.runner import ScriptNotFound, record_script, run_script
from execmode.profilers.session import open_session
from profiler_fixtures import SCRIPTS

from execmode import instrument


@pytest.fixture
def probe(tmp_path):
    script = tmp_path / "probe_script.py"
    script.write_text(
        "import os, sys\n"
        "RESULT = {'argv': list(sys.argv), 'path0': sys.path[0], 'cwd': os.getcwd(),\n"
        "          'name': __name__, 'file': __file__}\n"
        "if __name__ == '__main__':\n"
        "    sys.modules['builtins']._execmode_probe = RESULT\n")
    yield script
    import builtins

    builtins.__dict__.pop("_execmode_probe", None)


def test_runs_as_main_with_its_own_argv_and_path(probe, tmp_path):
    import builtins

    saved_argv, saved_path0, cwd = list(sys.argv), sys.path[0], os.getcwd()
    result = run_script(probe, ["--lr", "0.1"])
    assert (result.kind, result.code) == ("normal", 0)
    seen = builtins._execmode_probe
    assert seen["name"] == "__main__"
    assert seen["argv"] == [str(probe), "--lr", "0.1"]
    assert seen["path0"] == str(tmp_path) and seen["file"] == str(probe)
    assert seen["cwd"] == cwd  # the working directory is the caller's, as with python
    assert sys.argv == saved_argv and sys.path[0] == saved_path0  # restored


@pytest.mark.parametrize("argv, kind, code", [
    (["exit", "3"], "exit", 3),
    (["exit", "0"], "exit", 0),
    (["message"], "exit", 1),
    (["ok"], "normal", 0),
])
def test_exit_statuses(argv, kind, code, capsys):
    result = run_script(SCRIPTS / "exits.py", argv)
    assert (result.kind, result.code) == (kind, code)
    if argv == ["message"]:
        assert "stopping with a message" in capsys.readouterr().err


def test_an_exception_is_reported_with_the_scripts_traceback(capsys):
    result = run_script(SCRIPTS / "exits.py", ["raise"])
    assert (result.kind, result.code) == ("exception", 1)
    assert result.exception == "ValueError: bad value 3.0"
    assert result.file == str(SCRIPTS / "exits.py") and result.line == 10
    err = capsys.readouterr().err
    assert err == result.traceback
    assert err.startswith("Traceback (most recent call last):")
    assert 'exits.py", line 19, in <module>' in err and "in fail" in err
    assert "runner.py" not in err and "runpy" not in err  # execmode's frames left out


def test_missing_script():
    with pytest.raises(ScriptNotFound, match="no such script"):
        run_script("/nonexistent/train.py")


def test_record_script_keeps_output_and_exit(tmp_path, capsys):
    path = tmp_path / "rec.emsession"
    result = record_script(SCRIPTS / "exits.py", ["raise"], session=path, calibrate=False)
    assert result.kind == "exception"
    assert not instrument.listeners()
    out = capsys.readouterr()
    assert "argv ['raise']" in out.out  # still printed to the terminal
    with open_session(path) as s:
        assert s.meta["exit"]["exception"] == "ValueError: bad value 3.0"
        assert s.meta["argv"] == [str(SCRIPTS / "exits.py"), "raise"]
        lines = s.output()
        assert ("stdout", "argv ['raise']") in [(o.stream, o.text) for o in lines]
        assert any(o.stream == "stderr" and o.text.startswith("ValueError") for o in lines)
        assert "sum" in [o.op for o in s.ops()]


def test_nothing_is_imported_between_the_start_mark_and_the_scripts_first_line(tmp_path):
    # What the runner imports after on_start falls inside a recording's clock as the
    # script's own time (runpy.run_path imports pkgutil on its first call: ~0.3 ms, a
    # quarter of a short example's measured profiler cost, stated nowhere).
    import subprocess

    script = tmp_path / "first_line.py"
    script.write_text("import sys\nprint(' '.join(sorted(sys.modules)))\n")
    check = (
        "import sys\n"
        "from execmode.script_runner import run_script\n"
        "marks = {}\n"
        "run_script(sys.argv[1], on_start=lambda: marks.setdefault('m', set(sys.modules)))\n"
        "sys.stderr.write(' '.join(sorted(marks['m'])))\n")
    done = subprocess.run([sys.executable, "-c", check, str(script)], capture_output=True,
                          text=True, timeout=120, check=True)
    at_start, at_first_line = set(done.stderr.split()), set(done.stdout.split())
    assert at_first_line - at_start == set()
