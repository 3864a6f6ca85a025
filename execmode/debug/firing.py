"""Whether a breakpoint's condition fires: the checks the agent's Debugger inherits.

A condition is decided before an op (it names only the op's place and Python values of
its frame) or after it (on the output's statistics). Conditions on non-finite values fire
where a NaN/Inf appears, once per occurrence, not at every op that carries it on: an op
whose input already met the condition is skipped (for a kernel this is checked before it
runs, since its output may reuse an input's buffer). Evaluating never ends the script: a
condition that fails is disabled and the controller told why.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..source import user_frame
from .conditions import NONFINITE_NAMES, PlaceContext
from .headroom import with_headroom
from .pyvalues import hooks_detached
from .summary import TensorStats


class ConditionChecks:
    """Mixed into the agent's Debugger (it provides ``breakpoints``, ``_last_inputs`` and
    ``_send``)."""

    def _holds_before(self, bp, op_name, where, loc, frame) -> bool:
        """A condition that names no output statistic, decided before the op."""
        if bp.condition is None:
            return True
        return self._holds(bp, PlaceContext(op_name, where, loc), frame)

    def _carried_on(self, bp, event, output) -> bool:
        """A NaN/Inf breakpoint fires where the value appears, once, not at every op that
        only passes it on: True when an input of the op already met the condition (an
        input written in place, the output itself, does not count)."""
        if not bp.condition.names & NONFINITE_NAMES:
            return False
        frame = frame_for(bp)
        for x in self._last_inputs:
            if not isinstance(x, Tensor) or x is output or x.is_traced or \
                    x._data is output._data:
                continue
            if self._holds(bp, TensorStats(x._data, event.op, event.scope, event.location),
                           frame):
                return True
        return False

    def _kernel_inputs_met(self, plan, index, values) -> set:
        """Before a kernel runs (its output may reuse an input's buffer): the NaN/Inf
        breakpoints that its inputs already meet (see _carried_on)."""
        watching = [bp for bp in self.breakpoints.active()
                    if bp.checks_output and bp.condition.names & NONFINITE_NAMES]
        if not watching:
            return set()
        step = plan.steps[index]
        last = (step.node.body or (step.node,))[-1]
        arrays = [values[a] for a in step.args if isinstance(a, int)]
        met = set()
        for bp in watching:
            frame = frame_for(bp)
            for array in arrays:
                if hasattr(array, "dtype") and self._holds(
                        bp, TensorStats(array, last.op, last.scope, last.loc), frame):
                    met.add(bp.id)
                    break
        return met

    @with_headroom
    def _holds(self, bp, stats, frame=None) -> bool:
        """Evaluate ``bp``'s condition, its Python names in ``frame``. Parsing refused every
        mistake it can see; what is left (a MemoryError computing a statistic of a huge
        tensor, a property of the script that raises, a bug) must not end the script: the
        breakpoint is disabled and the controller told why."""
        try:
            if bp.condition.reads_attributes:
                # An attribute may be a property that runs ops: not ours to pause at or
                # record.
                with hooks_detached():
                    return bp.condition.evaluate(stats, frame)
            return bp.condition.evaluate(stats, frame)
        except Exception as exc:  # noqa: BLE001 - the script never dies of a condition
            bp.enabled = False
            where = stats.location
            at = f" at {where.filename}:{where.lineno}" if where is not None else ""
            bp.disabled_reason = (f"disabled: its condition failed on op {stats.op}{at}: "
                                  f"{type(exc).__name__}: {exc}")
            self._send({"type": "error", "id": None, "breakpoint": bp.to_json(),
                        "message": f"breakpoint {bp.id} ({bp.spec}) disabled: its condition "
                                   f"failed on op {stats.op}{at}: {type(exc).__name__}: "
                                   f"{exc}; the script goes on"})
            return False


def frame_for(bp):
    """The frame whose Python values ``bp``'s condition names (the op's user frame)."""
    if bp.condition is None or not bp.condition.python_names:
        return None
    return user_frame()
