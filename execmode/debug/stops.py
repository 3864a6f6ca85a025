"""Pause decisions: whether the script stops before an op or a kernel, and why.

The debugger's hooks (script_hooks.py) ask here at every op and kernel; what they do with
a stop (report it, serve commands) stays with the channel in debugger.py. The pdb-like
rule of ``next`` is its own class, :class:`NextRule`, so that it can be tested with real
frames and no socket (tests/debug/test_stops.py).
"""

from __future__ import annotations

from ..source import user_frame, user_location
from .firing import ConditionChecks, frame_for

_UNBOUND = object()


class NextRule:
    """What ``next`` steps over: the frame it was given in, its line and instruction, the
    frame's callers, and its local bindings when it resumed (see :meth:`hit`)."""

    def __init__(self):
        self.frame = None
        self.line = None
        self.lasti = -1
        self.callers: dict = {}
        self.locals: dict = {}

    def hit(self, frame) -> bool:
        """Does ``next`` stop at an op whose user frame is ``frame``? Like pdb: at a new line
        of the frame it was given in, at a new pass over the same line, or, once that frame
        has returned, in its caller (or higher up), never in calls made from there."""
        target = self.frame
        if target is None:
            return True
        if frame is target:
            if frame.f_lineno != self.line:
                return True
            # The same line: a new pass (a loop) jumped back before the paused instruction,
            # or ran it again after rebinding the frame's variables. Ops later on the line,
            # or several ops of one call (a composite, sum() over tensors), are not one.
            lasti = frame.f_lasti
            return lasti < self.lasti or (lasti == self.lasti
                                          and self._locals_rebound(frame))
        f = frame.f_back
        while f is not None:
            if f is target:
                return False  # deeper, inside a call made from that frame
            f = f.f_back
        # Not under the frame: it returned (or yielded). Stop only in a frame that was
        # above it, not in the functions its caller calls next.
        return self.callers.get(id(frame)) is frame

    def begin(self, frame) -> None:
        self.frame = frame
        self.line = frame.f_lineno if frame is not None else None
        self.lasti = frame.f_lasti if frame is not None else -1
        # The frames are kept alive here, so their ids stay theirs while we compare.
        callers, f = {}, frame.f_back if frame is not None else None
        while f is not None:
            callers[id(f)] = f
            f = f.f_back
        self.callers = callers
        self.locals = dict(frame.f_locals) if frame is not None else {}

    def end(self) -> None:
        self.frame, self.callers, self.locals = None, {}, {}

    def _locals_rebound(self, frame) -> bool:
        now, before = frame.f_locals, self.locals
        if len(now) != len(before):
            return True
        return any(before.get(name, _UNBOUND) is not value for name, value in now.items())


class PauseDecisions(ConditionChecks):
    """The agent's reasons to stop before an op or a kernel, in order: a requested pause
    (or the start), step, next (:class:`NextRule`), a breakpoint on the place whose
    condition holds. A mixin of the agent's ``Debugger``, whose state it reads
    (``pause_requested``, ``start_reason``, ``mode``, ``breakpoints``, ``next_rule``)."""

    def _should_pause_before(self, op_name, inputs) -> str | None:
        if self.pause_requested:
            self.pause_requested = False
            reason, self.start_reason = self.start_reason or "pause", None
            return reason
        if self.mode == "step":
            return "step"
        frame = user_frame()
        if self.mode == "next" and frame is not None and self.next_rule.hit(frame):
            return "next"
        from .. import scope

        loc = None
        for bp in self.breakpoints.active():
            if bp.checks_output or bp.kind in ("graph_break", "exception"):
                continue
            if loc is None:
                loc = user_location()
            where = scope.current_scope()
            if bp.reaches(op_name, where, loc) and \
                    self._holds_before(bp, op_name, where, loc, frame) and bp.hit():
                return f"breakpoint {bp.id}: {bp.spec}"
        return None

    def _should_pause_before_kernel(self, step) -> str | None:
        """Graph mode: a kernel is the unit, so step and next both stop at the next one; a
        breakpoint stops at the kernel that holds a member op on its place."""
        reason = None
        if self.pause_requested:
            self.pause_requested = False
            reason, self.start_reason = self.start_reason or "pause", None
        elif self.mode in ("step", "next"):
            reason = "step"
        else:
            for bp in self.breakpoints.active():
                if bp.checks_output or bp.kind in ("graph_break", "exception"):
                    continue
                members = [m for m in (step.node.body or (step.node,))]
                hit = next((m for m in members if bp.reaches(m.op, m.scope, m.loc)),
                           None)
                if hit is not None and self._holds_before(bp, hit.op, hit.scope, hit.loc,
                                                          frame_for(bp)) and bp.hit():
                    reason = f"breakpoint {bp.id}: {bp.spec}"
                    break
        return reason
