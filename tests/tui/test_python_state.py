"""The Variables pane, watches and the evaluator, driven with Pilot at 80x24 as a person
would: pause, read the frame's values, step, see what changed, open objects, evaluate."""

from __future__ import annotations

import os

import pytest
from execmode.tui.screens.expression_dialog import ExpressionDialog
from execmode.tui.widgets.row_list import RowList
from tui_support import Waiter, run_async, script_app, settle, static_text

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow

SMALL = (80, 24)
# The script the agent-level tests of the same features drive (tests/debug), shared.
STATE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "debug",
                     "scripts", "python_state.py")


def pane_rows(app):
    return app.screen.query_one("#variables", RowList).source.rows


def by_name(app):
    return {r.name: r for r in pane_rows(app)}


async def paused_at_multiply(pilot):
    wait = Waiter(pilot)
    paused = await wait.paused()
    assert paused.op == "multiply"
    await settle(pilot)
    return wait


@run_async
async def test_the_paused_frames_values_and_what_changed(tmp_path):
    app = script_app(STATE, tmp_path, breakpoints=["op:multiply"],
                     start_paused=False)
    async with app.run_test(size=SMALL) as pilot:
        wait = await paused_at_multiply(pilot)
        rows = by_name(app)
        assert rows["step"].text == "0" and not rows["step"].changed
        assert rows["w"].text.startswith("f32[3]") and rows["w"].expandable
        assert rows["globals"].scope == "header" and not rows["globals"].expanded
        assert app.screen.query_one("#variables").border_title == "variables · train"

        # Open the globals, then opt: its attributes (pudb's opt.lr).
        pane = app.screen.query_one("#variables", RowList)
        pane.focus()
        pane.move_to([r.name for r in pane_rows(app)].index("globals"))
        await pilot.press("enter")
        await settle(pilot)
        pane.move_to([r.name for r in pane_rows(app)].index("opt"))
        await pilot.press("enter")
        await settle(pilot)
        rows = by_name(app)
        assert rows["lr"].text == "0.5" and rows["lr"].path == ("opt", "lr")

        await wait.step("c")
        await settle(pilot)
        rows = by_name(app)
        assert rows["step"].text == "1" and rows["step"].changed
        assert rows["lr"].text == "0.25" and rows["lr"].changed   # still open, changed
        assert rows["steps"].text == "3" and not rows["steps"].changed
        assert rows["w"].changed and "max=6" in rows["w"].text


@run_async
async def test_a_frame_of_the_stack_shows_its_own_values(tmp_path):
    app = script_app(STATE, tmp_path, breakpoints=["op:multiply"],
                     start_paused=False)
    async with app.run_test(size=SMALL) as pilot:
        await paused_at_multiply(pilot)
        stack = app.screen.query_one("#stack", RowList)
        stack.focus()
        await pilot.press("down")
        await settle(pilot)
        rows = by_name(app)
        assert "opt" in rows and "train" in rows and "step" not in rows
        assert "globals" not in rows  # at the top level the locals are the globals
        assert "(frame 1)" in app.screen.query_one("#variables").border_title


@run_async
async def test_evaluate_and_watch(tmp_path):
    app = script_app(STATE, tmp_path, breakpoints=["op:multiply"],
                     start_paused=False)
    async with app.run_test(size=SMALL) as pilot:
        wait = await paused_at_multiply(pilot)
        await pilot.press("x")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ExpressionDialog)
        for expr in ("opt.lr * 4", "undefined + 1"):
            await pilot.press(*expr)
            await pilot.press("enter")
            await settle(pilot)
        results = static_text(dialog.query_one("#expr-results"))
        assert "opt.lr * 4 = 2.0" in results
        assert "undefined + 1 = NameError: name 'undefined' is not defined" in results
        await pilot.press(*"step * 10")
        await pilot.press("ctrl+n")   # watch it
        await settle(pilot)
        assert not isinstance(app.screen, ExpressionDialog)
        first = pane_rows(app)[0]
        assert (first.scope, first.name, first.text) == ("watch", "step * 10", "0")

        await wait.step("c")
        await settle(pilot)
        first = pane_rows(app)[0]
        assert first.text == "10" and first.changed

        pane = app.screen.query_one("#variables", RowList)
        pane.focus()
        pane.move_to(0)
        await pilot.press("d")
        await settle(pilot)
        assert all(r.scope != "watch" for r in pane_rows(app))
        assert app.variables.watches == []


@run_async
async def test_the_panes_share_a_place_at_80_columns_and_not_at_120(tmp_path):
    app = script_app(STATE, tmp_path, breakpoints=["op:multiply"],
                     start_paused=False)
    async with app.run_test(size=SMALL) as pilot:
        await paused_at_multiply(pilot)
        screen = app.screen
        assert screen.query_one("#variables").display and \
            not screen.query_one("#paused-box").display
        await pilot.press("v")
        await pilot.pause()
        assert screen.query_one("#paused-box").display and \
            not screen.query_one("#variables").display
        await pilot.press("v")
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert screen.query_one("#variables").display and \
            screen.query_one("#paused-box").display
        assert screen.query_one("#variables").size.width >= 30


@run_async
async def test_a_breakpoint_on_python_values_typed_in_the_dialog(tmp_path):
    app = script_app(STATE, tmp_path)
    async with app.run_test(size=SMALL) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        await pilot.press("B")
        await pilot.pause()
        await pilot.press(*"nann")   # checked as typed: a bare name is no condition
        await pilot.pause()
        assert "did you mean nan?" in static_text(app.screen.query_one("#bp-error"))
        for key in ("backspace",) * 4:
            await pilot.press(key)
        await pilot.press(*"opt.lr < 0.2")
        await pilot.press("enter")
        await settle(pilot)
        await wait.until(lambda: any(b["spec"] == "opt.lr < 0.2" for b in app.breakpoints),
                         what="the breakpoint")
        paused = await wait.step("c")
        await settle(pilot)
        assert paused.reason.endswith("opt.lr < 0.2") and paused.when == "before"
        rows = by_name(app)
        assert rows["step"].text == "2"


JITTED = """\
import execmode as em

@em.jit
def step(x):
    h = em.exp(x)
    centered = h * 2.0 - 1.0
    bad = em.log(centered - centered)
    return (bad * h).sum()

x = em.tensor([[0.0, 1.0], [2.0, 3.0]])
step(x)
"""


@run_async
async def test_a_stop_inside_em_jit_shows_the_functions_names_with_their_values(tmp_path):
    script = tmp_path / "jitted.py"
    script.write_text(JITTED)
    app = script_app(str(script), tmp_path, breakpoints=["inf"], start_paused=False)
    async with app.run_test(size=SMALL) as pilot:
        wait = Waiter(pilot)
        paused = await wait.paused()
        assert paused.mode == "graph"
        await wait.until(lambda: any(r.scope == "jit" for r in pane_rows(app)),
                         what="the jitted function's names")
        rows = by_name(app)
        header = next(r for r in pane_rows(app) if r.scope == "jit-header")
        assert header.name.startswith("inside em.jit")
        assert rows["h"].scope == "jit" and "f32[2,2]" in rows["h"].text
        assert "Inf=4" in rows["bad"].text
        # they come before the caller's own frame (the module: x, step)
        names = [r.name for r in pane_rows(app)]
        assert names.index("bad") < names.index("x", names.index("bad"))
