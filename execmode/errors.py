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


class ArgumentValueError(ExecmodeError, ValueError):
    """An argument of the right type whose value the op cannot honour (``copy=False`` where
    a copy is needed): the Array API's kind for it is ValueError."""


class GraphBreakError(ExecmodeError, RuntimeError):
    """A concrete value was needed where no graph break is allowed (e.g. inside fullgraph)."""


class BackwardError(ExecmodeError, RuntimeError):
    """backward() on something that has no gradient path or is not a scalar."""


def describe_operand(x) -> str:
    """``f32[3,4]@cpu`` for a tensor or an abstract value, ``0.5 (python float)`` for a scalar.

    Tensors and avals describe themselves (``_operand_text``): this module is the bottom of
    the engine and imports nothing of it, so it cannot ask ``isinstance(x, Tensor)``."""
    describe = getattr(type(x), "_operand_text", None)
    if describe is not None:
        return describe(x)
    if isinstance(x, bool | int | float):
        return f"{x!r} (python {type(x).__name__})"
    return f"{type(x).__name__}"


def value_text(value, limit: int = 80) -> str:
    """A value as an error message quotes it: a tensor (or abstract value) by its type
    (``a tensor f32[50,50]@cpu``), anything else by its repr cut to ``limit`` characters, so
    that a tensor passed where a number or an axis belongs never prints its values."""
    if getattr(type(value), "_operand_text", None) is not None:
        return f"a tensor {describe_operand(value)}"
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def unforeseen_failure_class(exc: Exception) -> type:
    """The class of the error an op raises for an exception its rules did not foresee
    (dispatch_checks.explain_failure eagerly, graph/interpret.node_error for a graph step): a
    value the op cannot take (NumPy's ValueError: ints to negative int powers; its
    OverflowError: a Python int a small dtype cannot hold, ``uint8 + 300``) is an
    ArgumentValueError, a ValueError as the standard's kind; anything else a plain
    ExecmodeError."""
    if isinstance(exc, ValueError | OverflowError):
        return ArgumentValueError
    return ExecmodeError
