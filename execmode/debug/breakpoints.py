"""Breakpoints: where the debugger stops, set and cleared at run time.

Specs (the same on the command line, in the protocol and in the TUI):

    op:matmul                 before every matmul
    train.py:42               before any op from that line (line:train.py:42 too)
    scope:mlp/fc1             before ops in that named scope (and scopes under it)
    graph_break               when a jitted function breaks its graph
    exception                 when the script raises
    nan | inf | max > 1e3     after an op (or kernel) whose output meets the condition
    op:exp if max > 80        a place and a condition on its output
    nan and step > 100        conditions may name Python values of the op's frame
    line:train.py:42 if lr < 1e-3   (decided before the op when no output stat is named)

Every breakpoint has a hit count and an ignore count (skip the first N hits).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from ..errors import ExecmodeError
from .conditions import Condition

_LOCATION = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+)$")


class BreakpointError(ExecmodeError, ValueError):
    """A breakpoint spec that cannot be parsed."""


@dataclass
class Breakpoint:
    id: int
    spec: str
    kind: str                       # op | location | scope | graph_break | exception | tensor
    op: str | None = None
    file: str | None = None
    line: int | None = None
    scope: str | None = None
    condition: Condition | None = None
    enabled: bool = True
    hits: int = 0
    ignore: int = 0
    reached: int = 0                # its place matched (its condition was then checked)
    disabled_reason: str | None = None   # set when evaluating its condition failed

    @property
    def checks_output(self) -> bool:
        """Decided after the op ran (it needs the output's values); a condition on Python
        values and the op's place alone is decided before the op, like a place."""
        return self.condition is not None and self.condition.needs_output

    def matches_place(self, op: str, scope: str, location) -> bool:
        if self.kind == "op":
            return op == self.op
        if self.kind == "scope":
            return scope == self.scope or scope.startswith(self.scope + "/")
        if self.kind == "location":
            return location is not None and location.lineno == self.line and \
                same_file(location.filename, self.file)
        return self.kind == "tensor"

    def reaches(self, op: str, scope: str, location) -> bool:
        """matches_place, counted: a breakpoint whose place ran but never stopped can say
        that its condition was never true (reach.py)."""
        if self.matches_place(op, scope, location):
            self.reached += 1
            return True
        return False

    def hit(self) -> bool:
        """Count a hit; True when it should stop (past the ignore count)."""
        self.hits += 1
        return self.hits > self.ignore

    def to_json(self) -> dict:
        return {"id": self.id, "spec": self.spec, "kind": self.kind, "enabled": self.enabled,
                "hits": self.hits, "ignore": self.ignore, "reached": self.reached,
                "disabled_reason": self.disabled_reason,
                "condition": self.condition.text if self.condition else None,
                "python_names": sorted(self.condition.python_names) if self.condition else [],
                "notes": list(self.condition.notes) if self.condition else []}


def same_file(actual: str, wanted: str) -> bool:
    """``train.py`` matches /any/dir/train.py; a path with a directory must match its tail."""
    actual = os.path.normpath(actual)
    wanted = os.path.normpath(wanted)
    return actual == wanted or actual.endswith(os.sep + wanted)


def parse_breakpoint(spec: str, bp_id: int = 0) -> Breakpoint:
    text = spec.strip()
    if not text:
        raise BreakpointError("empty breakpoint: expected op:NAME, FILE:LINE, scope:PATH, "
                              "graph_break, exception, or a condition such as nan")
    place, _, cond_text = text.partition(" if ")
    place = place.strip()
    if place.startswith("line:"):
        place = place[5:].strip()
    condition = Condition(cond_text) if cond_text.strip() else None
    if place in ("graph_break", "break"):
        return Breakpoint(bp_id, text, "graph_break")
    if place == "exception":
        return Breakpoint(bp_id, text, "exception")
    if place.startswith("op:"):
        name = place[3:].strip()
        from ..ops import OPS

        if name not in OPS:
            raise BreakpointError(f"unknown op {name!r} in breakpoint {text!r}; ops are "
                                  + ", ".join(sorted(OPS)))
        return Breakpoint(bp_id, text, "op", op=name, condition=condition)
    if place.startswith("scope:"):
        name = place[6:].strip().strip("/")
        if not name:
            raise BreakpointError(f"breakpoint {text!r}: scope:PATH needs a path")
        return Breakpoint(bp_id, text, "scope", scope=name, condition=condition)
    m = _LOCATION.match(place)
    if m and not cond_text:
        return Breakpoint(bp_id, text, "location", file=m["file"], line=int(m["line"]))
    if m:
        return Breakpoint(bp_id, text, "location", file=m["file"], line=int(m["line"]),
                          condition=condition)
    if place.startswith("when "):
        place = place[5:]
    # Anything else is a tensor condition on every op's output.
    return Breakpoint(bp_id, text, "tensor", condition=Condition(text if not cond_text
                                                                 else place))


def check_ignore(ignore) -> int:
    """An ignore count: how many hits to skip (a whole number, 0 or more)."""
    if not isinstance(ignore, int) or isinstance(ignore, bool) or ignore < 0:
        raise BreakpointError(f"ignore count must be a whole number >= 0, not {ignore!r}")
    return ignore


@dataclass
class BreakpointSet:
    items: dict[int, Breakpoint] = field(default_factory=dict)
    next_id: int = 1

    def add(self, spec: str, ignore: int = 0, enabled: bool = True,
            bp_id: int | None = None) -> Breakpoint:
        """Parse and add ``spec``; ``bp_id`` keeps the id a breakpoint had in an earlier run."""
        if bp_id is None or bp_id in self.items:
            bp_id = self.next_id
        bp = parse_breakpoint(spec, bp_id)
        bp.ignore, bp.enabled = check_ignore(ignore), bool(enabled)
        self.items[bp.id] = bp
        self.next_id = max(self.next_id, bp_id + 1)
        return bp

    def restore(self, text: str) -> Breakpoint:
        """A breakpoint carried from an earlier run: JSON ``{id, spec, enabled, ignore}``
        and, for one the agent disabled because its condition failed, ``disabled_reason``
        (``--break-json``; parsed as data, never evaluated)."""
        try:
            state = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BreakpointError(f"--break-json: not JSON: {exc}") from None
        if not isinstance(state, dict) or not isinstance(state.get("spec"), str):
            raise BreakpointError("--break-json: expected an object with a string 'spec'")
        bp_id, enabled = state.get("id"), state.get("enabled", True)
        if bp_id is not None and (not isinstance(bp_id, int) or isinstance(bp_id, bool)
                                  or bp_id < 1):
            raise BreakpointError(f"--break-json: 'id' must be a positive integer, not {bp_id!r}")
        if not isinstance(enabled, bool):
            raise BreakpointError(f"--break-json: 'enabled' must be true or false, not "
                                  f"{enabled!r}")
        reason = state.get("disabled_reason")
        if reason is not None and not isinstance(reason, str):
            raise BreakpointError(f"--break-json: 'disabled_reason' must be a string, not "
                                  f"{reason!r}")
        bp = self.add(state["spec"], ignore=state.get("ignore", 0), enabled=enabled,
                      bp_id=bp_id)
        # Still off for the reason an earlier run found, so the list keeps saying why (a
        # reason on an enabled breakpoint would be stale: re-enabling clears it).
        bp.disabled_reason = None if enabled else reason
        return bp

    def update(self, bp_id: int, spec: str | None = None, ignore=None) -> Breakpoint:
        """A new spec (place and condition) and/or ignore count for breakpoint ``bp_id``: its
        id and enabled state stay; a new spec starts counting hits again."""
        old = self.get(bp_id)
        bp = old
        if spec is not None:
            if not isinstance(spec, str):
                raise BreakpointError(f"spec must be a string, not {spec!r}")
            bp = parse_breakpoint(spec, bp_id)
            bp.enabled, bp.ignore = old.enabled, old.ignore
        if ignore is not None:
            bp.ignore = check_ignore(ignore)
        self.items[bp_id] = bp
        return bp

    def remove(self, bp_id: int) -> None:
        if bp_id not in self.items:
            raise BreakpointError(f"no breakpoint {bp_id}")
        del self.items[bp_id]

    def get(self, bp_id: int) -> Breakpoint:
        if bp_id not in self.items:
            raise BreakpointError(f"no breakpoint {bp_id}")
        return self.items[bp_id]

    def active(self, kind: str | None = None) -> list[Breakpoint]:
        return [b for b in self.items.values() if b.enabled and (kind is None or b.kind == kind)]

    def to_json(self) -> list[dict]:
        return [b.to_json() for b in self.items.values()]
