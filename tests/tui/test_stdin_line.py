"""The input line: the script reads stdin in the TUI, the person types, the script goes on."""

from __future__ import annotations

from execmode.tui.screens.stdin_dialog import StdinDialog
from tui_support import SIZE, Waiter, run_async, script_app


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
