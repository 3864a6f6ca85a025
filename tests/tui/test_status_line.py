"""The status bar's one line, at the width a person's terminal has (80 columns)."""

from __future__ import annotations

from execmode.tui.panels import status_text
from execmode.tui.state import PausedInfo, RunState
from tui_support import text_of


def _paused(reason: str) -> RunState:
    data = {"reason": reason, "when": "after", "mode": "graph", "op_index": 7,
            "kernel_index": 288, "op": "matmul", "kernel": {"name": "matmul"},
            "stack": [{"filename": "/home/me/mymodel.py", "lineno": 26, "function": "step"}]}
    return RunState("paused", PausedInfo.from_event(data), mode="graph")


def test_a_breakpoint_stop_says_why_first_at_80_columns():
    # The reason used to come last, cut at 80 columns: "after kernel matmu…" with no word
    # of the NaN breakpoint that stopped there.
    line = text_of(status_text(_paused("breakpoint 1: nan"), 7, "mymodel.py"), 80)
    assert "paused at kernel 288 · breakpoint 1: nan" in line


def test_a_step_says_where_first_and_its_reason_last():
    line = text_of(status_text(_paused("step"), 7), 200)
    assert line.index("mymodel.py:26") < line.index("· step")


def test_waiting_for_input_fits_80_columns_whole():
    # The first wording, "(type in the input line, Enter sends)", was cut at 80 columns.
    running = RunState("running", mode="eager")
    for shown, hint in ((True, "(Enter sends the line)"),
                        (False, '(ctrl+p "stdin")')):
        line = text_of(status_text(running, 1234, "train.py", waiting_for_input=True,
                                   input_line_shown=shown), 80)
        assert f"waiting for input {hint}" in line
