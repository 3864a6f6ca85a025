"""Where scripts meet the terminal: stdin, compile errors, and the TUI without a terminal."""

from __future__ import annotations

import subprocess
import sys

import pytest

from execmode.debug.controller import Controller

# Slow tier: the debug agent in a child process under a Controller.
pytestmark = pytest.mark.slow

ASK = 'name = input("name? ")\nprint("hello", name)\n'
DOES_NOT_COMPILE = "import execmode as em\nx = em.ones(3)\ny = (x +\nprint(y)\n"


def execmode(*args, cwd, stdin=subprocess.DEVNULL, input=None, timeout=120):
    if input is not None:
        stdin = None
    return subprocess.run([sys.executable, "-m", "execmode", *map(str, args)], cwd=cwd,
                          stdin=stdin, input=input, capture_output=True, text=True,
                          timeout=timeout)


def test_the_script_reads_the_stdin_of_execmode_run(tmp_path):
    (tmp_path / "ask.py").write_text(ASK)
    result = execmode("run", "--no-session", "ask.py", cwd=tmp_path, input="bob\n")
    assert result.returncode == 0, result.stderr
    assert "hello bob" in result.stdout


def test_the_tuis_controller_keeps_the_terminal_for_itself(tmp_path):
    # The TUI reads its keys from the terminal: a script under it gets /dev/null.
    (tmp_path / "ask.py").write_text(ASK)
    with Controller(str(tmp_path / "ask.py"), start_paused=False) as c:
        ev = c.wait_for("exited")
    assert ev["status"] == "exception" and "EOFError" in ev["traceback"]


@pytest.mark.parametrize("verb", ["run", "profile"])
def test_a_script_that_does_not_compile_shows_its_syntax_error_only(tmp_path, verb):
    (tmp_path / "bad.py").write_text(DOES_NOT_COMPILE)
    extra = ["--no-session"] if verb == "run" else ["--session", "p.emsession"]
    result = execmode(verb, *extra, "bad.py", cwd=tmp_path)
    assert result.returncode == 1
    err = result.stderr
    assert 'File "bad.py", line 3' in err or "bad.py\", line 3" in err
    assert "y = (x +" in err and "SyntaxError: '(' was never closed" in err
    for ours in ("runpy", "agent.py", "runner.py", "Traceback (most recent call last)"):
        assert ours not in err, err


def test_the_agents_traceback_of_a_syntax_error_is_pythons(tmp_path):
    (tmp_path / "bad.py").write_text(DOES_NOT_COMPILE)
    with Controller(str(tmp_path / "bad.py"), start_paused=False) as c:
        ev = c.wait_for("exited")
    tb = ev["traceback"]
    assert tb.startswith('  File "') and "line 3" in tb and tb.rstrip().endswith(
        "SyntaxError: '(' was never closed")


def test_a_syntax_error_in_an_imported_module_keeps_the_users_import_line(tmp_path):
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    (tmp_path / "main.py").write_text("import broken\n")
    result = execmode("run", "--no-session", "main.py", cwd=tmp_path)
    err = result.stderr
    assert 'main.py", line 1' in err and 'broken.py", line 1' in err
    assert "runpy" not in err and "agent.py" not in err


@pytest.mark.parametrize("verb", ["tui", "open"])
def test_the_tui_without_a_terminal_says_so_at_once(tmp_path, verb):
    (tmp_path / "s.py").write_text("print(1)\n")
    target = "s.py"
    if verb == "open":
        session = tmp_path / "s.emsession"
        assert execmode("run", "--session", session, "s.py", cwd=tmp_path).returncode == 0
        target = session
    # At once, not a hang: a TUI waiting for a terminal would run into the timeout, which
    # fails the test (a load-proof bound: an interpreter start takes a second or two).
    result = execmode(verb, target, cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    assert f"execmode {verb}: error: needs a terminal; use execmode run or execmode report " \
        "instead" in result.stderr


def test_has_terminal_needs_both_stdin_and_stderr(monkeypatch):
    from execmode.tui import cli

    class Stream:
        def __init__(self, fd):
            self.fd = fd

        def fileno(self):
            return self.fd

    monkeypatch.setattr(cli.os, "isatty", lambda fd: fd == 10)
    monkeypatch.setattr(cli.sys, "__stdin__", Stream(10))
    monkeypatch.setattr(cli.sys, "__stderr__", Stream(11))
    assert not cli.has_terminal()
    monkeypatch.setattr(cli.sys, "__stderr__", Stream(10))
    assert cli.has_terminal()
    monkeypatch.setattr(cli.sys, "__stdin__", None)
    assert not cli.has_terminal()


def test_stop_ends_a_script_waiting_on_the_input_lines_pipe_at_once(tmp_path):
    # Under the TUI stdin is a pipe: stop() closes it, so the blocked read ends and the
    # quit lands (not the SIGTERM fallback: the status says the debugger stopped it).
    (tmp_path / "ask.py").write_text(ASK)
    with Controller(str(tmp_path / "ask.py"), start_paused=False, stdin_pipe=True) as c:
        assert c.wait_for("input_requested")["prompt"] == "name? "
        c.stop()
        assert c.exit.status == "quit"


def test_lines_typed_ahead_are_read_without_asking_again(tmp_path):
    (tmp_path / "two.py").write_text("import execmode as em\nx = em.ones(1)\n"
                                     "a = input('a? ')\nb = input('b? ')\nprint(a + b)\n")
    seen = []
    c = Controller(str(tmp_path / "two.py"), stdin_pipe=True)
    c.listeners.append(lambda event: seen.append(event.type))
    with c:
        c.wait_for("paused")
        c.send_stdin("1\n2\n")                       # both lines before the first read
        c.cont()
        assert c.wait_for("exited")["status"] == "ok"
    assert "input_requested" not in seen
    assert [line for stream, line in c.output if stream == "stdout"] == ["a? 1", "b? 2", "12"]
