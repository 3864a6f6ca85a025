"""View 2, Tensor inspector: summary stats, NaN/Inf counts, a histogram, a value slice.

The tensors are the paused op's inputs and output, the fused kernel's member nodes
(recomputed by the agent on request) and the tensor variables of the paused frames. The
agent computes every number; this view asks for them in worker threads and shows them.
"""

from __future__ import annotations

import re

from execmode.tui import panels
from execmode.tui.copy_text import plain
from execmode.tui.debugger import CommandError
from execmode.tui.formatting import literal
from execmode.tui.lines import TextLines
from execmode.tui.screens.base import ViewScreen
from execmode.tui.state import PausedInfo
from execmode.tui.widgets.row_list import RowList
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, Static


class TensorRefsListed(Message):
    def __init__(self, refs: list[tuple[str, str]]) -> None:
        self.refs = refs  # (ref, description)
        super().__init__()


class TensorInspected(Message):
    def __init__(self, ref: str, summary: dict | None, error: str = "") -> None:
        self.ref = ref
        self.summary = summary
        self.error = error
        super().__init__()


class SliceFetched(Message):
    def __init__(self, ref: str, index: str, result: dict | None, error: str = "") -> None:
        self.ref = ref
        self.index = index
        self.result = result
        self.error = error
        super().__init__()


def paused_refs(p: PausedInfo) -> list[tuple[str, str]]:
    """The tensors a pause offers without asking the agent."""
    refs = []
    for i, s in enumerate(p.inputs):
        if "scalar" not in s:
            refs.append((f"input:{i}", str(s.get("type", ""))))
    if not p.inputs:  # after a kernel ran (a NaN stop): what it read, recomputed on asking
        for i, k in enumerate((p.kernel or {}).get("inputs") or ()):
            refs.append((f"input:{i}", f"%{k.get('id')} {k.get('op')} {k.get('type', '')}"))
    if p.output is not None:
        refs.append(("output", str(p.output.get("type", ""))))
    for m in (p.kernel or {}).get("members") or ():
        refs.append((f"node:{m.get('id')}", f"{m.get('op')} {m.get('type', '')}"))
    return refs


_TENSOR_TYPE = re.compile(r"^\w+\[[\d,]*\]")  # "f32[64,20]" (a scalar input reads "3.0")


def past_op_refs(row) -> list[tuple[str, str]]:
    """A past op's values as the agent keeps them (value_ring.py): ``op:N`` for its
    output, ``op:N:input:I`` for its tensor inputs, in order. N is the op's number (the
    store's seq), as the Ops list, the status bar and the exports show it."""
    refs = [(f"op:{row.seq}", f"#{row.seq} {row.op} → {row.output}")]
    tensors = [t for t in (row.inputs or "").split(", ") if _TENSOR_TYPE.match(t)]
    refs += [(f"op:{row.seq}:input:{i}", f"#{row.seq} input {i}: {t}")
             for i, t in enumerate(tensors)]
    return refs


