"""Tensor methods that call up into the engine, installed onto Tensor from tables.

``_tensor.py`` sits below dispatch, autograd and the function API, which all build on it,
so the methods that call them are defined here and installed once the engine is loaded
(``install(Tensor)``, called by ``execmode/api.py``), as JAX's
``register_jax_array_methods()`` does. Most are one-line calls of the function API with the
tensor first, so they are tables (``tensor_method_tables.py``: ``UNARY``, ``BINARY``,
``REFLECTED``, ``FORWARDED``), not dozens of methods; the rest, with bodies of their own,
are the methods of ``_EngineMethods``. Until install() runs, Tensor holds a placeholder
under each of these names (``_tensor.py``) that loads the engine on first use. The Array
API spellings (``astype``, ``axis=``, ``x.size`` as an attribute) stay primary; PyTorch's
sit beside them.
"""

from __future__ import annotations

import numpy as np

from . import dispatch, dtypes
from . import functional as F
from ._tensor import Tensor, UntilTheEngineLoads
from .aliases import tensor_attribute_error, tensor_hint_names
from .autograd import backward as _backward
from .backend import Device
from .dispatch import counting_operator, make_operator
from .dtypes import is_dtype_name
from .errors import ArgumentError, BackwardError, ShapeError, op_error
from .nn import functional as NF
from .ops import OPS
from .tensor_method_tables import (
    BINARY,
    CASTS,
    FAST_OPERATORS,
    FORWARDED,
    IN_PLACE,
    IN_PLACE_NN,
    REFLECTED,
    UNARY,
    UNARY_NN,
    WITH_BODIES,
    WITH_TORCH_BODIES,
)

_ndarray = np.ndarray

def _spelled(fn) -> str:
    prefix = "em.nn.functional" if fn.__module__ == NF.__name__ else "em"
    return f"{prefix}.{fn.__name__}"


def _unary(name, fn):
    def method(self):
        return fn(self)
    return _named(method, name, f"``{_spelled(fn)}(x)``.")


def _binary(name, fn):
    def method(self, other):
        return fn(self, other)
    return _named(method, name, f"``em.{fn.__name__}(x, other)``.")


def _reflected(name, fn):
    def method(self, other):
        return fn(other, self)
    return _named(method, name, f"``em.{fn.__name__}(other, x)``.")


