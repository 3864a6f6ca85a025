"""View 1, Ops: the executed ops (or kernels), the source line, the paused op, the
Python values of the paused frame (Variables), the stack.

The op list pages rows from the session store (a million-op run costs what a
forty-op run does); the op the script is paused before has not run yet, so it is not in
the store: it is the list's last row, marked ▶. Moving the cursor shows that op's line in
the source pane; ``b`` sets a breakpoint at the source pane's cursor line.

The Variables pane shows the frame selected in the stack (the innermost at each pause):
watches, locals, globals; Enter opens a container or an object. ``x`` evaluates an
expression in that frame, ``w`` adds a watch, ``d`` on a watch removes it. Under 110
columns the paused-op pane and the Variables pane share a place (``v`` switches).
"""

from __future__ import annotations

import os
import re

from execmode.tui import panels
from execmode.tui.copy_text import plain
from execmode.tui.debugger import CommandError
from execmode.tui.formatting import literal
from execmode.tui.keys import footer_bindings
from execmode.tui.lines import (
    KernelLines,
    OpLines,
    SourceLines,
    TextLines,
    list_header,
)
from execmode.tui.messages import PythonStateLoaded
from execmode.tui.records import SourceRef
from execmode.tui.screens.base import NARROW_COLUMNS, ViewScreen
from execmode.tui.screens.op_filter import OpFilterMixin
from execmode.tui.state import RunState
from execmode.tui.variables import PythonState, VariableLines, stop_key
from execmode.tui.widgets.row_list import RowList
from execmode.tui.widgets.search_bar import SearchBar
from execmode.tui.widgets.text_pane import TextPane
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

_LOCATION_SPEC = re.compile(r"^\s*(?:line:)?(?P<file>[^\s:][^:]*):(?P<line>\d+)")


class SourceLoaded(Message):
    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__()