class TensorScreen(ViewScreen):
    VIEW = "tensor"
    BINDINGS = [
        Binding("slash", "focus_slice", "Slice"),
        Binding("colon", "focus_ref", "Type a ref"),
        Binding("escape", "leave_input", "Back to the list", show=False),
    ]

    inspected: reactive[str | None] = reactive(None, init=False)  # the ref on screen
    # Under these sizes (an 80x24 terminal) the summary would be cut to a few rows and
    # columns: the histogram and the value pane give it room (tensor.tcss).
    NARROW, SHORT = 110, 34

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str]] = []
        self._past = None  # the past op whose kept values the list offers (app.inspected_op)
        self.current_ref: str | None = None

    def compose_view(self) -> ComposeResult:
        with Horizontal(id="tensor-body"):
            with Vertical(id="tensor-left"):
                yield RowList(TextLines(), id="tensor-refs", classes="pane")
                yield Input(placeholder="input:0  output  var:x  node:7  op:12", id="ref-input")
            with Vertical(id="tensor-right"):
                with Horizontal(id="tensor-top"):
                    yield Static(id="tensor-stats", classes="pane")
                    yield Static(id="tensor-hist", classes="pane")
                yield Input(placeholder="a slice such as [3, :10] then Enter", id="slice-input")
                with VerticalScroll(id="slice-box", classes="pane"):
                    yield Static(id="slice-output")

    def on_mount(self) -> None:
        self.query_one("#tensor-refs").border_title = "tensors"
        self.query_one("#tensor-stats").border_title = "summary"
        self.query_one("#tensor-hist").border_title = "histogram"
        self.query_one("#slice-box").border_title = "values"
        self.watch(self.app, "run_state", self._state_changed)

    def on_resize(self, event) -> None:
        body = self.query_one("#tensor-body")
        body.set_class(event.size.width < self.NARROW, "narrow")
        body.set_class(event.size.height < self.SHORT, "short")

    def on_screen_resume(self) -> None:
        past = self.app.inspected_op
        if self.app.run_state.paused is None or (past is not None and past != self._past):
            self._state_changed(self.app.run_state)

    def _state_changed(self, state) -> None:
        p = state.paused
        if p is None:
            self.refs = []
            why = ("a recorded session: live tensors need a paused script "
                   "(execmode tui SCRIPT)" if self.app.bridge is None else
                   "tensors can be inspected while the script is paused (s, n, p or a "
                   "breakpoint)")
            self._show_refs(why)
            self._show_recorded()
            return
        self._past = self.app.inspected_op
        self.refs = (past_op_refs(self._past) if self._past is not None else []) + \
            paused_refs(p)
        self._show_refs()
        self._list_locals()
        if self.refs:
            self.inspect(self.refs[self._first_index(p)][0])

    def _first_index(self, p: PausedInfo) -> int:
        """Enter on a past op in the Ops view: its output (the first row). Stopped after an
        op (a nan/inf or value breakpoint): its output; before an op, its first input."""
        names = [ref for ref, _ in self.refs]
        if self._past is not None:
            return 0
        return names.index("output") if p.when == "after" and "output" in names else 0

    def _show_recorded(self) -> None:
        """Not paused: the recorded value summary of the op selected in the Ops view."""
        stats = self.query_one("#tensor-stats", Static)
        self.query_one("#tensor-hist", Static).update("")
        row = self.app.selected_op
        summary = panels.recorded_summary(row) if row is not None else None
        if summary is None:
            stats.border_title = "summary"
            stats.update(Text("no recorded values for the selected op (record with value "
                              "summaries on: execmode profile --summaries)"
                              if row is not None else "", style="dim"))
            return
        stats.border_title = literal(f"recorded: output of #{row.seq} {row.op}")
        stats.update(panels.tensor_table(summary))

    def _show_refs(self, empty: str = "") -> None:
        lines = []
        for ref, about in self.refs:
            text = Text(f"{ref:<12}", style="bold")
            text.append(about, style="dim")
            lines.append(text)
        paused = self.app.run_state.paused
        cursor = self._first_index(paused) if paused is not None and self.refs else 0
        self.query_one("#tensor-refs", RowList).set_source(TextLines(lines, empty),
                                                           cursor=cursor)

    # --- asking the agent (workers) -------------------------------------------------------
    def _list_locals(self) -> None:
        bridge = self.app.bridge
        base = list(self.refs)

        def run() -> None:
            try:
                tensors = bridge.call("locals")
            except CommandError:
                return
            extra = [(f"var:{t['name']}", str(t.get("type", ""))) for t in tensors]
            self.post_message(TensorRefsListed(base + extra))

        self.run_worker(run, thread=True, group="tensor-refs", exit_on_error=False)

    def inspect(self, ref: str) -> None:
        bridge = self.app.bridge
        if bridge is None or self.app.run_state.phase != "paused":
            return
        self.current_ref = ref
        self.query_one("#tensor-stats", Static).update(Text(f"asking for {ref}…", style="dim"))

        def run() -> None:
            try:
                self.post_message(TensorInspected(ref, bridge.call("inspect", ref)))
            except CommandError as exc:
                self.post_message(TensorInspected(ref, None, str(exc)))

        self.run_worker(run, thread=True, group="inspect", exit_on_error=False)

    def fetch_slice(self, index: str) -> None:
        bridge, ref = self.app.bridge, self.current_ref
        if bridge is None or ref is None or self.app.run_state.phase != "paused":
            self.query_one("#slice-output", Static).update(
                Text("pick a tensor of a paused script first", style="yellow"))
            return

        def run() -> None:
            try:
                self.post_message(SliceFetched(ref, index, bridge.call("slice", ref, index)))
            except CommandError as exc:
                self.post_message(SliceFetched(ref, index, None, str(exc)))

        self.run_worker(run, thread=True, group="slice", exit_on_error=False)

    # --- results --------------------------------------------------------------------------
    def on_tensor_refs_listed(self, message: TensorRefsListed) -> None:
        if self.app.run_state.phase == "paused":
            self.refs = message.refs
            self._show_refs()

    def on_tensor_inspected(self, message: TensorInspected) -> None:
        if message.ref != self.current_ref:
            return
        stats = self.query_one("#tensor-stats", Static)
        hist = self.query_one("#tensor-hist", Static)
        stats.border_title = literal(f"summary: {message.ref}")
        if message.summary is None:
            stats.update(Text(message.error, style="red"))
            hist.update("")
        else:
            stats.update(panels.tensor_table(message.summary))
            hist.update(panels.histogram_text(message.summary.get("histogram"), width=18))
        self.inspected = message.ref

    def on_slice_fetched(self, message: SliceFetched) -> None:
        out = self.query_one("#slice-output", Static)
        self.query_one("#slice-box").border_title = literal(f"values: {message.ref}{message.index}")
        if message.result is None:
            out.update(Text(message.error, style="red"))
            return
        r = message.result
        text = Text(f"shape {tuple(r.get('shape') or ())}", style="dim")
        if r.get("truncated"):
            text.append("  (truncated)", style="yellow")
        text.append("\n" + str(r.get("text", "")))
        out.update(text)

    # --- the user -------------------------------------------------------------------------
    def on_row_list_cursor_moved(self, message: RowList.CursorMoved) -> None:
        if message.row_list.id == "tensor-refs" and message.index < len(self.refs):
            ref = self.refs[message.index][0]
            if ref != self.current_ref:
                self.inspect(ref)

    def on_input_submitted(self, message: Input.Submitted) -> None:
        value = message.value.strip()
        if not value:
            return
        if message.input.id == "ref-input":
            self.inspect(value)
        elif message.input.id == "slice-input":
            self.fetch_slice(value if value.startswith("[") else f"[{value}]")
        # Back to the list, as Esc does: the answer is on screen, and the next key (2, s,
        # c, / again) is a command, not more text typed into the field.
        self.action_leave_input()

    def copy_text(self) -> str | None:
        """``y``: the summary shown (statistics of the selected tensor)."""
        text = plain(self.query_one("#tensor-stats", Static).content)
        return text or super().copy_text()

    def action_focus_slice(self) -> None:
        self.query_one("#slice-input", Input).focus()

    def action_focus_ref(self) -> None:
        self.query_one("#ref-input", Input).focus()

    def action_leave_input(self) -> None:
        """Esc: out of a text field, so the view keys (1-9, n, s, c) work again."""
        self.query_one("#tensor-refs", RowList).focus()
