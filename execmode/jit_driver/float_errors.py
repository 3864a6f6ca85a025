"""A plan run as the kernels run it: Inf/NaN, whatever ``np.seterr`` asks of NumPy.

A compiled C kernel never raises on a division by zero or an overflow, nor does the C fast
entry's direct ufunc loop; a plan step that calls NumPy (a ufunc step, the interpreter,
the numpy backend) raises FloatingPointError under ``np.seterr(all="raise")``, and
Plan.run turns that into eager's error. So that every replay tier gives the same answer
(docs/architecture.md, "Paths"), such a failure runs the plan again with NumPy's errors
ignored. Nothing was written yet: a plan applies its assigns after its last step.
"""

from __future__ import annotations

import numpy as np

from ..errors import ExecmodeError


def run_plan(plan, arrays: list) -> list:
    """``plan.run(arrays)``, again with NumPy's floating-point errors ignored when a step
    failed with one. A plan with collectives runs once, errors ignored from the start: a
    second run would repeat its collectives on this rank only."""
    if plan.collectives:
        with np.errstate(all="ignore"):
            return plan.run(arrays)
    try:
        return plan.run(arrays)
    except ExecmodeError as exc:
        if not from_floating_point_error(exc):
            raise
    with np.errstate(all="ignore"):
        return plan.run(arrays)


def from_floating_point_error(exc: BaseException) -> bool:
    """Whether ``exc`` (eager's error for a failed step) was NumPy's FloatingPointError."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, FloatingPointError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False
