"""The standard message of an error about an op's operands: the op, each operand's
shape, dtype and device, the problem, and the user's line (source.py finds it).
errors.py keeps the classes and imports nothing of execmode."""

from __future__ import annotations

from .errors import ExecmodeError, describe_operand
from .source import user_location


def op_error(cls, op: str, operands, problem: str, location=None) -> ExecmodeError:
    """The standard message: ``matmul(f32[3,4]@cpu, f32[5,6]@cpu): <problem>`` and, on the
    next line, ``at file:line`` (the user's, unless ``location`` is given)."""
    loc = location if location is not None else user_location()
    args = ", ".join(describe_operand(x) for x in operands)
    msg = f"{op}({args}): {problem}"
    if loc is not None:
        msg += f"\n  at {loc}"
    err = cls(msg)
    err.op = op
    err.location = loc
    return err
