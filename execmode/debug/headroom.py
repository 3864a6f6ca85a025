"""Stack headroom for the debugger's hooks: a script that recurses close to Python's
recursion limit must not fail under the debugger where it runs plain.

The hooks (before/after each op and kernel) run on top of the script's own stack and need
some frames of their own: pausing, summarising tensors, evaluating a condition (at most
MAX_DEPTH levels), sending a message. Measured before this module: a script whose
deepest op ran 8 frames below the limit raised RecursionError from inside the agent, or
had its condition fail, while it ran fine without the debugger.

``@with_headroom`` raises the recursion limit by ``FRAMES`` while the agent's deep work
runs - a pause (summaries, the stack, messages, inspection, a NaN hunt) or a condition's
evaluation - in any thread (a counter under a lock; the outermost to leave puts the limit
back), so that work never counts against the script's depth. ``FRAMES`` bounds what the
agent may use; its code paths are iterative or bounded (conditions by their depth limit),
far below it. Cost: ~1 us per call (the lock is most of it), paid only when pausing or
evaluating a condition, not on the per-op path of a running script (a few shallow frames,
like the engine's own listener path).

If the script itself changes the limit while a hook is inside (it cannot: hooks run
between the script's bytecodes) or the limit cannot be put back because the hook's own
frame sits exactly at the old limit, the next hook to leave puts it back; a limit that the
script set meanwhile is never overwritten.
"""

from __future__ import annotations

import functools
import sys
import threading

FRAMES = 200


class _Headroom:
    def __init__(self):
        self.lock = threading.Lock()
        self.inside = 0
        self.restore_to: int | None = None   # the script's limit, while ours is in force
        self.ours: int | None = None         # the limit we set


_HEADROOM = _Headroom()


def with_headroom(hook):
    """Run ``hook`` with FRAMES more frames of recursion limit than the script has."""

    @functools.wraps(hook)
    def wrapper(*args, **kwargs):
        # Inline, not a method call: at the old limit, one more Python frame is what would
        # raise. The lock and the sys calls are C and push no frame.
        state = _HEADROOM
        with state.lock:
            if state.restore_to is not None and sys.getrecursionlimit() != state.ours:
                state.restore_to = state.ours = None   # the script set its own: keep it
            if state.restore_to is None:
                state.restore_to = sys.getrecursionlimit()
                state.ours = state.restore_to + FRAMES
                sys.setrecursionlimit(state.ours)
            state.inside += 1
        try:
            return hook(*args, **kwargs)
        finally:
            # Inline too: the limit can only be lowered back from a frame below it.
            with state.lock:
                state.inside -= 1
                if state.inside == 0 and state.restore_to is not None:
                    if sys.getrecursionlimit() != state.ours:
                        state.restore_to = state.ours = None  # the script set its own
                    else:
                        try:
                            sys.setrecursionlimit(state.restore_to)
                            state.restore_to = state.ours = None
                        except RecursionError:
                            pass  # this frame is at the old limit: the next hook restores

    return wrapper
