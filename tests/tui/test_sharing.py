"""Taking things out of the TUI: `e` exports any format to a typed path, `y`/ctrl+c copy
the selection, ctrl+s saves an SVG screenshot. On a session recorded by a real child."""

from __future__ import annotations

import csv
import json

import pytest
from execmode.tui.screens.export_dialog import ExportDialog
from execmode.tui.widgets.row_list import RowList
from textual.widgets import Input
from tui_support import (
    SIZE,
    Waiter,
    record_session,
    run_async,
    script_app,
    session_app,
    settle,
)

# Slow tier: the TUI driven by the Pilot, against a live agent or a recorded session.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return record_session("three_ops.py", tmp_path_factory.mktemp("s") / "three.emsession")


def _check(fmt: str, path) -> None:
    text = path.read_text()
    if fmt == "html":
        assert "<html" in text.lower() and "exp" in text
    elif fmt == "trace.json":
        names = {e.get("name") for e in json.loads(text)["traceEvents"]}
        assert {"multiply", "exp", "sum"} <= names
    elif fmt == "speedscope.json":
        assert "speedscope" in json.loads(text)["$schema"]
    elif fmt == "csv":
        rows = list(csv.reader(text.splitlines()))
        assert [r[rows[0].index("op")] for r in rows[1:]][-3:] == ["multiply", "exp", "sum"]
    elif fmt == "md":
        assert "|" in text and "exp" in text


async def _open(pilot, app):
    await Waiter(pilot).until(lambda: app.snapshot.ops.count == 4, what="the session")
    await settle(pilot)


@pytest.mark.parametrize("fmt", ["html", "trace.json", "speedscope.json", "csv", "md"])
@run_async
async def test_e_writes_the_format_of_the_typed_name(fmt, recorded, tmp_path):
    app = session_app(recorded)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot, app)
        await pilot.press("e")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ExportDialog)
        field = dialog.query_one("#export-path", Input)
        assert field.value == str(recorded.with_name("three.html"))  # beside the session
        target = tmp_path / f"out.{fmt}"
        field.value = str(target)
        await pilot.press("enter")
        await settle(pilot)
        assert target.exists(), "the export worker wrote nothing"
        _check(fmt, target)


@run_async
async def test_the_format_list_rewrites_the_ending_and_an_unknown_ending_is_refused(
        recorded, tmp_path):
    app = session_app(recorded)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(pilot, app)
        await pilot.press("e")
        await pilot.pause()
        field = app.screen.query_one("#export-path", Input)
        await pilot.press("down", "down", "enter")  # the list: 2nd format, Chrome trace
        assert field.value == str(recorded.with_name("three.trace.json"))
        assert "Chrome trace" in str(app.screen.query_one("#export-format").content)
        field.value = str(tmp_path / "notes.txt")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ExportDialog)  # still open: it says what to type
        assert not (tmp_path / "notes.txt").exists()
        await pilot.press("escape")
        assert not isinstance(app.screen, ExportDialog)


@run_async
async def test_y_and_ctrl_c_copy_the_selected_op_and_ctrl_s_saves_a_screenshot(recorded):
    app = session_app(recorded)
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot, app)
        op_list = app.screen.query_one("#op-list", RowList)
        op_list.focus()
        op_list.move_to(2)
        await settle(pilot)
        await pilot.press("y")
        assert app.clipboard.splitlines()[0].split()[:2] == ["3", "exp"]
        assert "three_ops.py:6" in app.clipboard  # the op in full: its line
        op_list.move_to(1)
        await settle(pilot)
        await pilot.press("ctrl+c")
        assert app.clipboard.splitlines()[0].split()[:2] == ["2", "multiply"]

        said = []
        notify = app.notify
        app.notify = lambda message, **kw: (said.append(message), notify(message, **kw))
        before = set(recorded.parent.glob("execmode-ops-*.svg"))
        await pilot.press("ctrl+s")
        await pilot.pause()
        (written,) = set(recorded.parent.glob("execmode-ops-*.svg")) - before  # beside it
        assert "<svg" in written.read_text()[:400] and "multiply" in written.read_text()
        assert any(str(written) in m for m in said)  # and the TUI says where


@run_async
async def test_y_in_the_tensor_view_copies_the_summary_of_a_live_tensor(tmp_path):
    app = script_app("planted_nan.py", tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        wait = Waiter(pilot)
        await wait.paused()
        await wait.step("s")
        paused = await wait.step("s")  # before scale's multiply: input 0 is ones(8) * -1
        assert paused.op == "multiply"
        await pilot.press("2")
        await settle(pilot)
        await pilot.press("y")
        copied = app.clipboard
        assert "f32[8]" in copied and "min" in copied and "-1" in copied, copied