def _forwarded(name, fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    return _named(method, name, f"``em.{fn.__name__}(x, ...)``.")


def _in_place(name, fn):
    def method(self):
        return F.assign(self, fn(self))
    return _named(method, name, f"``{_spelled(fn)}(x)`` written into x (in place).")


def _cast(name, dtype):
    def method(self):
        return F.astype(self, dtype, copy=False)  # x.float() of a float32 x is x, as torch's
    return _named(method, name, f"``astype({dtype})`` (PyTorch's spelling).")


def _named(method, name, doc):
    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = doc
    return method


class _EngineMethods:
    """Tensor methods with bodies of their own (written as methods for reading; install()
    copies them onto Tensor)."""

    # --- autograd and the tracer -------------------------------------------------------
    @property
    def grad(self):
        tracer = dispatch.current_tracer()
        if tracer is not None:
            return tracer.read_grad(self)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None and not isinstance(value, Tensor):
            raise ArgumentError(f".grad must be a Tensor or None, got {type(value).__name__}")
        tracer = dispatch.current_tracer()
        if tracer is not None:
            tracer.write_grad(self, value)
        else:
            self._grad = value

    def backward(self, gradient=None, retain_graph=None, create_graph=False,
                 inputs=None) -> None:
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``. As in PyTorch, the
        values the graph saved for backward are freed afterwards: a second backward
        through it needs ``retain_graph=True`` the first time. ``create_graph`` (a
        differentiable backward) and ``inputs`` are not supported."""
        if create_graph:
            raise ArgumentError("backward(create_graph=True) is not supported: execmode's "
                                "backward is not itself differentiable")
        if inputs is not None:
            raise ArgumentError("backward(inputs=...) is not supported: call backward() "
                                "and read the .grad of the tensors you want")
        if not self.requires_grad:
            raise BackwardError(
                "backward() on a tensor that does not require grad: no input of its "
                "computation had requires_grad=True (or it was computed under em.no_grad())"
            )
        _backward(self, gradient, bool(retain_graph))

    def _concrete(self, reason: str):
        """The array behind this tensor; a traced tensor materializes (a graph break)."""
        d = self._data
        if d.__class__ is _ndarray:
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

    def detach(self) -> Tensor:
        """The same values, cut from the autograd graph."""
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

    # --- conversion ---------------------------------------------------------------------
    def to(self, *args, **kwargs) -> Tensor:
        """A copy on another device (``"cpu"``, ``"cuda:0"``), of another dtype, or both:
        PyTorch's ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other)`` (its
        device and dtype) and ``to(device=, dtype=)``; ``non_blocking``, ``copy`` and
        ``memory_format`` are accepted. The tensor itself when nothing changes (and
        ``copy`` is False)."""
        device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        force_copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise ArgumentError(f"to(): unexpected keyword argument {next(iter(kwargs))!r}")
        for arg in args:
            if isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            elif isinstance(arg, Device) or (isinstance(arg, str) and not is_dtype_name(arg)):
                device = arg
            elif arg is not None:
                dtype = arg  # em.float64, np.float64, "float64", float ...
        out = self
        if device is not None:
            out = F.to_device(out, device)
        if dtype is not None:
            out = F.astype(out, dtype, copy=False)
        return F.copy(out) if force_copy and out is self else out

    def cpu(self) -> Tensor:
        return F.to_device(self, "cpu")

    # --- in place: writes into this tensor's buffer (optimizers: w -= lr * w.grad) ------
    def zero_(self) -> Tensor:
        F.assign(self, F.zeros_like(self))
        return self

    def __iadd__(self, other):
        return F.assign(self, self + other)

    def __isub__(self, other):
        return F.assign(self, self - other)

    def __imul__(self, other):
        return F.assign(self, self * other)

    def __itruediv__(self, other):
        return F.assign(self, self / other)

    def __setitem__(self, index, value):
        F.setitem(self, index, value)

    def __invert__(self):
        # bitwise not of ints, logical not of bools (bitwise_invert raises for floats)
        return F.bitwise_invert(self)

    # --- shape --------------------------------------------------------------------------
    def reshape(self, *shape):
        return F.reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int)
                         else shape)

    def view(self, *shape):
        """PyTorch's ``view``: a reshape (a view where the layout allows it)."""
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

    def t(self):
        """Transpose of a tensor of rank <= 2 (PyTorch's ``t()``)."""
        if self.ndim > 2:
            raise op_error(ShapeError, "t", (self,),
                           "t() needs rank <= 2; use transpose(dim0, dim1) or mT")
        return F.permute_dims(self, None) if self.ndim == 2 else self

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The array behind the tensor, exported through DLPack (NumPy's or CuPy's own
        ``__dlpack__``: it shares the memory). A traced tensor is read first (a graph
        break)."""
        asked = {"stream": stream, "max_version": max_version, "dl_device": dl_device,
                 "copy": copy}
        data = self._concrete("__dlpack__")
        return data.__dlpack__(**{k: v for k, v in asked.items() if v is not None})

    def __dlpack_device__(self):
        """(device type, device id) in DLPack's numbering: (1, 0) for the CPU."""
        return self._concrete("__dlpack_device__").__dlpack_device__()

    def __complex__(self) -> complex:
        """The single value as a Python complex (a one-element tensor, as float())."""
        return complex(self.item())

    def to_device(self, device, /, *, stream=None):
        """The Array API's ``x.to_device(device)``: ``x`` on ``device`` (itself when it is
        there); only ``stream=None`` is taken."""
        return F.to_device(self, device, stream=stream)

    def contiguous(self):
        """As PyTorch's: the tensor itself when its layout is C-contiguous, else a
        contiguous copy (``x.t().contiguous()``), so a write to the result reaches ``x``
        exactly when it would in PyTorch. Under jit the layout is the traced value's proxy
        (graph/views.py)."""
        data = self._data
        layout = getattr(data, "proxy", data)
        flags = getattr(layout, "flags", None)
        if flags is None or flags.c_contiguous:
            return self
        return self.clone()

    def expand_as(self, other):
        """PyTorch's ``expand_as``: ``expand`` to ``other``'s shape."""
        return F.expand(self, *other.shape)

    # --- PyTorch's spellings -------------------------------------------------------------
    def dim(self) -> int:
        """The rank (PyTorch's ``dim()``; the Array API's ``ndim``)."""
        return self.ndim

    def numel(self) -> int:
        """The number of elements (PyTorch's ``numel()``; the Array API's ``size``)."""
        return int(self.size)

    def clamp_min(self, min):  # noqa: A002 - PyTorch's name
        return F.clamp(self, min=min)

    def clamp_max(self, max):  # noqa: A002 - PyTorch's name
        return F.clamp(self, max=max)

    def sort(self, dim=-1, descending=False, stable=True):
        """PyTorch's ``x.sort(dim)``: always the ``(values, indices)`` pair (``em.sort(x)``,
        the Array API function, returns the values unless given ``dim=``)."""
        return F.sort(self, descending=descending, stable=stable, dim=dim)

    def where(self, condition, other):
        """PyTorch's ``x.where(condition, y)``: x where the condition holds, else y."""
        return F.where(condition, self, other)

    def softmax(self, dim=-1):
        return NF.softmax(self, dim)

    def log_softmax(self, dim=-1):
        return NF.log_softmax(self, dim)


