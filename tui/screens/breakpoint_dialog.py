"""The breakpoint dialog (``B``): type a spec, see at once what is wrong with it.

Specs are parsed here with the debugger's own parser as the user types (it never
evaluates anything), so a malformed condition shows the parser's message with its caret
under the column; the agent checks the spec again when it is sent.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from execmode.debug.breakpoints import BreakpointError, parse_breakpoint
from execmode.debug.conditions import ConditionError

GRAMMAR_ROWS = (
    ("op:matmul", "before every matmul"),
    ("train.py:42", "before any op on that line"),
    ("scope:mlp/fc1", "before ops in a named scope"),
    ("graph_break", "when a jitted function breaks its graph"),
    ("exception", "when the script raises"),
    ("nan   inf", "after an op whose output has a NaN / an Inf"),
    ('max > 1e3   abs_max > 100 and op == "exp"', "conditions on the output's stats"),
    ('shape[0] > 1024   dtype == "float64"', "... and on its metadata"),
    ("op:exp if max > 80", "a place and a condition"),
    ("nan and step > 100   line:train.py:42 if opt.lr < 1e-3",
     "Python values of the op's frame"),
)
NAMES = ("names: nan inf finite min max mean std abs_max sum nan_count inf_count size ndim "
         "shape op scope dtype device file line · other names: the script's variables "
         "(opt.lr, losses[-1]) · operators: < <= > >= == != and or not")


def grammar() -> Group:
    """The spec syntax, one example per row (the dialog and the Breakpoints view)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(style="dim")
    for spec, meaning in GRAMMAR_ROWS:
        table.add_row(spec, meaning)
    return Group(table, Text(NAMES, style="dim italic"))


def check_spec(spec: str) -> str | None:
    """None if ``spec`` parses, else the parser's message (with its caret line)."""
    try:
        parse_breakpoint(spec)
    except (BreakpointError, ConditionError) as exc:
        return str(exc)
    return None


class BreakpointDialog(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, initial: str = "", title: str = "New breakpoint") -> None:
        super().__init__()
        self.initial = initial
        self.title_text = title   # "Edit breakpoint 3": the Breakpoints view's E

    def compose(self) -> ComposeResult:
        with Vertical(id="bp-dialog"):
            yield Static(Text.assemble((self.title_text, "bold"), "  (Enter to set, Esc to cancel)"))
            yield Input(self.initial, placeholder="nan   op:matmul   train.py:42   max > 1e3",
                        id="bp-input")
            yield Static(id="bp-error")
            yield Static(grammar(), id="bp-help")

    def on_mount(self) -> None:
        self.query_one("#bp-input", Input).focus()

    def on_input_changed(self, message: Input.Changed) -> None:
        spec = message.value.strip()
        error = check_spec(spec) if spec else None
        self.query_one("#bp-error", Static).update(Text(error or "", style="red"))

    def on_input_submitted(self, message: Input.Submitted) -> None:
        spec = message.value.strip()
        error = check_spec(spec)
        if error:
            self.query_one("#bp-error", Static).update(Text(error, style="red"))
            return
        self.dismiss(spec)

    def action_cancel(self) -> None:
        self.dismiss(None)