class OpsScreen(OpFilterMixin, ViewScreen):
    VIEW = "ops"
    BINDINGS = [
        *footer_bindings("next", "step", "continue", "pause", "breakpoint_here"),
        Binding("t", "toggle_list", "Ops/kernels"),
        Binding("slash", "search", "Search"),
        Binding("exclamation_mark", "toggle_nonfinite", "NaN/Inf only", show=False),
        Binding("o", "cycle_sort", "Sort", show=False),
        Binding("i", "inspect", "Inspect"),
        Binding("x", "evaluate", "Eval"),
        Binding("w", "watch", "Watch"),
        Binding("v", "swap_panes", "Vars/op", show=False),
        Binding("d", "remove_watch", "Unwatch", show=False),
    ]
    NARROW = 110  # columns under which the paused op and the Variables share a place

    def __init__(self) -> None:
        super().__init__()
        self.list_kind = "ops"
        self.source_path: str | None = None
        self.marked_line: int | None = None
        self._wanted_line: int | None = None
        self.frame = 0                  # the stack's frame whose values are shown
        self.compact = False            # under 100 columns: the list's narrow columns

    def compose_view(self) -> ComposeResult:
        with Horizontal(id="ops-top"):
            with Vertical(id="ops-left", classes="pane"):
                yield SearchBar(placeholder="op, scope or file:line · scope:S graph:G "
                                            "nonfinite sort:time|bytes", id="op-search")
                yield TextPane(list_header("ops", self.compact), id="ops-header")
                yield RowList(OpLines(None), follow=True, id="op-list")
                yield TextPane(id="op-detail")
            with Vertical(id="ops-right", classes="pane"):
                yield TextPane("source", id="source-title")
                yield RowList(SourceLines([]), id="source")
        with Horizontal(id="ops-bottom"):
            with VerticalScroll(id="paused-box", classes="pane"):
                yield Static(id="paused")
            yield RowList(VariableLines([]), id="variables", classes="pane")
            yield RowList(TextLines(), id="stack", classes="pane")

    def on_mount(self) -> None:
        self.query_one("#paused-box").border_title = "paused op"
        self.query_one("#stack").border_title = "stack (innermost first)"
        self.query_one("#variables").border_title = "variables"
        if self.app.bridge is None:  # a recorded session has no Python values to show
            self.query_one("#variables").display = False
        self.watch(self.app, "run_state", self._state_changed)
        self.watch(self.app, "snapshot", self._store_grew)
        self.watch(self.app, "breakpoints", self._breakpoints_changed, init=False)
        self.query_one("#op-list", RowList).focus()

    def on_screen_resume(self) -> None:
        self.on_source_reveal_requested()

    def on_source_reveal_requested(self, _message=None) -> None:
        ref = self.app.take_reveal_request()
        if ref is not None:
            self.show_source(ref, mark=True)
            self.query_one("#source", RowList).focus()

    # --- the store and the script ---------------------------------------------------------
    def _lines(self):
        paused = self.app.run_state.paused
        if paused is None or paused.when not in ("before", "exception"):
            paused = None  # paused after an op: it is in the store already
        found = self.found_for_list()
        if self.list_kind == "kernels":
            lines = KernelLines(self.app.pages, self.app.snapshot.kernels,
                                paused if paused and paused.mode == "graph" else None, found)
        else:
            lines = OpLines(self.app.pages, self.app.snapshot.ops,
                            paused if paused and paused.mode == "eager" else None, found)
        lines.compact = self.compact
        return lines

    def _store_grew(self, snapshot) -> None:
        op_list = self.query_one("#op-list", RowList)
        source = op_list.source
        if source.pages is not self.app.pages:  # a new run, or the file just appeared
            self._found = None  # the old fetcher's search result went with it
            op_list.set_source(self._lines())
            self.find()
            self.show_title()
            return
        source.grow(snapshot.kernels if self.list_kind == "kernels" else snapshot.ops)
        op_list.rows_changed()
        self.refind_soon()  # a filtered list is searched again (at most once a second)
        self.show_title()

    def _state_changed(self, state: RunState) -> None:
        p = state.paused
        recorded = state.phase == "post-mortem"
        panel = panels.session_panel(self.app.session_meta, state) if recorded \
            else panels.paused_panel(p, state)
        self.query_one("#paused", Static).update(panel)
        self.query_one("#paused-box").border_title = "session" if recorded else "paused op"
        if p is not None and p.hunt and p.hunt.get("text"):
            # A NaN stop's evidence (the op and line that made it) is the first thing to
            # read: where the paused op and the Variables share a place, it is shown.
            self.query_one("#ops-bottom").add_class("show-paused")
        self.query_one("#stack", RowList).set_source(TextLines(panels.stack_lines(p)), cursor=0)
        self.frame = 0
        self._request_python_state()
        if state.phase == "restarting":
            # A new run starts eager, with nothing recorded: no row of the old run's list
            # (nor its kernels) may stay on screen.
            self.list_kind = "ops"
            self.query_one("#ops-header", TextPane).show(list_header("ops", self.compact))
            self.query_one("#op-detail", TextPane).show("")
        if p is not None and p.mode == "graph" and self.list_kind == "ops":
            self.list_kind = "kernels"
            self.query_one("#ops-header", TextPane).show(list_header("kernels", self.compact))
            self._found = None
            self.find()
        self.show_list(cursor=-1)  # the paused row (the last one, whatever the query)
        if p is None or not self._show_pause_source(p):
            if self.source_path is not None:
                self._redraw_source()

    def _show_pause_source(self, p) -> bool:
        """The line a stop shows: a NaN's origin (marked), else the paused line."""
        if p.origin is not None:
            self.show_source(p.origin, mark=True)  # a NaN breakpoint: where it was born
        elif p.where is not None:
            self.show_source(p.where)
        else:
            return False
        return True

    def _breakpoints_changed(self, _breakpoints) -> None:
        self._redraw_source()

    # --- the op list ----------------------------------------------------------------------
    def on_row_list_cursor_moved(self, message: RowList.CursorMoved) -> None:
        if message.row_list.id == "op-list":
            self._show_row(message.index)
        elif message.row_list.id == "stack":
            p = self.app.run_state.paused
            if p is not None and message.index < len(p.stack):
                if message.index == 0:
                    # The innermost frame is the stop itself: its line is the paused op's
                    # (a fused kernel's member is in the jitted function, not at the
                    # caller's line the Python stack ends at), or a NaN's origin. This
                    # message comes after a new stop's own show_source: it must agree.
                    self._show_pause_source(p)
                else:
                    self.show_source(p.stack[message.index])
                if message.index != self.frame:
                    self.frame = message.index
                    self._request_python_state()

    def on_row_list_row_chosen(self, message: RowList.RowChosen) -> None:
        if message.row_list.id == "op-list":
            self.action_inspect()
        elif message.row_list.id == "variables":
            row = self.query_one("#variables", RowList).source.row(message.index)
            if row is not None and self.app.variables.toggle(row):
                self._request_python_state()

    # --- Python values (the Variables pane) -------------------------------------------------
    def _request_python_state(self) -> None:
        """Fetch the selected frame's values from the agent (a worker: it blocks)."""
        pane = self.query_one("#variables", RowList)
        state, bridge = self.app.run_state, self.app.bridge
        p = state.paused
        if bridge is None:
            pane.set_source(VariableLines([], "a recorded session: Python values need a "
                                              "live script (execmode tui SCRIPT)"))
            return
        if p is None:
            why = {"running": "running… (p pauses)", "finished": "the script has ended"}
            pane.set_source(VariableLines([], why.get(state.phase, state.phase)))
            return
        frame = min(self.frame, max(0, len(p.stack) - 1))
        function = p.stack[frame].function if p.stack else "<module>"
        model, stop = self.app.variables, stop_key(p)
        request = model.request()

        def fetch() -> None:
            try:
                loaded = model.fetch(bridge.call, request, stop, frame, function,
                                     in_jit=p.mode == "graph")
            except CommandError as exc:
                loaded = PythonState(stop, frame, function, error=str(exc))
            self.post_message(PythonStateLoaded(loaded))

        self.run_worker(fetch, thread=True, group="python-state", exclusive=True,
                        exit_on_error=False)

    def on_python_state_loaded(self, message: PythonStateLoaded) -> None:
        loaded = message.state
        p = self.app.run_state.paused
        if p is None or stop_key(p) != loaded.stop or loaded.frame != self.frame:
            return  # an answer about an earlier stop or another frame
        pane = self.query_one("#variables", RowList)
        pane.border_title = literal(f"variables · {loaded.function}" if loaded.frame == 0 else
                                   f"variables · {loaded.function} (frame {loaded.frame})")
        if loaded.error:
            pane.set_source(VariableLines([], loaded.error))
            return
        pane.set_source(VariableLines(self.app.variables.rows(loaded), "no variables"))

    def _frame_function(self) -> tuple[int, str]:
        p = self.app.run_state.paused
        if p is None or not p.stack:
            return self.frame, "<module>"
        frame = min(self.frame, len(p.stack) - 1)
        return frame, p.stack[frame].function

    def action_evaluate(self) -> None:
        from execmode.tui.screens.expression_dialog import ExpressionDialog

        if self.app._live("paused") is None:
            return
        self.app.push_screen(ExpressionDialog(*self._frame_function()), self._watch_added)

    def action_watch(self) -> None:
        from execmode.tui.screens.expression_dialog import ExpressionDialog

        self.app.push_screen(ExpressionDialog(*self._frame_function(), watch=True),
                             self._watch_added)

    def _watch_added(self, expr: str | None) -> None:
        if expr and self.app.variables.add_watch(expr):
            self._request_python_state()

    def action_remove_watch(self) -> None:
        pane = self.query_one("#variables", RowList)
        row = pane.source.row(pane.cursor) if pane.has_focus else None
        if row is None or row.scope != "watch":
            self.notify("d removes the watch under the cursor in the Variables pane",
                        severity="warning")
            return
        self.app.variables.remove_watch(row.name)
        self._request_python_state()

    def action_swap_panes(self) -> None:
        self.query_one("#ops-bottom").toggle_class("show-paused")

    def on_resize(self, event) -> None:
        # Sharing a place needs two panes: a recorded session has no Variables pane, so
        # its session panel keeps its place at any width.
        has_variables = self.query_one("#variables").display
        shared = event.size.width < self.NARROW and has_variables
        self.query_one("#ops-bottom").set_class(shared, "narrow")
        self.query_one("#paused-box").border_subtitle = "v: variables" if shared else None
        self.query_one("#variables").border_subtitle = "v: paused op" if shared else None
        compact = event.size.width < NARROW_COLUMNS
        if compact != self.compact:  # the list's columns follow its pane's width
            self.compact = compact
            self.query_one("#ops-header", TextPane).show(list_header(self.list_kind, compact))
            op_list = self.query_one("#op-list", RowList)
            op_list.source.compact = compact
            op_list.refresh()

    def _show_row(self, index: int) -> None:
        source = self.query_one("#op-list", RowList).source
        detail = self.query_one("#op-detail", TextPane)
        paused = self.app.run_state.paused
        if source.is_pending(index):
            self.app.selected_op = None  # not run yet: no row, no values
            detail.show(panels.pending_details(source.pending))
            if paused is not None and paused.where is not None:
                self.show_source(paused.where)
            return
        row = source.row(index) if len(source) else None
        self.app.selected_op = row if self.list_kind == "ops" else None
        if row is None:
            detail.show(source.error or "")
            return
        number = source.number(index, row)
        detail.show(panels.op_details(row, number) if self.list_kind == "ops" else
                    panels.kernel_details(row, number))
        if (self.list_kind == "kernels" and paused is not None and paused.origin is not None
                and number == paused.kernel_index):
            self.show_source(paused.origin, mark=True)  # the kernel a NaN hunt looked into
        elif row.source is not None:
            self.show_source(row.source, mark=True)

    def copy_text(self) -> str | None:
        """``y`` on the op list: the row and the op in full (inputs, output, attributes)."""
        op_list = self.query_one("#op-list", RowList)
        if self.focused is not op_list or not len(op_list.source):
            return super().copy_text()
        row = op_list.source.line(op_list.cursor).plain.rstrip()
        return f"{row}\n{plain(self.query_one('#op-detail', TextPane).content)}".rstrip()

    def action_toggle_list(self) -> None:
        self.list_kind = "kernels" if self.list_kind == "ops" else "ops"
        self.query_one("#ops-header", TextPane).show(list_header(self.list_kind, self.compact))
        self.apply_query(self.op_query)  # the same query over the other list

    def action_inspect(self) -> None:
        # A past eager op of a live script: the Tensor view offers its kept values
        # (op:N, the agent's value ring); the paused op's own are there anyway.
        live = self.app.bridge is not None and self.app.run_state.paused is not None
        self.app.inspected_op = self.app.selected_op if live else None
        self.app.action_show_view("tensor")

    # --- the source pane ------------------------------------------------------------------
    def show_source(self, ref: SourceRef, mark: bool = False) -> None:
        """Show ``ref``'s file with the cursor on its line (``mark`` tints the line)."""
        marked = ref.lineno if mark else None
        if (ref.filename, ref.lineno, marked) == (self.source_path, self._wanted_line,
                                                  self.marked_line):
            return  # following a running script: most ops come from the line shown
        self.source_path = ref.filename
        self.marked_line = marked
        self._wanted_line = ref.lineno
        self.query_one("#source-title", TextPane).show(f"{ref.short}  {ref.function}")
        if self.app.sources.get(ref.filename) is None:
            self._load_source(ref.filename)
            return
        self._redraw_source(move_to=ref.lineno)

    def _load_source(self, path: str) -> None:
        def load() -> None:
            self.app.sources.load(path)
            self.post_message(SourceLoaded(path))

        self.run_worker(load, thread=True, group="source", exit_on_error=False)

    def on_source_loaded(self, message: SourceLoaded) -> None:
        if message.path == self.source_path:
            self._redraw_source(move_to=self._wanted_line)

    def _redraw_source(self, move_to: int | None = None) -> None:
        if self.source_path is None:
            return
        lines = self.app.sources.get(self.source_path)
        if lines is None:
            return
        paused = self.app.run_state.paused
        current = None
        if paused is not None and paused.where is not None and \
                paused.where.filename == self.source_path:
            current = paused.where.lineno
        view = self.query_one("#source", RowList)
        view.set_source(SourceLines(lines, current, self._breakpoint_lines(), self.marked_line),
                        cursor=(move_to - 1) if move_to else None)
        if move_to:
            view.center_on(move_to - 1)

    def _breakpoint_lines(self) -> frozenset[int]:
        name = os.path.basename(self.source_path or "")
        out = set()
        for bp in self.app.breakpoints:
            m = _LOCATION_SPEC.match(bp.get("spec", ""))
            if m and bp.get("enabled", True) and os.path.basename(m["file"]) == name:
                out.add(int(m["line"]))
        return frozenset(out)

    def breakpoint_location(self) -> SourceRef | None:
        if self.source_path is None:
            paused = self.app.run_state.paused
            return paused.where if paused is not None else None
        line = self.query_one("#source", RowList).cursor + 1
        return SourceRef(self.source_path, line)
