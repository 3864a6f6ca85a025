"""The evaluator (``x``, pdb's ``p expr``) and the watch dialog (``w``).

The expression is sent to the agent, which evaluates it in the selected frame of the
paused script with a time limit (execmode/debug/pyvalues.py); an error is shown as the
expression's result and never stops the script. The dialog stays open: each result goes
on top of the ones before, so a person can try a few expressions in a row.
"""

from __future__ import annotations

from execmode.tui.debugger import CommandError
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

MAX_RESULTS = 8


def result_text(result: dict) -> Text:
    text = Text(result.get("expr", "?"), style="bold")
    text.append(" = ")
    style = "red" if not result.get("ok") else ("cyan" if result.get("kind") == "tensor"
                                                 else "")
    text.append(result.get("text", ""), style=style)
    if result.get("ok"):
        text.append(f"   ({result.get('type')})", style="dim")
    return text


class ExpressionDialog(ModalScreen[str | None]):
    """``watch=False``: evaluate on Enter, stay open; ``watch=True``: Enter adds a watch."""

    BINDINGS = [Binding("escape", "cancel", "Close"),
                # ctrl+w is the Input's delete-word: n for "new watch", as pudb's key.
                Binding("ctrl+n", "watch", "Watch it", show=False)]

    def __init__(self, frame: int, function: str, watch: bool = False) -> None:
        super().__init__()
        self.frame = frame
        self.function = function
        self.watch_mode = watch
        self.results: list[Text] = []
        self.last_expr = ""

    def compose(self) -> ComposeResult:
        title = "New watch" if self.watch_mode else "Evaluate"
        keys = "Enter to add, Esc to cancel" if self.watch_mode else \
            "Enter evaluates · ctrl+n watches it · Esc closes"
        with Vertical(id="expr-dialog"):
            yield Static(Text.assemble((title, "bold"), f" in {self.function} (frame "
                                       f"{self.frame})  ({keys})"), id="expr-title")
            yield Input(placeholder="opt.lr   step   loss.item()   w.grad", id="expr-input")
            yield Static(id="expr-results")

    def on_mount(self) -> None:
        self.query_one("#expr-input", Input).focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        expr = message.value.strip()
        if not expr:
            return
        if self.watch_mode:
            self.dismiss(expr)
            return
        bridge = self.app.bridge
        if bridge is None or self.app.run_state.phase != "paused":
            self._show({"expr": expr, "ok": False,
                        "text": "evaluating needs a paused live script"})
            return
        frame = self.frame
        self.last_expr = expr
        message.input.value = ""  # the result goes below; the line is ready for the next

        def run() -> None:
            try:
                result = bridge.call("evaluate", expr, frame)
            except CommandError as exc:
                result = {"expr": expr, "ok": False, "text": str(exc)}
            self.app.call_from_thread(self._show, result)

        self.run_worker(run, thread=True, group="evaluate", exit_on_error=False)

    def _show(self, result: dict) -> None:
        self.results.insert(0, result_text(result))
        del self.results[MAX_RESULTS:]
        self.query_one("#expr-results", Static).update(Text("\n").join(self.results))

    def action_watch(self) -> None:
        """Watch what is typed, or else the expression just evaluated."""
        expr = self.query_one("#expr-input", Input).value.strip() or self.last_expr
        if expr:
            self.dismiss(expr)

    def action_cancel(self) -> None:
        self.dismiss(None)
