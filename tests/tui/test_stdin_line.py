"""The input line: the script reads stdin in the TUI, the person types, the script goes on."""

from __future__ import annotations

import pytest
from execmode.tui.screens.stdin_dialog import StdinDialog
from tui_support import SIZE, Waiter, run_async, script_app, static_text

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@run_async
async def test_what_is_typed_in_the_input_line_reaches_the_scripts_stdin(tmp_path):
    app = script_app("asks.py", tmp_path, start_paused=False)
    async with app.run_test(size=(80, 24)) as pilot:
        wait = Waiter(pilot, (app, "stdin_prompt"))
        await wait.until(lambda: isinstance(app.screen, StdinDialog), what="the input line")
        assert app.screen.prompt == "name? "
        await pilot.press(*"bob", "enter")
        await wait.until(lambda: ("stdout", "hello bob 4.0") in app.output_lines,
                         what="the script's answer")
        # Echoed after its prompt, as a terminal shows it.
        assert app.output_lines[:2] == [("stdout", "name? bob"), ("stdout", "hello bob 4.0")]
        await wait.until(lambda: isinstance(app.screen, StdinDialog), what="the next read")
        await pilot.press("escape")                   # hidden; the palette brings it back
        assert not isinstance(app.screen, StdinDialog)
        app.action_stdin_line()
        await pilot.pause()
        await pilot.press(*"one", "enter")
        await wait.until(lambda: ("stdout", "got one") in app.output_lines, what="a line")
        await wait.until(lambda: isinstance(app.screen, StdinDialog), what="another read")
        await pilot.press("ctrl+d")                   # end of file: the loop ends
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        assert app.run_state.exit.status == "ok"
        assert ("stdout", "end") in app.output_lines


@run_async
async def test_the_input_line_goes_when_the_script_restarts(tmp_path):
    app = script_app("asks.py", tmp_path, start_paused=False)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot, (app, "stdin_prompt"))
        await wait.until(lambda: isinstance(app.screen, StdinDialog), what="the input line")
        await pilot.press("escape")
        await pilot.press("r")
        await wait.until(lambda: app.bridge.run == 1 and isinstance(app.screen, StdinDialog),
                         what="the new run's input line")
        await pilot.press(*"ann", "enter")
        await wait.until(lambda: ("stdout", "hello ann 4.0") in app.output_lines,
                         what="the new run's answer")


def status_under_dialog(app) -> str:
    """The status bar of the view (under the input line, a modal screen, if shown)."""
    view = app.screen_stack[-2] if isinstance(app.screen, StdinDialog) else app.screen
    return static_text(view.query_one("StatusBar"))


@run_async
async def test_the_status_bar_says_the_script_waits_for_input_until_the_line_is_sent(tmp_path):
    """Blocked in input(), the script is still 'running', but a person reading only that
    waits for ops that never come: the bar says where to type, then goes back."""
    app = script_app("asks.py", tmp_path, start_paused=False)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot, (app, "stdin_prompt"))
        await wait.until(lambda: isinstance(app.screen, StdinDialog) and
                         app.run_state.phase == "running", what="the input line")
        assert "waiting for input (Enter sends the line)" in \
            status_under_dialog(app)
        await pilot.press(*"bob", "enter")
        # Sent: back to "running", unless the script already reads its next line (it is
        # quick): the bar follows the agent's word.
        status = status_under_dialog(app)
        assert ("waiting for input" in status) == (app.stdin_prompt is not None)
        assert "running" in status or "waiting for input" in status
        await wait.until(lambda: isinstance(app.screen, StdinDialog), what="the next read")
        assert "waiting for input" in status_under_dialog(app)
        await pilot.press("escape")                    # hidden: the bar says how to get it
        assert 'waiting for input (ctrl+p "stdin")' in \
            status_under_dialog(app)
        await pilot.press("r")                         # restart: the old run's ask is gone
        status = status_under_dialog(app)
        if isinstance(app.screen, StdinDialog):        # the new run was quick to ask again
            assert app.bridge.run == 1 and "waiting for input" in status
        else:
            assert "waiting for input" not in status and "restarting" in status
        await wait.until(lambda: app.bridge.run == 1 and isinstance(app.screen, StdinDialog),
                         what="the new run's input line")
        assert "waiting for input" in status_under_dialog(app)
        await pilot.press(*"ann", "enter")
        await wait.until(lambda: isinstance(app.screen, StdinDialog), what="the next read")
        await pilot.press("ctrl+d")                    # end of file: the loop ends
        await wait.until(lambda: app.run_state.phase == "finished", what="the end")
        status = static_text(app.screen.query_one("StatusBar"))
        assert "waiting for input" not in status and "finished" in status
