"""The op registry: every primitive op is defined once, here and in the sibling tables.

An :class:`OpDef` carries everything each part of execmode needs about an op:

* ``impl(xp, *arrays, **attrs)``: the eager implementation over NumPy or CuPy;
* ``shape_rule(*avals, **attrs)``: output shape (used while tracing, and to explain errors);
* ``dtype_rule``: output dtype; by default NumPy's own answer (probed once and cached), so
  eager and traced tensors always agree on dtypes;
* ``vjp(g, out, inputs, attrs)``: gradients written with execmode ops, so backward runs
  eagerly and traces into graphs alike;
* ``template``: for elementwise ops, the scalar expression the kernel renderers print
  (``{0}``, ``{1}`` are operands, ``{sfx}`` the dtype suffix of the computation).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..backend import Device
from ..dtypes import SUPPORTED, type_text
from ..errors import (
    ArgumentError,
    ArgumentValueError,
    DTypeError,
    IndexingError,
    ShapeError,
    value_text,
)

# Op kinds. Fusion and codegen look only at these.
UNARY = "unary"
BINARY = "binary"
TERNARY = "ternary"
REDUCTION = "reduction"
MATMUL = "matmul"
MOVEMENT = "movement"
CREATION = "creation"
INDEXING = "indexing"
OPAQUE = "opaque"
ELEMENTWISE_KINDS = (UNARY, BINARY, TERNARY)


class Aval(NamedTuple):
    """An abstract value: what is known about a tensor without its data."""

    shape: tuple
    dtype: np.dtype
    device: Device

    def _operand_text(self) -> str:
        """``f32[3,4]@cpu``: how errors name a graph step's operand (errors.describe_operand)."""
        return type_text(self.shape, self.dtype, self.device)


@dataclass(frozen=True, eq=False)
class OpDef:
    name: str
    kind: str
    impl: Callable
    shape_rule: Callable
    dtype_rule: Callable | None = None
    vjp: Callable | None = None
    template: str | None = None
    # Eager fast path for elementwise ops: the NumPy ufunc (CuPy arrays dispatch through it).
    ufunc: object = None
    # Float functions (exp, log, tanh ...): the NumPy ufunc the op is on float operands of
    # the output's dtype (ints and bools are cast first, so ``ufunc`` stays None for them).
    float_ufunc: object = None
    # The vjp reads the op's output (exp, sqrt, tanh, ...): autograd keeps it.
    saves_output: bool = False
    # Impure ops (random numbers) are never folded, CSE'd or replayed from a constant.
    impure: bool = False
    # The output shape depends on input *values* (nonzero, boolean masks): a graph break.
    data_dependent_shape: bool = False
    # Inputs that are indices or conditions: no gradient flows into them.
    nondiff_inputs: tuple = ()
    # Input *values* can make the op raise (an index out of range): graph mode keeps it even
    # when nothing reads its result, so it raises where eager does (passes/dce.py).
    may_raise: bool = False
    # Talks to other processes (an MPI collective): impure as above, and run exactly once
    # per call, in program order, on every rank. Nothing may re-run it on one rank (the
    # interpreter refuses; replays that retry a failed plan skip such plans), since the
    # other ranks would not take part (execmode/distributed/graph_ops.py).
    collective: bool = False
    doc: str = ""
    _dtype_cache: dict = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    @property
    def is_elementwise(self) -> bool:
        return self.kind in ELEMENTWISE_KINDS


OPS: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in OPS:
        raise ValueError(f"op {op.name!r} is defined twice")
    OPS[op.name] = op
    return op


def get_op(name: str) -> OpDef:
    return OPS[name]


class _LazyModule:
    """``F.add`` resolved on use: vjp rules call the function API, which needs this table."""

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr):
        # The module once imported: a backward pass reads F.<name> a few hundred times,
        # and import_module costs ~1.5 us a call. Attributes stay live (monkeypatching
        # the module is seen).
        module = self._module
        if module is None:
            import importlib

            module = importlib.import_module(self._name)
            if getattr(module, "__spec__", None) is not None and not getattr(
                    module.__spec__, "_initializing", False):
                self._module = module
        return getattr(module, attr)


F = _LazyModule("execmode.functional")


# --- shared shape helpers -------------------------------------------------------------

class RuleError(Exception):
    """Raised by shape/dtype rules; dispatch turns it into an ExecmodeError with context."""

    def __init__(self, problem: str, cls=ShapeError):
        super().__init__(problem)
        self.problem = problem
        self.cls = cls


def broadcast_shapes(*shapes) -> tuple:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            if len(s) >= -i:
                d = s[i]
                if d == 1:
                    continue
                if size != 1 and d != size:
                    raise RuleError(
                        "shapes " + ", ".join(str(tuple(s)) for s in shapes)
                        + f" cannot be broadcast together (dimension {i}: {size} vs {d})"
                    )
                size = d
        out.append(size)
    return tuple(out)


def normalize_axis(axis: int, ndim: int) -> int:
    if not isinstance(axis, int | np.integer) or isinstance(axis, bool):
        raise RuleError(f"axis must be an int, got {value_text(axis)}", ArgumentError)
    # A rank-0 tensor accepts axis 0 and -1, as in PyTorch.
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        # IndexingError: a ShapeError and an IndexError, as NumPy's AxisError is both
        raise RuleError(f"axis {axis} is out of range for a tensor of rank {ndim}",
                        IndexingError)
    return int(axis) % ndim if ndim else 0


