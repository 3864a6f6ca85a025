"""The debugger: an agent that runs the script in a child process, a controller that drives
it, breakpoints with a safe condition language, and NaN/difference hunting."""

from __future__ import annotations

from .. import instrument


def breakpoint() -> None:  # noqa: A001 - the name users expect, as the builtin
    """Pause here when the script runs under execmode's debugger (``execmode tui``/``run``).

    Without a debugger attached it does nothing, so scripts keep working in plain runs and in
    CI (use the builtin ``breakpoint()`` for pdb).
    """
    for listener in instrument.listeners():
        pause = getattr(listener, "user_breakpoint", None)
        if pause is not None:
            pause()
            return
