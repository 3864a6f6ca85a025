"""The Tensor: an n-dimensional array on a device, with autograd.

Eagerly, ``_data`` is a NumPy or CuPy array. While a function is traced by ``em.jit``,
``_data`` is a :class:`~execmode.graph.trace.TracedValue` that knows only shape, dtype and
device; asking such a tensor for a concrete value (``bool``, ``item``, ``numpy``, ``print``)
breaks the graph. Operators go through ``execmode.dispatch``, so both modes share them.
"""

from __future__ import annotations

import math

import numpy as np

from .backend import CPU, device_of_array
from .dtypes import type_text
from .errors import ArgumentError, BackwardError, op_error

SCALAR_TYPES = frozenset({int, float, bool})
_ndarray = np.ndarray


class Tensor:
    """An array with a dtype, a device and (optionally) a gradient.

    Create tensors with :func:`execmode.tensor` and friends rather than this class.
    """

    # The two attributes read on every op are slots (set by whoever creates a tensor);
    # the rest default to class attributes, so the hot path sets only these two.
    __slots__ = ("_data", "requires_grad", "__dict__", "__weakref__")
    _grad = None
    _grad_fn = None
    _retains_grad = False
    _name = None
    # NumPy defers to Tensor's reflected operators instead of converting it (np.float32(2) * x).
    __array_ufunc__ = None
    __hash__ = object.__hash__

    # --- metadata ----------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._data.shape

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    @property
    def device(self):
        d = self._data
        if d.__class__ is _ndarray:
            return CPU
        dev = getattr(d, "em_device", None)  # traced values carry their device
        return dev if dev is not None else device_of_array(d)

    def _operand_text(self) -> str:
        """``f32[3,4]@cpu``: how error messages name this operand (errors.describe_operand)."""
        return type_text(self.shape, self.dtype, self.device)

    @property
    def ndim(self) -> int:
        return len(self._data.shape)

    @property
    def size(self) -> int:
        """The number of elements (the Array API's attribute). It is also callable, as
        PyTorch's method: ``x.size()`` is the shape and ``x.size(d)`` one dimension."""
        return _Size(math.prod(self._data.shape), self._data.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def is_traced(self) -> bool:
        """True while this tensor is a symbolic value inside an ``em.jit`` trace."""
        return hasattr(self._data, "materialize")

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def grad(self):
        from . import dispatch

        tracer = dispatch.current_tracer()
        if tracer is not None:
            return tracer.read_grad(self)
        return self._grad

    @grad.setter
    def grad(self, value):
        from . import dispatch

        if value is not None and not isinstance(value, Tensor):
            raise ArgumentError(f".grad must be a Tensor or None, got {type(value).__name__}")
        tracer = dispatch.current_tracer()
        if tracer is not None:
            tracer.write_grad(self, value)
        else:
            self._grad = value

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # --- concrete values (graph breaks while tracing) ------------------------------------
    def _concrete(self, reason: str):
        """The array behind this tensor; a traced tensor materializes (a graph break)."""
        d = self._data
        if d.__class__ is _ndarray:
            from . import dispatch

            if dispatch._tracing:
                # While tracing, this array may back an input the segment wrote through
                # another tensor (its new values land at the segment's end): break first.
                tracer = dispatch.current_tracer()
                if tracer is not None and tracer.stale_array(d):
                    tracer.flush_written(reason)
            return d
        if hasattr(d, "materialize"):
            return d.materialize(self, reason)
        return d

    def numpy(self) -> np.ndarray:
        """The values as a NumPy array (copied from the GPU; shared on the CPU)."""
        d = self._concrete("numpy()")
        return d if d.__class__ is _ndarray else d.get()

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy()
        return arr if dtype is None else arr.astype(dtype)

    def item(self):
        """The single value as a Python number."""
        return self._single("item")

    def tolist(self):
        return self.numpy().tolist()

    def __bool__(self) -> bool:
        if self.size != 1:
            raise op_error(ArgumentError, "bool", (self,),
                           f"the truth value of a tensor with {self.size} elements is "
                           "ambiguous; use .any() or .all()")
        return bool(self._concrete("bool()").reshape(()).item())

    def __float__(self) -> float:
        return float(self._single("float"))

    def __int__(self) -> int:
        return int(self._single("int"))

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":
            raise op_error(ArgumentError, "__index__", (self,),
                           "only integer tensors can be used as an index")
        return int(self._single("__index__"))

    def _single(self, name: str):
        if self.size != 1:
            raise op_error(ArgumentError, name, (self,),
                           f"the tensor has {self.size} elements; only one-element tensors "
                           "convert to a Python number")
        return self._concrete(f"{name}()").reshape(()).item()

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        if self.is_traced:
            self._concrete("iteration")
        for i in range(self.shape[0]):
            yield self[i]

    def __repr__(self) -> str:
        arr = self._concrete("repr()")
        arr = arr if arr.__class__ is _ndarray else arr.get()
        body = np.array2string(arr, separator=", ", prefix="tensor(", threshold=200,
                               edgeitems=3, precision=4)
        extras = []
        if self.dtype not in (np.dtype("float32"), np.dtype("int64"), np.dtype("bool")):
            extras.append(f"dtype={self.dtype}")
        if self.device != CPU:
            extras.append(f"device='{self.device}'")
        if self._grad_fn is not None:
            extras.append(f"grad_fn={self._grad_fn.op.name}")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extras) + ")"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self.size == 1 and spec:
            return format(self.item(), spec)
        return repr(self) if not spec else format(repr(self), spec)

    # --- conversion ---------------------------------------------------------------------
    def to(self, target) -> Tensor:
        """A copy on another device (``"cpu"``, ``"cuda:0"``) or, given a dtype, astype."""
        from .backend import Device

        if isinstance(target, str | Device) and not _is_dtype_name(target):
            return F.to_device(self, target)
        return F.astype(self, target)  # em.float64, np.float64, "float64", float ...

    def cpu(self) -> Tensor:
        return F.to_device(self, "cpu")

    def astype(self, dtype) -> Tensor:
        return F.astype(self, dtype)

    def detach(self) -> Tensor:
        """The same values, cut from the autograd graph."""
        from . import dispatch

        if dispatch._tracing:  # a new traced tensor sharing the storage, even a capture's
            tracer = dispatch.current_tracer()
            if tracer is not None:
                return tracer.detached(self)
        t = Tensor.__new__(Tensor)
        t._data = self._data
        t.requires_grad = False
        if hasattr(self._data, "adopt"):
            self._data.adopt(t)
        return t

    @property
    def data(self) -> Tensor:
        """PyTorch's ``.data``: the same values and memory, cut from autograd (as
        ``detach()``); writes through it change this tensor, in eager and graph mode."""
        return self.detach()

    def clone(self) -> Tensor:
        return F.copy(self)

    def requires_grad_(self, flag: bool = True) -> Tensor:
        if flag and self.dtype.kind != "f":
            raise ArgumentError(f"only floating-point tensors can require gradients, not {self.dtype}")
        if not self.is_leaf and not flag:
            raise ArgumentError("requires_grad_(False) on a non-leaf tensor; use detach()")
        self.requires_grad = bool(flag)
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` on this non-leaf tensor after backward (as in PyTorch)."""
        self._retains_grad = True

    def backward(self, gradient=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``."""
        from .autograd import backward

        if not self.requires_grad:
            raise BackwardError(
                "backward() on a tensor that does not require grad: no input of its "
                "computation had requires_grad=True (or it was computed under em.no_grad())"
            )
        backward(self, gradient)

    def zero_(self) -> Tensor:
        F.assign(self, F.zeros_like(self))
        return self

    # --- operators ----------------------------------------------------------------------
    # + - * / (and their reflections) are installed by bind_ops() with an inlined fast path.
    def __floordiv__(self, other):
        return F.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return F.floor_divide(other, self)

    def __mod__(self, other):
        return F.remainder(self, other)

    def __rmod__(self, other):
        return F.remainder(other, self)

    def __pow__(self, other):
        return F.power(self, other)

    def __rpow__(self, other):
        return F.power(other, self)

    def __matmul__(self, other):
        return F.matmul(self, other)

    def __rmatmul__(self, other):
        return F.matmul(other, self)

    def __neg__(self):
        return F.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return F.abs(self)

    def __invert__(self):
        if self.dtype != np.bool_:
            raise ArgumentError(f"~ is logical not and needs a bool tensor, not {self.dtype}")
        return F.logical_not(self)

    def __and__(self, other):
        return F.logical_and(self, other)

    def __or__(self, other):
        return F.logical_or(self, other)

    def __eq__(self, other):  # noqa: D105 - elementwise, as in NumPy
        return F.equal(self, other)

    def __ne__(self, other):
        return F.not_equal(self, other)

    def __lt__(self, other):
        return F.less(self, other)

    def __le__(self, other):
        return F.less_equal(self, other)

    def __gt__(self, other):
        return F.greater(self, other)

    def __ge__(self, other):
        return F.greater_equal(self, other)

    # In-place updates write into this tensor's buffer (optimizers: w -= lr * w.grad).
    def __iadd__(self, other):
        return F.assign(self, self + other)

    def __isub__(self, other):
        return F.assign(self, self - other)

    def __imul__(self, other):
        return F.assign(self, self * other)

    def __itruediv__(self, other):
        return F.assign(self, self / other)

    # --- indexing -----------------------------------------------------------------------
    def __getitem__(self, index):
        return F.getitem(self, index)

    def __setitem__(self, index, value):
        F.setitem(self, index, value)

    # --- shape methods ------------------------------------------------------------------
    def reshape(self, *shape):
        return F.reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int)
                         else shape)

    def transpose(self, *axes, **torch_keywords):
        """Two axes: swap them (PyTorch's ``transpose(dim0, dim1)``, for any rank, 2-D
        included). No axes: reverse them; one tuple or more than two: a permutation
        (NumPy's)."""
        if torch_keywords:
            axes = axes + tuple(torch_keywords.pop(k) for k in ("dim0", "dim1")
                                if k in torch_keywords)
            if torch_keywords:
                raise ArgumentError(f"transpose: unexpected keyword {next(iter(torch_keywords))!r}")
        if len(axes) == 2:
            return F.swapaxes(self, axes[0], axes[1])
        return F.permute_dims(self, axes[0] if len(axes) == 1 else (axes or None))

    def permute(self, *axes):
        return F.permute_dims(self, axes[0] if len(axes) == 1 else axes)

    @property
    def T(self):  # noqa: N802
        return F.permute_dims(self, None)

    @property
    def mT(self):  # noqa: N802
        return F.matrix_transpose(self)

    def flatten(self, start_axis=0, end_axis=-1, **torch_keywords):
        return F.flatten(self, start_axis, end_axis, **torch_keywords)

    def squeeze(self, axis=None, **torch_keywords):
        return F.squeeze(self, axis, **torch_keywords)

    def unsqueeze(self, axis=None, **torch_keywords):
        return F.expand_dims(self, axis, **torch_keywords)

    expand_dims = unsqueeze

    def broadcast_to(self, shape):
        return F.broadcast_to(self, shape)

    # --- reductions and common functions as methods --------------------------------------
    # They forward every argument, so PyTorch's dim=/keepdim= reach the functions that
    # accept them. PyTorch-only methods (float(), size(), masked_fill ...) are installed
    # from the table in tensor_methods.py.
    def sum(self, *args, **kwargs):
        return F.sum(self, *args, **kwargs)

    def mean(self, *args, **kwargs):
        return F.mean(self, *args, **kwargs)

    def prod(self, *args, **kwargs):
        return F.prod(self, *args, **kwargs)

    def max(self, *args, **kwargs):
        # x.max(1) is PyTorch's x.max(dim=1), the (values, indices) pair (functional/reductions.py).
        return F.max(self, *args, **kwargs)

    def min(self, *args, **kwargs):
        return F.min(self, *args, **kwargs)

    def argmax(self, *args, **kwargs):
        return F.argmax(self, *args, **kwargs)

    def argmin(self, *args, **kwargs):
        return F.argmin(self, *args, **kwargs)

    def var(self, *args, **kwargs):
        return F.var(self, *args, **kwargs)

    def std(self, *args, **kwargs):
        return F.std(self, *args, **kwargs)

    def any(self, *args, **kwargs):
        return F.any(self, *args, **kwargs)

    def all(self, *args, **kwargs):
        return F.all(self, *args, **kwargs)

    def exp(self):
        return F.exp(self)

    def log(self):
        return F.log(self)

    def sqrt(self):
        return F.sqrt(self)

    def tanh(self):
        return F.tanh(self)

    def relu(self):
        return F.relu(self)

    def sigmoid(self):
        return F.sigmoid(self)

    def abs(self):
        return F.abs(self)

    def clip(self, min=None, max=None):  # noqa: A002 - NumPy's names
        return F.clip(self, min, max)


def _is_dtype_name(text) -> bool:
    from .dtypes import as_dtype

    if not isinstance(text, str):
        return False
    try:
        as_dtype(text)
        return True
    except TypeError:
        return False


def bind_ops():
    """Install the arithmetic operators, whose eager fast path is built by dispatch."""
    from .dispatch import make_operator
    from .ops import OPS

    for dunder, name in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                         ("truediv", "divide")):
        setattr(Tensor, f"__{dunder}__", make_operator(OPS[name]))
        setattr(Tensor, f"__r{dunder}__", make_operator(OPS[name], reflected=True))

from . import functional as F  # noqa: E402 - functions call back into Tensor
from .tensor_methods import Size as _Size  # noqa: E402
from .tensor_methods import install_hints, install_methods  # noqa: E402

install_methods(Tensor)
install_hints(Tensor)
