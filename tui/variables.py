"""The Variables pane's model: Python values of a paused frame, watches, what changed.

The agent describes values (execmode/debug/pyvalues.py); this module decides what the
pane shows: the watch expressions first; at a stop inside a jitted function, its Python
names with their values at this call (graph/py_names.py: a view no other debugger has,
since the function itself ran only when it was traced); then the frame's locals, then
its globals (one row that opens, as pudb's), containers and objects opened by path. A value whose text
differs from the previous stop's (same frame, same path) is marked changed, as pudb
marks it. :meth:`VariablesModel.fetch` talks to the agent and runs in a worker thread;
everything else is pure and runs in the UI thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text

WATCH, LOCALS, GLOBALS, JIT = "watch", "locals", "globals", "jit"

_KIND_STYLE = {"tensor": "cyan", "array": "cyan", "number": "green", "bool": "green",
               "str": "yellow", "bytes": "yellow", "none": "dim", "error": "red",
               "module": "dim", "function": "dim", "class": "dim"}


@dataclass(frozen=True)
class VariableRow:
    """One line of the pane."""

    scope: str                   # watch | jit | locals | globals | header | jit-header
    path: tuple[str, ...]        # labels from the scope's root (a watch: its expression)
    name: str
    kind: str
    text: str
    expandable: bool = False
    expanded: bool = False
    changed: bool = False
    length: int | None = None

    @property
    def depth(self) -> int:
        return max(0, len(self.path) - 1)


@dataclass(frozen=True)
class PythonState:
    """What the agent said about one frame at one stop."""

    stop: tuple                   # which pause this is (changes mark against the last)
    frame: int                    # 0: innermost
    function: str                 # the frame's function, "<module>" at the top level
    watches: tuple[dict, ...] = ()
    scopes: dict = field(default_factory=dict)   # (scope, path) -> tuple of agent rows
    error: str = ""
    jit: dict | None = None       # inside a jitted function: {"function", "rows"}


def stop_key(paused) -> tuple:
    """Identifies one pause (a new pause compares its values with the one before)."""
    return (paused.op_index, paused.kernel_index, paused.when, paused.reason)


class VariablesModel:
    """Expansion state, watches and the values last seen, across stops and runs."""

    def __init__(self) -> None:
        self.expanded: set[tuple[str, tuple[str, ...]]] = set()
        self.watches: list[str] = []
        self._stop: tuple | None = None
        self._baseline: dict = {}   # values at the previous stop: what "changed" means
        self._seen: dict = {}       # values at this stop

    # --- the worker side ----------------------------------------------------------------
    def request(self) -> tuple[frozenset, tuple]:
        """What a fetch needs, taken in the UI thread (the worker must not read sets the
        UI changes)."""
        return frozenset(self.expanded), tuple(self.watches)

    @staticmethod
    def fetch(call, request, stop: tuple, frame: int, function: str,
              in_jit: bool = False) -> PythonState:
        """Ask the agent (``call`` is the bridge's) for everything the pane shows;
        ``in_jit``: a graph-mode stop, whose jitted function's names come first."""
        expanded, watches = request
        results = tuple(call("evaluate", expr, frame) for expr in watches)
        jit = call("jit_variables") if in_jit and frame == 0 else None
        scopes: dict = {}
        roots = [LOCALS] if function == "<module>" else [LOCALS, GLOBALS]
        for scope in roots:
            if scope == GLOBALS and (GLOBALS, ()) not in expanded:
                continue
            scopes[(scope, ())] = tuple(call("variables", frame, scope, []))
            for wanted_scope, path in sorted(expanded):
                if wanted_scope == scope and path:
                    try:
                        scopes[(scope, path)] = tuple(call("variables", frame, scope,
                                                           list(path)))
                    except Exception:  # noqa: BLE001 - gone since (a new stop): stays shut
                        continue
        return PythonState(stop, frame, function, results, scopes, jit=jit)

    # --- the UI side -------------------------------------------------------------------
    def rows(self, state: PythonState) -> list[VariableRow]:
        """The pane's lines for ``state``, marking values changed since the last stop."""
        if state.stop != self._stop:
            self._stop = state.stop
            self._baseline, self._seen = {**self._baseline, **self._seen}, {}
        out: list[VariableRow] = []
        for result in state.watches:
            key = (state.function, WATCH, (result["expr"],))
            out.append(VariableRow(WATCH, (result["expr"],), result["expr"],
                                   result.get("kind", "error"), result.get("text", ""),
                                   changed=self._changed(key, result.get("text", ""))))
        if state.jit and state.jit.get("rows"):
            self._add_jit(out, state)
        for scope in (LOCALS, GLOBALS):
            rows = state.scopes.get((scope, ()))
            if scope == GLOBALS and state.function == "<module>":
                continue  # at the top level, the locals are the globals
            if scope == GLOBALS:
                opened = rows is not None
                out.append(VariableRow("header", (GLOBALS,), "globals", "header",
                                       "" if opened else "Enter opens them", True, opened))
            if rows is None:
                continue
            self._add(out, state, scope, (), rows)
        return out

    def _add_jit(self, out, state) -> None:
        graph = state.jit.get("function") or "em.jit"
        top = str(graph).split("#")[0]
        out.append(VariableRow("jit-header", (JIT,), f"inside em.jit · {graph}", "header",
                               "the names at trace time, values at this call"))
        for row in state.jit["rows"]:
            name = row["name"] if row.get("function") == top else \
                f"{row['name']} ({row.get('function')})"
            key = (state.function, JIT, (row.get("function"), row["name"]))
            out.append(VariableRow(JIT, (name,), name, row.get("kind", "tensor"),
                                   row.get("text", ""),
                                   changed=self._changed(key, row.get("text", ""))))

    def _add(self, out, state, scope, path, rows) -> None:
        for row in rows:
            child = path + (row["name"],)
            key = (state.function, scope, child)
            opened = (scope, child) in self.expanded and (scope, child) in state.scopes
            out.append(VariableRow(scope, child, row["name"], row["kind"], row["text"],
                                   row.get("expandable", False), opened,
                                   self._changed(key, row["text"]), row.get("length")))
            if opened:
                self._add(out, state, scope, child, state.scopes[(scope, child)])

    def _changed(self, key, text: str) -> bool:
        self._seen[key] = text
        before = self._baseline.get(key)
        return before is not None and before != text

    def toggle(self, row: VariableRow) -> bool:
        """Open or close ``row``; True when the pane must be fetched again."""
        if not row.expandable:
            return False
        key = (GLOBALS, ()) if row.scope == "header" else (row.scope, row.path)
        if key in self.expanded:
            self.expanded.discard(key)
            # Close what was open under it too: reopening shows it shut, as pudb does.
            self.expanded = {k for k in self.expanded
                             if not (k[0] == key[0] and k[1][:len(key[1])] == key[1])}
        else:
            self.expanded.add(key)
        return True

    def add_watch(self, expr: str) -> bool:
        expr = expr.strip()
        if not expr or expr in self.watches:
            return False
        self.watches.append(expr)
        return True

    def remove_watch(self, expr: str) -> bool:
        if expr in self.watches:
            self.watches.remove(expr)
            return True
        return False


class VariableLines:
    """The pane's rows as a RowList source."""

    def __init__(self, rows: list[VariableRow], empty: str = ""):
        self.rows = rows
        self.empty = empty
        self.lines = [format_row(r) for r in rows] or (
            [Text(empty, style="dim italic")] if empty else [])
        self.width = max((t.cell_len for t in self.lines), default=0)

    def __len__(self) -> int:
        return len(self.lines)

    def line(self, index: int) -> Text:
        return self.lines[index]

    def row(self, index: int) -> VariableRow | None:
        return self.rows[index] if 0 <= index < len(self.rows) else None


def format_row(row: VariableRow) -> Text:
    if row.scope == "jit-header":
        text = Text(row.name, style="bold magenta")
        text.append(f"  {row.text}", style="dim")
        return text
    if row.scope == "header":
        text = Text(("▾ " if row.expanded else "▸ ") + row.name, style="bold")
        if row.text:
            text.append(f"  {row.text}", style="dim")
        return text
    indent = "  " * (row.depth + (row.scope == GLOBALS))  # under their header
    marker = ("▾ " if row.expanded else "▸ ") if row.expandable else "  "
    if row.scope == WATCH:
        text = Text("» ", style="bold magenta")
        text.append(row.name, style="bold magenta")
        text.append(" = ")
    else:
        text = Text(indent + marker)
        text.append(row.name, style="bold")
        if row.length is not None and row.kind not in ("str", "bytes"):
            text.append(f"·{row.length}", style="dim")
        text.append(" ")
    style = _KIND_STYLE.get(row.kind, "")
    if row.changed:
        style = "bold reverse yellow"  # changed since the last stop
    text.append(row.text, style=style)
    return text
