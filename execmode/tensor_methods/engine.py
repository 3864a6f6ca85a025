"""The Tensor methods with bodies of their own, in the Array API's spellings first."""

from __future__ import annotations

import numpy as np

from .. import dispatch
from .. import functional as F
from .._tensor import Tensor
from ..autograd import backward as _backward
from ..backend import Device
from ..dtypes import is_dtype_name
from ..errors import ArgumentError, BackwardError, ShapeError
from ..nn import functional as NF
from ..op_errors import op_error
from ..ops import OPS
from ..tape import register_post_accumulate_grad_hook

_ndarray = np.ndarray


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
        if gradient is None and self.dtype.kind == "c":
            raise BackwardError(
                f"backward() of a complex tensor ({self.dtype}) needs a gradient argument: "
                "only real scalars get an implicit gradient of 1, as in PyTorch (take the "
                "loss's .real or abs() first)")
        _backward(self, gradient, bool(retain_graph))

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(self)`` during each backward, once this leaf's ``.grad`` holds every
        contribution of that backward (as in PyTorch); ``.remove()`` on the returned
        handle takes the hook off."""
        return register_post_accumulate_grad_hook(self, hook)

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
        """As PyTorch's: the tensor itself when its layout is C-contiguous, else a copy in
        C order (``x.t().contiguous()``), so a write to the result reaches ``x`` exactly
        when it would in PyTorch, and a ``view`` of the result is a view. Under jit the
        layout is the traced value's proxy (graph/views.py)."""
        data = self._data
        layout = getattr(data, "proxy", data)
        flags = getattr(layout, "flags", None)
        if flags is None or flags.c_contiguous:
            return self
        return F.apply(OPS["contiguous"], self)

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
