"""Text is data, never markup: what a script prints, prompts and names, and what a person
types into every field, is shown as it is; the UI never crashes on ``[/``.

And when the UI does crash, ``execmode tui`` says so and exits non-zero (a real child).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from execmode.tui.screens.stdin_dialog import StdinDialog
from execmode.tui.widgets.search_bar import SearchBar
from tui_support import SCRIPTS, Waiter, press_view, run_async, script_app, settle

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow

# Each of these crashed Rich's markup parser somewhere before (issue 34).
NASTY = ("[/x]", "[bold]", "[/", "[", "a[/b]c", "[red]x[/red]", "\\[/x]")


async def type_into(pilot, text: str) -> None:
    await pilot.press(*[c if c.isalnum() else _key(c) for c in text], "enter")
    await settle(pilot)


def _key(c: str) -> str:
    return {"[": "left_square_bracket", "]": "right_square_bracket", "/": "slash",
            " ": "space", "\\": "backslash", '"': "quotation_mark", "=": "equals_sign",
            ":": "colon"}.get(c, c)


@run_async
async def test_markup_from_the_script_and_the_person_is_shown_as_it_is(tmp_path):
    app = script_app("markup_text.py", tmp_path, start_paused=False, breakpoints=["nan"])
    async with app.run_test(size=(80, 24)) as pilot:
        wait = Waiter(pilot, (app, "stdin_prompt"))
        await wait.until(lambda: isinstance(app.screen, StdinDialog), what="the input line")
        field = app.screen.query_one("#stdin-input")
        assert field._border_title.plain == "[/b] who? [bold]"
        await type_into(pilot, "[/x] me")
        await wait.paused()
        assert ("stdout", "[/x] [bold]not bold[/bold] [/") in app.output_lines
        assert ("stderr", "[red]stderr[/] [/") in app.output_lines

        # The Tensor view: the slice box (/) and the ref box (:), with markup typed in.
        screen = await press_view(pilot, "2")
        await settle(pilot)
        for text in NASTY:
            await pilot.press("slash")
            await type_into(pilot, text)
            assert text in screen.query_one("#slice-box")._border_title.plain
            await pilot.press("colon")
            await type_into(pilot, text)
            assert text in screen.query_one("#tensor-stats")._border_title.plain
            await pilot.press("escape")

        # The Ops view's search (/): the query is named in the list's title.
        screen = await press_view(pilot, "1")
        for text in NASTY:
            await pilot.press("slash")
            assert isinstance(app.focused, SearchBar)
            await type_into(pilot, text)
        # The breakpoint dialog (B): a condition with markup is refused or set, as text.
        await pilot.press("B")
        await settle(pilot)
        await type_into(pilot, 'op == "[/x]"')
        await pilot.press("escape")
        await settle(pilot)
        screen = await press_view(pilot, "8")
        await settle(pilot)
        # Every other view draws the script's scope, names and output.
        for key in "345679":
            await press_view(pilot, key)
            await settle(pilot)
        # The uncaught exception stops the script (its message has markup) and ends it.
        await wait.step("c")
        assert app.run_state.paused.when == "exception"
        for key in "129":
            await press_view(pilot, key)
            await settle(pilot)
        await wait.step("c")
        await settle(pilot)
        assert "ValueError: [/v] bad [bold]" in app.run_state.exit.traceback
        print(app.output_lines)
        await pilot.pause()
        assert app.is_running  # alive: nothing above crashed it


def test_a_crash_of_the_ui_exits_non_zero_and_says_where_the_report_is(tmp_path):
    """A real child process under a pseudo-terminal: the UI raises at mount (a test hook
    replaces the Ops view's mount), and the command exits 1 with one line naming it."""
    hook = tmp_path / "sitecustomize.py"
    hook.write_text(
        "import sys\n"
        "if sys.argv[1:2] == ['tui']:\n"
        "    from execmode.tui.screens import ops\n"
        "    def _boom(self):\n"
        "        raise RuntimeError('planted UI crash [/x]')\n"
        "    ops.OpsScreen.on_mount = _boom\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path),
                                                       os.environ.get("PYTHONPATH", "")]),
               EXECMODE_SESSION_DIR=str(tmp_path / "sessions"), TERM="xterm-256color")
    code = ("import os, pty, sys\n"
            "pid, fd = pty.fork()\n"
            "if pid == 0:\n"
            "    os.execvp(sys.executable, [sys.executable, '-m', 'execmode', 'tui', "
            f"{str(SCRIPTS / 'three_ops.py')!r}])\n"
            "out = b''\n"
            "while True:\n"
            "    try:\n"
            "        chunk = os.read(fd, 65536)\n"
            "    except OSError:\n"
            "        break\n"
            "    if not chunk:\n"
            "        break\n"
            "    out += chunk\n"
            "_, status = os.waitpid(pid, 0)\n"
            "sys.stdout.buffer.write(out)\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          timeout=120)
    out = done.stdout.decode("utf-8", "replace")
    assert done.returncode == 1, out[-2000:]
    assert "the TUI crashed (RuntimeError: planted UI crash [/x])" in out
    report = out.split("the crash report is ", 1)[1].split(";", 1)[0].strip()
    assert "planted UI crash" in open(report, encoding="utf-8").read()
