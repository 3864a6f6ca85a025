"""Errors raised for bad input.

Every message names the op, the operands' shapes and dtypes, and the user's source line
(the first frame outside execmode), in eager and in graph mode alike.
"""

from __future__ import annotations


class ExecmodeError(Exception):
    """Base class of every error execmode raises for bad input."""


class ShapeError(ExecmodeError, ValueError):
    """Operands whose shapes do not fit the op (broadcasting, matmul, reshape, axes)."""


class IndexingError(ShapeError, IndexError):
    """An index out of range for its axis, or more indices than axes. An IndexError, as
    NumPy's and PyTorch's are; a ShapeError too, as execmode raised before it had one."""


class DTypeError(ExecmodeError, TypeError):
    """Operands whose dtypes the op does not accept."""


class DeviceError(ExecmodeError, ValueError):
    """Operands on different devices, or a device that is not available."""


class ArgumentError(ExecmodeError, TypeError):
    """A non-tensor where a tensor is needed, an unknown keyword, an attribute out of range."""


class GraphBreakError(ExecmodeError, RuntimeError):
    """A concrete value was needed where no graph break is allowed (e.g. inside fullgraph)."""


class BackwardError(ExecmodeError, RuntimeError):
    """backward() on something that has no gradient path or is not a scalar."""


def describe_operand(x) -> str:
    """``f32[3,4]@cpu`` for a tensor, ``0.5 (python float)`` for a scalar."""
    from .ops.registry import Aval
    from .tensor import Tensor

    if isinstance(x, Tensor | Aval):  # an Aval: a graph step's operand (node_error)
        return describe_array(x, x.device)
    if isinstance(x, bool | int | float):
        return f"{x!r} (python {type(x).__name__})"
    return f"{type(x).__name__}"


def describe_array(a, device) -> str:
    """``f32[3,4]@cpu`` for anything with a shape and a dtype."""
    from .dtypes import type_text

    return type_text(a.shape, a.dtype, device)


def op_error(cls, op: str, operands, problem: str, location=None) -> ExecmodeError:
    """Build the standard message: ``matmul(f32[3,4]@cpu, f32[5,6]@cpu): <problem>\n  at file:line``."""
    from .source import user_location

    loc = location if location is not None else user_location()
    args = ", ".join(describe_operand(x) for x in operands)
    msg = f"{op}({args}): {problem}"
    if loc is not None:
        msg += f"\n  at {loc}"
    err = cls(msg)
    err.op = op
    err.location = loc
    return err


def node_error(node, operands, exc: Exception) -> ExecmodeError:
    """The error eager raises when ``node``'s op fails on ``operands`` (its arrays and
    Python scalars), for a graph step that failed at run time (an index tensor's value out
    of range): the same class and message, at the user's line the node was traced from."""
    from .ops.registry import Aval, RuleError

    if isinstance(exc, ExecmodeError):
        return exc
    operands = [Aval(tuple(x.shape), x.dtype, node.device) if hasattr(x, "dtype") else x
                for x in operands]
    if isinstance(exc, RuleError):
        return op_error(exc.cls, node.op, operands, exc.problem, location=node.loc)
    # Worded as dispatch.explain_failure words an error that the op's rule did not foresee.
    text = str(exc).strip()
    problem = f"{type(exc).__name__}: {text.splitlines()[0] if text else type(exc).__name__}"
    return op_error(ExecmodeError, node.op, operands, problem, location=node.loc)
