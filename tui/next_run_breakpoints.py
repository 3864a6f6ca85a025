"""Breakpoints edited while no script runs: the list the next run (``r``) starts with.

After the script ended there is no agent to ask, but a breakpoint set then must not be
lost: it is checked with the debugger's own parser and kept, with the others, in the
bridge's list, which restart hands to the new agent (ids, enabled state, ignore counts and
why the agent disabled one included). Each function takes that list and returns the new one (or the changed entry).
"""

from __future__ import annotations

from execmode.debug.breakpoints import check_ignore, parse_breakpoint

NEXT_RUN_NOTE = "for the next run (r)"


class NoSuchBreakpoint(ValueError):
    pass


def added(breakpoints: list[dict], spec: str, ignore: int = 0) -> tuple[list[dict], dict]:
    """Parse ``spec`` (raises the parser's error) and add it with the next free id."""
    next_id = max((bp.get("id") or 0 for bp in breakpoints), default=0) + 1
    bp = parse_breakpoint(spec, next_id)
    bp.ignore = check_ignore(ignore)
    entry = dict(bp.to_json(), note=NEXT_RUN_NOTE)
    return [*breakpoints, entry], entry


def cleared(breakpoints: list[dict], bp_id: int) -> list[dict]:
    _find(breakpoints, bp_id)
    return [bp for bp in breakpoints if bp.get("id") != bp_id]


def enabled(breakpoints: list[dict], bp_id: int, on: bool) -> list[dict]:
    """On or off; turned on, the reason an earlier run disabled it goes (as the agent's
    enable_breakpoint drops it), so the next run does not carry a stale reason."""
    _find(breakpoints, bp_id)
    changed = {"enabled": on, "note": NEXT_RUN_NOTE, **({"disabled_reason": None} if on else {})}
    return [dict(bp, **changed) if bp.get("id") == bp_id else bp for bp in breakpoints]


def updated(breakpoints: list[dict], bp_id: int, spec: str | None = None,
            ignore: int | None = None) -> list[dict]:
    """A new condition (the whole spec) and/or ignore count; id and enabled state stay."""
    old = _find(breakpoints, bp_id)
    new = dict(old)
    if spec is not None:
        new.update(parse_breakpoint(spec, bp_id).to_json(), enabled=old.get("enabled", True),
                   ignore=old.get("ignore", 0))
    if ignore is not None:
        new["ignore"] = check_ignore(ignore)
    new.update(hits=0, note=NEXT_RUN_NOTE)
    return [new if bp.get("id") == bp_id else bp for bp in breakpoints]


def _find(breakpoints: list[dict], bp_id: int) -> dict:
    for bp in breakpoints:
        if bp.get("id") == bp_id:
            return bp
    raise NoSuchBreakpoint(f"no breakpoint {bp_id}")
