"""Why a breakpoint has not hit (yet): the places ops ran from, and the reasons drawn
from them.

A breakpoint on a line that has run no op, or on a scope that never occurred, is not an
error (the line may run later), but silence is worse than a note: while the script runs,
such a breakpoint is *pending* and says so; when the script ends, every breakpoint that
never stopped it gets its reason (the file never ran, the line ran no op, the condition
was never true, the ignore count was not used up). The agent records places as ops and
kernels run: a set insert per op, only while a debugger listens.
"""

from __future__ import annotations

import os
import sys
import threading

from .breakpoints import Breakpoint, same_file


class PlacesSeen:
    """Files, lines and named scopes that ops (eager ops, kernels' member nodes) ran from."""

    def __init__(self) -> None:
        self.lines: set[tuple[str, int]] = set()
        self.files: set[str] = set()
        self.scopes: set[str] = set()
        # The script's thread adds, the agent's reader thread reads (list_breakpoints):
        # a new place is rare, so the lock is taken only then, and for every read.
        self._lock = threading.Lock()

    def add(self, location, scope: str) -> None:
        if location is not None:
            key = (location.filename, location.lineno)
            if key not in self.lines:
                with self._lock:
                    self.lines.add(key)
                    self.files.add(location.filename)
        if scope and scope not in self.scopes:
            with self._lock:
                self.scopes.add(scope)

    def ran_line(self, file: str, line: int) -> bool:
        with self._lock:
            return any(n == line and same_file(f, file) for f, n in self.lines)

    def ran_file(self, file: str) -> bool:
        with self._lock:
            return any(same_file(f, file) for f in self.files)

    def ran_scope(self, scope: str) -> bool:
        with self._lock:
            return any(s == scope or s.startswith(scope + "/") for s in self.scopes)

    def scope_names(self) -> list[str]:
        with self._lock:
            return sorted(self.scopes)


def pending_note(bp: Breakpoint, seen: PlacesSeen) -> str | None:
    """While the script runs: why ``bp`` cannot have hit so far (None: its place ran)."""
    if bp.hits:
        return None
    if bp.kind == "location" and not seen.ran_line(bp.file, bp.line):
        return f"pending: no op has run from {bp.file}:{bp.line} yet"
    if bp.kind == "scope" and not seen.ran_scope(bp.scope):
        return f"pending: no op has run in scope {bp.scope} yet"
    return None


def never_hit_reason(bp: Breakpoint, seen: PlacesSeen, script: str | None = None) -> str | None:
    """When the script ended: why ``bp`` never stopped it (None: it did, or it is a
    breakpoint on an event that simply did not happen: exception, graph_break)."""
    if bp.hits > bp.ignore:
        return None
    if bp.disabled_reason:
        return bp.disabled_reason
    if not bp.enabled:
        return "disabled"
    if bp.hits:
        return f"hit {bp.hits} of the {bp.ignore} hits its ignore count skips"
    if bp.kind in ("exception", "graph_break"):
        return None
    if bp.kind == "location" and not seen.ran_line(bp.file, bp.line):
        if not (seen.ran_file(bp.file) or _file_ran(bp.file, script)):
            return f"{bp.file} never ran (not the script, nor a module it imported)"
        return f"line {bp.line} of {bp.file} ran no op"
    if bp.kind == "scope" and not seen.ran_scope(bp.scope):
        named = ", ".join(seen.scope_names()[:6]) or "none"
        return f"scope {bp.scope} never occurred (scopes that did: {named})"
    if bp.kind == "op" and not bp.reached:
        return f"no {bp.op} op ran"
    if bp.condition is not None:
        times = "once" if bp.reached == 1 else f"{bp.reached} times"
        return f"condition never true ({bp.condition.text}; checked {times})"
    return "its place never ran"


def _file_ran(file: str, script: str | None) -> bool:
    """The script itself or an imported module (a file may run Python but no op)."""
    if script and same_file(os.path.abspath(script), file):
        return True
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and same_file(path, file):
            return True
    return False


def never_hit_lines(breakpoints: list[dict] | None) -> list[str]:
    """``breakpoint 2 (train.py:42) never hit: ...`` for each breakpoint (as the agent
    reports them at the end) that never stopped the script."""
    return [f"breakpoint {bp.get('id')} ({bp.get('spec')}) never hit: {bp['note']}"
            for bp in breakpoints or () if bp.get("note")]