_TORCH_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor",
                     "int32": "IntTensor", "bool": "BoolTensor"}


def _torch_type_name(dtype, device) -> str:
    prefix = "torch.cuda." if device.is_cuda else "torch."
    return prefix + _TORCH_TYPE_NAMES[str(dtype)]


def _dtype_of_type_name(name: str):
    """``"torch.LongTensor"`` (or ``"torch.cuda.LongTensor"``) -> int64."""
    short = name.rsplit(".", 1)[-1]
    for dtype, tensor_name in _TORCH_TYPE_NAMES.items():
        if short == tensor_name:
            return getattr(dtypes, dtype if dtype != "bool" else "bool_")
    raise ArgumentError(f"type({name!r}): not a tensor type execmode has; use one of "
                        + ", ".join(f"'torch.{n}'" for n in _TORCH_TYPE_NAMES.values()))


def _var_or_std(fn, x, dim, unbiased, keepdim, correction, array_api):
    """x.var()/x.std(): PyTorch's default (N - 1) in PyTorch's spelling (no axis, a
    positional or ``dim=``); the Array API's (N) with ``axis=``/``keepdims=``, as em.var."""
    if array_api:
        extra = set(array_api) - {"axis", "keepdims"}
        if extra:
            raise ArgumentError(f"{fn.__name__}: unexpected keyword argument {extra.pop()!r}")
        if dim is not None or unbiased is not None or keepdim:
            raise ArgumentError(f"{fn.__name__}: give axis=/keepdims= (the Array API's) or "
                                "dim/unbiased/keepdim (PyTorch's), not both")
        return fn(x, axis=array_api.get("axis"), keepdims=array_api.get("keepdims", False),
                  correction=correction)
    if isinstance(unbiased, bool):
        if correction is not None:
            raise ArgumentError(f"{fn.__name__}: got both unbiased and correction; give one")
        correction = int(unbiased)
    return fn(x, axis=dim, keepdims=keepdim, correction=1 if correction is None else correction)


