"""Argument checks shared by every family of ``execmode.functional``.

Each function normalises its arguments (tensors, numbers, axes, shapes, dtypes, devices)
before it hands one primitive to dispatch; a bad argument raises here, as an error that
names the op and the user's line, rather than deep inside NumPy. PyTorch's spellings
(``dim=``, ``keepdim=``) are merged into the Array API's here too, once for all families.
"""

from __future__ import annotations

import builtins
import operator

import numpy as np

from .._tensor import SCALAR_TYPES, Tensor
from ..backend import as_device, xp_for
from ..dispatch import apply
from ..dtypes import as_dtype, default_dtype_for
from ..errors import ArgumentError, DeviceError, DTypeError, value_text
from ..op_errors import op_error
from ..ops import OPS
from ..ops.registry import RuleError, normalize_axes, normalize_axis
from ..symbolic import SymbolicScalar


def _rule_error(op: str, inputs, exc: RuleError):
    return op_error(exc.cls, op, inputs, exc.problem)


def _device_arg(op: str, device, inputs=()) -> str:
    """The device's name, checked here so that a bad one names the op and the user's line."""
    try:
        dev = as_device(device)
        if dev.is_cuda:
            xp_for(dev)  # raises when CuPy or the GPU is missing
    except DeviceError as exc:
        raise op_error(DeviceError, op, inputs, str(exc)) from None
    return str(dev)


def _dtype_arg(op: str, dtype, inputs=()):
    try:
        return as_dtype(dtype)
    except DTypeError as exc:
        raise op_error(DTypeError, op, inputs, str(exc)) from None


def constant(value, dtype, device: str):
    """A new tensor holding the array ``value`` (what ``em.tensor`` makes)."""
    return apply(OPS["constant"], value=value, shape=value.shape, dtype=dtype, device=device)


def _tensor_arg(op: str, x, inputs=None):
    """``x`` as a tensor: a Tensor, or a Python number made into one."""
    if isinstance(x, Tensor):
        return x
    if x.__class__ in SCALAR_TYPES:
        dt = _dtype_of_data("tensor", x)
        return constant(np.array(x, dtype=dt), dt, _device_arg("tensor", None))
    raise op_error(ArgumentError, op, inputs or (x,),
                   f"expected a Tensor, got {type(x).__name__} (wrap data with em.tensor(...))")


def _require_tensor(op: str, x, inputs=None):
    """``x`` itself, which must be a Tensor (the target of an update, the model of a *_like)."""
    if isinstance(x, Tensor):
        return x
    raise op_error(ArgumentError, op, inputs or (x,),
                   f"expected a Tensor, got {type(x).__name__} (wrap data with em.tensor(...))")


def _is_int(v) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)


def _is_number(v) -> bool:
    return isinstance(v, int | float | np.integer | np.floating | np.bool_)


def _symbolic_value(op: str, name: str, v):
    """A number jit reads at every call (execmode/symbolic.py) used where the op needs its
    value (an attribute, a shape): the value, with a guard, so a change retraces.
    None for anything else."""
    if isinstance(v, SymbolicScalar):
        return v.concrete(f"{op}'s {name}")
    return None


def _int_arg(op: str, name: str, v, inputs=()) -> int:
    if not _is_int(v):
        value = _symbolic_value(op, name, v)
        if value is not None and _is_int(value):
            return int(value)
        raise op_error(ArgumentError, op, inputs, f"{name} must be an int, got {value_text(v)}")
    return size_arg(v)  # (a count from a traced size, linspace's num or topk's k, stays one)


def _number_arg(op: str, name: str, v, inputs=()):
    if not _is_number(v):
        value = _symbolic_value(op, name, v)
        if value is not None:
            return value
        raise op_error(ArgumentError, op, inputs, f"{name} must be a number, got {value_text(v)}")
    return v.item() if isinstance(v, np.generic) else v


def _bool_arg(op: str, name: str, v, inputs=()) -> bool:
    if not isinstance(v, bool | np.bool_):
        raise op_error(ArgumentError, op, inputs, f"{name} must be True or False, got {value_text(v)}")
    return bool(v)


def _tensor_list_arg(op: str, tensors) -> list:
    if not isinstance(tensors, list | tuple):
        raise op_error(ArgumentError, op, (tensors,),
                       f"expected a list or tuple of tensors, got {type(tensors).__name__}")
    if not tensors:
        raise op_error(ArgumentError, op, (), "needs at least one tensor")
    return [_tensor_arg(op, t, tuple(tensors)) for t in tensors]