def normalize_axes(axis, ndim: int) -> tuple:
    """``None`` -> all axes; an int or a sequence -> a sorted tuple of non-negative axes."""
    # Every reduction asks this on every eager call (~0.5-1.8 us for None or -1): the
    # answers for None, an int and a tuple of ints are kept. Exact types only, so that
    # True (== 1) still gets its error; an error is not kept (lru_cache keeps answers).
    if axis is None or axis.__class__ is int or (
            axis.__class__ is tuple and all(a.__class__ is int for a in axis)):
        return _normalized_axes(axis, ndim)
    return _normalize_axes(axis, ndim)


@functools.lru_cache(maxsize=1024)
def _normalized_axes(axis, ndim: int) -> tuple:
    return _normalize_axes(axis, ndim)


def _normalize_axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int | np.integer) and not isinstance(axis, bool):
        axis = (axis,)
    if not isinstance(axis, tuple | list):
        raise RuleError("axis must be None, an int or a tuple of ints, got "
                        f"{value_text(axis)}",
                        ArgumentError)
    axes = tuple(normalize_axis(a, ndim) for a in axis)
    if len(set(axes)) != len(axes):
        raise RuleError(f"axis {tuple(axis)} repeats an axis")
    if ndim == 0:
        # A rank-0 tensor accepts axis 0 or -1 (as in PyTorch) but has no axis to reduce.
        return ()
    return tuple(sorted(axes))


def probe_dtype(op: OpDef, dtypes: tuple, attrs: dict, scalars: tuple = ()) -> np.dtype:
    """Ask NumPy what dtype the eager impl produces for these input dtypes (cached).

    ``scalars`` holds the Python types of weak scalar operands (in input order, with
    ``None`` for tensors), so ``f32 * 0.5`` stays f32 exactly as NumPy decides it.
    """
    key = (dtypes, scalars, tuple(sorted((k, _hashable(v)) for k, v in attrs.items())))
    hit = op._dtype_cache.get(key)
    if hit is not None:
        return hit
    args = []
    it = iter(dtypes)
    for s in scalars or (None,) * len(dtypes):
        args.append(np.ones((1,), dtype=next(it)) if s is None else s(1))
    try:
        with np.errstate(all="ignore"):
            out = op.impl(np, *args, **_probe_attrs(op, attrs))
    except RuleError:
        raise  # the impl's own refusal (check_supported): the words eager's error has
    except Exception as exc:  # NumPy refused these dtypes (e.g. subtract on bool)
        raise RuleError(f"unsupported dtypes: {_numpy_reason(exc)}", DTypeError) from None
    dt = np.asarray(out).dtype
    if dt not in SUPPORTED:
        raise RuleError(f"produces unsupported dtype {dt}", DTypeError)
    op._dtype_cache[key] = dt
    return dt


def infer_aval(op: OpDef, operands, attrs: dict, device=None) -> Aval:
    """Output Aval of ``op`` for operands that are Avals or Python scalars (RuleError if
    they do not fit). ``device`` is used when no operand is a tensor (creation ops)."""
    avals = [x if isinstance(x, Aval) else Aval((), np.result_type(type(x)), None)
             for x in operands]
    shape = tuple(op.shape_rule(*avals, **attrs))
    dtypes = tuple(x.dtype for x in operands if isinstance(x, Aval))
    if op.dtype_rule is not None:
        dtype = op.dtype_rule(dtypes, attrs)
    else:
        scalars = tuple(None if isinstance(x, Aval) else type(x) for x in operands)
        dtype = probe_dtype(op, dtypes, attrs, scalars if len(dtypes) != len(operands) else ())
    if (op.kind == BINARY or op.name == "index_put") and np.dtype(dtype).kind in "iu" \
            and dtypes:
        _check_python_ints(operands, np.dtype(dtype))
    dev = next((x.device for x in operands if isinstance(x, Aval)), None) or device
    return Aval(shape, dtype, dev)


def _check_python_ints(operands, dtype) -> None:
    """A Python int operand of a binary op on integer tensors must fit their dtype: NumPy's
    binary ufuncs raise OverflowError for ``uint8 + 300`` or ``uint32 - (-1)``, and so does
    its indexed write ``x[0] = -1`` (index_put); np.where does not: it wraps, and so does a
    masked write functionalized into where. Checked here, from
    the value alone, so that a graph raises at trace time as eager does when it runs,
    also where the op's result is unused (dead code that a pass would drop)."""
    info = np.iinfo(dtype)
    for x in operands:
        if x.__class__ is int and not info.min <= x <= info.max:
            raise RuleError(f"OverflowError: Python integer {x} out of bounds for {dtype}",
                            ArgumentValueError)


def _probe_attrs(op: OpDef, attrs: dict) -> dict:
    # Reductions are probed on rank-1 dummies: their dtype never depends on the axes, so
    # they reduce everything.
    if op.kind == REDUCTION:
        return dict(attrs, axis=None)
    return attrs


def _numpy_reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, np.ndarray):
        return (v.shape, v.dtype.str, v.tobytes())
    return v