class _PyTorchMethods:
    """PyTorch's tensor methods that the Array API has no spelling for: in-place updates
    (``x.add_(y)``, ``x.masked_fill_(m, v)``: writes through :func:`execmode.assign`, so
    they are assign nodes under jit), ``type``, ``new_*``, ``view_as`` and ``var``/``std``
    with PyTorch's default."""

    def view_as(self, other):
        """PyTorch's ``view_as``: ``view`` to ``other``'s shape."""
        return F.reshape(self, other.shape)

    def type(self, dtype=None, non_blocking=False):
        """PyTorch's ``type``: without an argument, the type's name (``'torch.FloatTensor'``);
        with a dtype (or such a name), the tensor cast to it."""
        if dtype is None:
            return _torch_type_name(self.dtype, self.device)
        if isinstance(dtype, str) and dtype.startswith("torch."):
            dtype = _dtype_of_type_name(dtype)
        return F.astype(self, dtype, copy=False)

    def type_as(self, other):
        """Cast to ``other``'s dtype (PyTorch's ``type_as``)."""
        return F.astype(self, other.dtype, copy=False)

    def nelement(self) -> int:
        """The number of elements (PyTorch's alias of ``numel()``)."""
        return int(self.size)

    def ndimension(self) -> int:
        """The rank (PyTorch's alias of ``dim()``)."""
        return self.ndim

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the layout is C-contiguous (what ``contiguous()`` would keep)."""
        data = self._data
        flags = getattr(getattr(data, "proxy", data), "flags", None)
        return flags is None or bool(flags.c_contiguous)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """Zeros of ``size`` with this tensor's dtype and device unless given."""
        return self.new_full(F.arguments._shape_arg(size, "new_zeros"), 0, dtype=dtype,
                             device=device, requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return self.new_full(F.arguments._shape_arg(size, "new_ones"), 1, dtype=dtype,
                             device=device, requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """Like ``new_zeros`` (execmode's new tensors are always initialised)."""
        return self.new_full(F.arguments._shape_arg(size, "new_empty"), 0, dtype=dtype,
                             device=device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        return F.full(size, fill_value, dtype=self.dtype if dtype is None else dtype,
                      device=self.device if device is None else device,
                      requires_grad=requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        return F.tensor(data, dtype=self.dtype if dtype is None else dtype,
                        device=self.device if device is None else device,
                        requires_grad=requires_grad)

    def cuda(self, device=None, non_blocking=False):
        """A copy on the GPU (``"cuda"`` or ``"cuda:N"``); a DeviceError that says why
        where there is none."""
        target = "cuda" if device is None else (
            f"cuda:{device}" if isinstance(device, int) else device)
        return F.to_device(self, target)

    def pin_memory(self, device=None):
        """The tensor itself: execmode has no pinned host memory (a later ``.to("cuda")``
        copies from ordinary memory)."""
        return self

    @property
    def is_cuda(self) -> bool:
        return self.device.is_cuda

    def get_device(self) -> int:
        """The GPU's index, or -1 on the CPU (PyTorch's answer)."""
        return self.device.index if self.device.is_cuda else -1

    def add(self, other, *, alpha=1):
        """``x + alpha * other`` (PyTorch's ``add``)."""
        return self + (other if alpha == 1 else other * alpha)

    def sub(self, other, *, alpha=1):
        """``x - alpha * other`` (PyTorch's ``sub``)."""
        return self - (other if alpha == 1 else other * alpha)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, **array_api):
        """Variance. In PyTorch's spelling (``x.var()``, ``x.var(1)``, ``dim=``) PyTorch's
        default, dividing by N - 1; with ``axis=``/``keepdims=`` the Array API's, N (as
        :func:`execmode.var`). ``correction=`` or ``unbiased=`` always win."""
        return _var_or_std(F.var, self, dim, unbiased, keepdim, correction, array_api)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, **array_api):
        """Standard deviation, with the same defaults as :meth:`var`."""
        return _var_or_std(F.std, self, dim, unbiased, keepdim, correction, array_api)

    def unbind(self, dim=0):
        """The slices along ``dim``, as a tuple (each without that axis)."""
        axis = F.normalize_axis_for("unbind", self, dim)
        return tuple(self[(slice(None),) * axis + (i,)] for i in range(self.shape[axis]))

    def narrow(self, dim, start, length):
        """The slice ``start : start + length`` along ``dim`` (a view)."""
        axis = F.normalize_axis_for("narrow", self, dim)
        start = start + self.shape[axis] if start < 0 else start
        return self[(slice(None),) * axis + (slice(start, start + length),)]

    def lerp(self, end, weight):
        """``x + weight * (end - x)``."""
        return self + weight * (end - self)

    # --- in place: each writes the out-of-place result back with assign -----------------
    def lerp_(self, end, weight):
        """``lerp`` written into this tensor (an exponential moving average's update)."""
        return F.assign(self, self.lerp(end, weight))

    def addcmul_(self, tensor1, tensor2, *, value=1):
        """``x += value * tensor1 * tensor2`` (optimizers' moment updates)."""
        return F.assign(self, self + value * tensor1 * tensor2)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        """``x += value * tensor1 / tensor2`` (Adam's parameter update)."""
        return F.assign(self, self + value * tensor1 / tensor2)

    def clamp_min_(self, min):  # noqa: A002
        return F.assign(self, F.clamp(self, min=min))

    def clamp_max_(self, max):  # noqa: A002
        return F.assign(self, F.clamp(self, max=max))

    def index_fill_(self, dim, index, value):
        """Write ``value`` into the slices at ``index`` along ``dim``."""
        axis = F.normalize_axis_for("index_fill_", self, dim)
        self[(slice(None),) * axis + (index,)] = value
        return self

    def bernoulli_(self, p=0.5, *, generator=None):
        """Overwrite with 1 (probability ``p``, a number or a tensor) or 0, drawn from
        execmode's seeded generator."""
        _no_generator("bernoulli_", generator)
        u = F._random("random_uniform", self.shape, dtypes.float64, self.device, False,
                      low=0.0, high=1.0)
        return F.assign(self, F.astype(F.less(u, p), self.dtype))

    def fill_(self, value):
        """Write ``value`` (a number or a 0-d tensor) into every element."""
        if isinstance(value, Tensor):
            return F.assign(self, F.astype(F.broadcast_to(value, self.shape), self.dtype))
        return F.assign(self, F.full_like(self, value))

    def copy_(self, src, non_blocking=False):
        """Write ``src`` (broadcast, cast to this dtype and device) into this tensor."""
        src = src if isinstance(src, Tensor) else F.tensor(src)
        return F.assign(self, F.to_device(F.astype(src, self.dtype), self.device))

    def add_(self, other, *, alpha=1):
        return F.assign(self, self.add(other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        return F.assign(self, self.sub(other, alpha=alpha))

    def mul_(self, other):
        return F.assign(self, self * other)

    def div_(self, other):
        return F.assign(self, self / other)

    def clamp_(self, min=None, max=None):  # noqa: A002 - PyTorch's names
        return F.assign(self, F.clamp(self, min, max))

    def masked_fill_(self, mask, value):
        """``masked_fill`` written into this tensor."""
        return F.assign(self, F.masked_fill(self, mask, value))

    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        """``scatter`` written into this tensor."""
        return F.assign(self, F.scatter(self, dim, index, src, value, reduce=reduce))

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """Overwrite with samples of N(mean, std^2) from execmode's seeded generator."""
        _no_generator("normal_", generator)
        drawn = F._random("random_normal", self.shape, self.dtype, self.device, False,
                          mean=float(mean), std=float(std))
        return F.assign(self, drawn)

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        """Overwrite with samples of U[a, b) from execmode's seeded generator."""
        _no_generator("uniform_", generator)
        drawn = F._random("random_uniform", self.shape, self.dtype, self.device, False,
                          low=float(a), high=float(b))
        return F.assign(self, drawn)

    # --- PyTorch's reductions, selections and elementwise spellings -----------------------
    def matmul(self, other):
        """``self @ other``."""
        return F.matmul(self, other)

    def amax(self, dim=(), keepdim=False):
        """The largest value over ``dim`` (every axis when ``()``), without indices."""
        return F.max(self, axis=None if dim in ((), None) else dim, keepdims=keepdim)

    def amin(self, dim=(), keepdim=False):
        """The smallest value over ``dim`` (every axis when ``()``), without indices."""
        return F.min(self, axis=None if dim in ((), None) else dim, keepdims=keepdim)

    def logsumexp(self, dim, keepdim=False):
        """``log(sum(exp(x), dim))``, computed stably."""
        return NF.logsumexp(self, dim, keepdim=keepdim)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """The p-norm over ``dim`` (every element when None): 2 or "fro", 1, inf, -inf, or
        any positive number."""
        x = self if dtype is None else F.astype(self, dtype, copy=False)
        axis = tuple(dim) if isinstance(dim, list | tuple) else dim
        if p in ("fro", 2, 2.0):
            return F.sqrt(F.sum(x * x, axis=axis, keepdims=keepdim))
        if p in (1, 1.0):
            return F.sum(F.abs(x), axis=axis, keepdims=keepdim)
        if p == float("inf"):
            return F.max(F.abs(x), axis=axis, keepdims=keepdim)
        if p == float("-inf"):
            return F.min(F.abs(x), axis=axis, keepdims=keepdim)
        if isinstance(p, int | float) and p > 0:
            return F.sum(F.abs(x) ** p, axis=axis, keepdims=keepdim) ** (1.0 / p)
        raise op_error(ArgumentError, "norm", (self,), f"p={p!r} is not supported (2, "
                       "'fro', 1, inf, -inf or a positive number)")

    def isnan(self):
        """Where the elements are NaN."""
        return F.isnan(self)

    def isinf(self):
        """Where the elements are +-inf."""
        return F.isinf(self)

    def isfinite(self):
        """Where the elements are neither NaN nor +-inf."""
        return F.isfinite(self)

    def nonzero(self, *, as_tuple=False):
        """The indices of the non-zero elements, one row each (``(N, ndim)`` int64), or
        one index tensor per axis with ``as_tuple=True`` (the count depends on values)."""
        return F.nonzero(self) if as_tuple else F.argwhere(self)

    def masked_select(self, mask):
        """The elements where ``mask`` (broadcast) holds, as a 1-D tensor."""
        shape = np.broadcast_shapes(tuple(self.shape), tuple(mask.shape))
        return F.broadcast_to(self, shape)[F.broadcast_to(mask, shape)]

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
        """The distinct values, sorted (PyTorch's ``unique``; with ``return_inverse`` /
        ``return_counts`` also the index of each element's value and each value's count).
        Its size depends on the values: under em.jit it is a graph break."""
        if dim is not None:
            raise op_error(ArgumentError, "unique", (self,), "dim= is not supported; "
                           "unique over every element is")
        values, inverse, counts = np.unique(self.numpy(), return_inverse=True,
                                            return_counts=True)
        out = [F.to_device(F.tensor(values), self.device)]
        if return_inverse:
            out.append(F.to_device(F.tensor(inverse.reshape(self.shape).astype(np.int64)),
                                   self.device))
        if return_counts:
            out.append(F.to_device(F.tensor(counts.astype(np.int64)), self.device))
        return out[0] if len(out) == 1 else tuple(out)

    def cumprod(self, dim):
        """Running products along ``dim`` (one multiply per position: differentiable at
        zeros too, as PyTorch's)."""
        axis = F.normalize_axis_for("cumprod", self, dim)
        slices = self.unbind(axis)
        out = [slices[0]] if slices else []
        for x in slices[1:]:
            out.append(out[-1] * x)
        return F.stack(out, axis=axis) if out else self

    def trunc(self):
        """Round toward zero."""
        return F.sign(self) * F.floor(F.abs(self))

    def fmod(self, other):
        """The remainder with the sign of the dividend (C's fmod; ``remainder`` takes the
        divisor's sign)."""
        if not (self.dtype.kind == "f" or isinstance(other, float) or
                isinstance(other, Tensor) and other.dtype.kind == "f"):
            q = F.floor_divide(F.abs(self), F.abs(other))
            return self - F.sign(self) * q * F.abs(other)
        return self - other * (self / other).trunc()

    def diag(self, diagonal=0):
        """A 1-D tensor's square diagonal matrix, or a 2-D tensor's main diagonal."""
        if diagonal != 0:
            raise op_error(ArgumentError, "diag", (self,), "diagonal= other than 0 is not "
                           "supported")
        if self.ndim == 1:
            n = self.shape[0]
            return F.eye(n, dtype=self.dtype, device=self.device) * self
        if self.ndim == 2:
            k = min(self.shape)
            square = self[:k, :k]
            eye = F.eye(k, dtype=self.dtype, device=self.device)
            return F.sum(square * eye, axis=1)
        raise op_error(ShapeError, "diag", (self,), "expects a 1-D or 2-D tensor")

    def trace(self):
        """The sum of a matrix's main diagonal."""
        if self.ndim != 2:
            raise op_error(ShapeError, "trace", (self,), "expects a 2-D tensor")
        return F.sum(self.diag())

    def diff(self, n=1, dim=-1):
        """Differences of neighbours along ``dim``, ``n`` times."""
        axis = F.normalize_axis_for("diff", self, dim)
        out = self
        for _ in range(n):
            head = (slice(None),) * axis
            out = out[head + (slice(1, None),)] - out[head + (slice(None, -1),)]
        return out

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """NaN -> ``nan``, +inf -> ``posinf``, -inf -> ``neginf`` (the dtype's largest and
        lowest finite values by default)."""
        info = np.finfo(np.dtype(self.dtype.name)) if self.dtype.kind == "f" else None
        if info is None:
            return self
        hi = float(info.max) if posinf is None else posinf
        lo = float(info.min) if neginf is None else neginf
        out = F.where(F.isnan(self), F.full_like(self, nan), self)
        out = F.where(F.logical_and(F.isinf(out), out > 0), F.full_like(self, hi), out)
        return F.where(F.logical_and(F.isinf(out), out < 0), F.full_like(self, lo), out)

    def atan(self):
        """The arc tangent: Cephes' atanf (range reduction and a polynomial, ~1e-7), then
        one Newton step on tan(y) = x with em's sin and cos (float64's accuracy; its
        gradient is 1 / (1 + x^2) to rounding). Past |x| = 1e4 the first guess is kept."""
        x = self if self.dtype.kind == "f" else F.astype(self, dtypes.float32)
        a = F.abs(x)
        big, mid = a > 2.414213562373095, a > 0.4142135623730950
        base = F.where(big, F.full_like(a, np.pi / 2),
                       F.where(mid, F.full_like(a, np.pi / 4), F.zeros_like(a)))
        r = F.where(big, -1.0 / F.maximum(a, 1e-30),
                    F.where(mid, (a - 1.0) / (a + 1.0), a))
        z = r * r
        poly = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z
                - 3.33329491539e-1) * z * r + r
        y = F.sign(x) * (base + poly)
        cos = F.cos(y)
        newton = y - (F.sin(y) - x * cos) * cos
        return F.where(a < 1e4, newton, y)

    def atan2(self, other):
        """The angle of the point (other, self): ``atan(self / other)`` put in its
        quadrant (PyTorch's ``atan2(input, other)``; 0 at the origin)."""
        y, x = self, other
        safe = F.where(x == 0, F.ones_like(x), x)
        angle = (y / safe).atan()
        pi = F.full_like(angle, np.pi)
        angle = F.where(x < 0, F.where(y < 0, angle - pi, angle + pi), angle)
        on_axis = F.sign(y) * (np.pi / 2)
        return F.where(x == 0, F.where(y == 0, F.zeros_like(angle), on_axis + 0 * angle),
                       angle)

    def scatter_add_(self, dim, index, src):
        """``scatter_add`` written into this tensor."""
        return F.assign(self, F.scatter_add(self, dim, index, src))

    def index_add_(self, dim, index, source, *, alpha=1):
        """``index_add`` written into this tensor."""
        return F.assign(self, F.index_add(self, dim, index, source, alpha=alpha))



def _matrix_product(name, ranks):
    def method(self, other):
        if (self.ndim, other.ndim) != ranks:
            raise op_error(ShapeError, name, (self, other),
                           f"{name} needs ranks {ranks}; x @ y batches and broadcasts")
        if name == "bmm" and self.shape[0] != other.shape[0]:
            raise op_error(ShapeError, name, (self, other), "the batch sizes differ")
        return F.matmul(self, other)
    return _named(method, name, f"PyTorch's ``{name}``: ``x @ other`` for ranks {ranks}.")


for _name, _ranks in (("mm", (2, 2)), ("bmm", (3, 3)), ("mv", (2, 1)), ("dot", (1, 1))):
    setattr(_PyTorchMethods, _name, _matrix_product(_name, _ranks))


def _no_generator(name, generator):
    if generator is not None:
        raise ArgumentError(f"{name}(generator=...): in-place draws use execmode's one "
                            "generator; seed it with torch.manual_seed / em.random.seed")


def methods() -> dict:
    """Every installed method by name, from the tables and _EngineMethods."""
    table = {}
    for namespace, tab, make in ((F, UNARY, _unary), (NF, UNARY_NN, _unary),
                                 (F, IN_PLACE, _in_place), (NF, IN_PLACE_NN, _in_place),
                                 (F, BINARY, _binary), (F, REFLECTED, _reflected),
                                 (F, FORWARDED, _forwarded)):
        for name, function in tab.items():
            table[name] = make(name, getattr(namespace, function))
    table.update({name: _cast(name, getattr(dtypes, dtype)) for name, dtype in CASTS.items()})
    for dunder, op in FAST_OPERATORS.items():
        for name, reflected in ((f"__{dunder}__", False), (f"__r{dunder}__", True)):
            operator = make_operator(OPS[op], reflected)
            operator.__name__, operator.__qualname__ = name, f"Tensor.{name}"
            table[name] = counting_operator(operator)
    bodies = {}
    for cls, listed in ((_EngineMethods, WITH_BODIES), (_PyTorchMethods, WITH_TORCH_BODIES)):
        own = {name: value for name, value in vars(cls).items()
               if name not in ("__module__", "__qualname__", "__doc__", "__dict__",
                               "__weakref__")}
        if set(own) != set(listed):
            raise RuntimeError(f"tensor_method_tables and {cls.__name__} differ: "
                               f"{sorted(set(own) ^ set(listed))}")
        bodies.update(own)
    for name, value in bodies.items():
        if callable(value):
            value.__qualname__ = f"Tensor.{name}"
        table[name] = value
    return table


_installed: set = set()


def install(cls) -> None:
    """Put the methods and the hints (names PyTorch or NumPy users type that execmode
    spells otherwise) onto ``cls``. Each name is installed once: a second call (api.py
    imported again after a load that failed further on) leaves the class as it is."""
    if cls in _installed:
        return
    for name, value in methods().items():
        # _tensor.py's placeholder for the name is replaced; anything else is a clash.
        if name in cls.__dict__ and not isinstance(cls.__dict__[name], UntilTheEngineLoads):
            raise RuntimeError(f"Tensor.{name} is defined twice")
        setattr(cls, name, value)
    waiting = [name for name, value in vars(cls).items()
               if isinstance(value, UntilTheEngineLoads)]
    if waiting:
        raise RuntimeError(f"Tensor placeholders without a method: {waiting}")
    _installed.add(cls)
    for name in tensor_hint_names(set(dir(cls))):
        if name in cls.__dict__:
            raise RuntimeError(f"Tensor.{name} exists: remove its hint from aliases.py")
        setattr(cls, name, HintAttribute(name))


class HintAttribute:
    """A name PyTorch or NumPy users type on a tensor that execmode spells otherwise
    (``x.bmm``), or one of PyTorch's that execmode lacks (``x.is_sparse``): reading it
    raises AttributeError with the hint, or "not supported" (aliases.missing_attribute).
    A descriptor per name rather than ``Tensor.__getattr__``: a class with __getattr__
    pays for it on every attribute read (CPython's slot_tp_getattr_hook), and the eager
    hot path reads ``_data`` and flags several times per op (+150 ns on a 1-element add)."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj, objtype=None):
        raise tensor_attribute_error(self.name)