def _shape_arg(shape, op: str = "full") -> tuple:
    """A shape from ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(2)``."""
    if len(shape) == 1 and not _is_int(shape[0]):
        shape = shape[0]
    if _is_int(shape):
        shape = (shape,)
    if not isinstance(shape, tuple | list) or not builtins.all(_is_int(d) for d in shape):
        raise op_error(ArgumentError, op, (), f"a shape must be a sequence of ints, got {value_text(shape)}")
    out = tuple(size_arg(d) for d in shape)
    if builtins.any(d < 0 for d in out):
        raise op_error(ArgumentError, op, (), f"negative dimension in shape {out}")
    return out


def _dtype_of_data(op: str, data):
    try:
        return default_dtype_for(data)
    except DTypeError as exc:
        raise op_error(DTypeError, op, (data,), str(exc)) from None


def _torch_axis(op, x, axis, keepdims, torch_keywords):
    """Merge PyTorch's ``dim=``/``keepdim=`` into ``axis``/``keepdims``: giving both
    spellings of one argument, or another keyword, is an error naming ``op``."""
    for key in torch_keywords:
        if key not in ("dim", "keepdim"):
            raise op_error(ArgumentError, op, (x,), f"unexpected keyword argument {key!r}")
    if "dim" in torch_keywords:
        if axis is not None:
            raise op_error(ArgumentError, op, (x,),
                           "got both axis= and its PyTorch spelling dim=; give one")
        axis = torch_keywords["dim"]
    if "keepdim" in torch_keywords:
        if keepdims is not False:
            raise op_error(ArgumentError, op, (x,),
                           "got both keepdims= and its PyTorch spelling keepdim=; give one")
        keepdims = torch_keywords["keepdim"]
    return axis, keepdims


def _axes(op, x, axis):
    try:
        return normalize_axes(axis, x.ndim)
    except RuleError as exc:
        raise _rule_error(op, (x,), exc) from None


def _one_axis_keyword(op, x, axis, torch_keywords, default=None):
    """``axis``, or PyTorch's ``dim=`` in its place (both given, or another keyword, is an
    error naming ``op``)."""
    for key in torch_keywords:
        if key != "dim":
            raise op_error(ArgumentError, op, (x,), f"unexpected keyword argument {key!r}")
    if "dim" in torch_keywords:
        if axis is not default:
            raise op_error(ArgumentError, op, (x,),
                           "got both axis= and its PyTorch spelling dim=; give one")
        return torch_keywords["dim"]
    if axis is None and default is None and op == "expand_dims":
        raise op_error(ArgumentError, op, (x,), "missing the axis (or dim=) to insert")
    return axis


def normalize_axis_for(op: str, x, axis) -> int:
    """One axis of ``x``, non-negative; a bad one is an error that names ``op``."""
    try:
        return normalize_axis(axis, x.ndim)
    except RuleError as exc:
        raise _rule_error(op, (x,), exc) from None


def size_arg(d) -> int:
    """An int that may be a size: a traced size's expression (symbolic_sizes.SymInt, an
    int) is kept, so that a size-generic plan evaluates it at each call (``x.shape[0] //
    2``); turned into a plain int, one graph would serve sizes it is wrong for."""
    return d if isinstance(d, int) and d.__class__ is not bool else operator.index(d)


def _shape_like(shape) -> tuple:
    """A shape's ints, a traced size's expression kept (size_arg)."""
    if isinstance(shape, int | np.integer):
        return (size_arg(shape),)
    try:
        return tuple(size_arg(d) for d in shape)
    except TypeError:
        raise RuleError(f"a shape must be a sequence of ints, got {value_text(shape)}",
                        ArgumentError) from None


_UNSET = object()


def _axis_of(op, x, axis, kwargs, default=-1):
    """The axis given as ``axis=`` or PyTorch's ``dim=`` (not both), normalised; and any
    keywords left over, which are refused."""
    if "dim" in kwargs:
        if axis is not _UNSET:
            raise op_error(ArgumentError, op, (x,),
                           "got both axis= and its PyTorch spelling dim=; give one")
        axis = kwargs.pop("dim")
    if kwargs:
        raise op_error(ArgumentError, op, (x,),
                       f"unexpected keyword argument {next(iter(kwargs))!r}")
    axis = default if axis is _UNSET else axis
    return axis if axis is None else normalize_axis_for(op, x, axis)
