"""Tensor methods that PyTorch users type, installed from one table.

Like JAX's ``_array_methods``: one table instead of dozens of one-line methods, each a call
of the function API with the tensor first. The Array API spellings (``astype``, ``axis=``,
``x.size`` as an attribute) stay primary; these sit beside them.
"""

from __future__ import annotations

from . import functional as F
from .dtypes import bool_, float32, float64, int32, int64
from .errors import ArgumentError, ShapeError, op_error


class Size(int):
    """``x.size``: an int (the Array API's element count) that PyTorch code may call."""

    def __new__(cls, n, shape):
        self = super().__new__(cls, n)
        self.shape = shape
        return self

    def __call__(self, dim=None):
        if dim is None:
            return tuple(self.shape)
        try:
            return self.shape[dim]
        except (IndexError, TypeError):
            raise ArgumentError(f"size({dim!r}): dimension out of range for a tensor of "
                                f"rank {len(self.shape)}") from None


def _cast(dtype):
    def method(self):
        return F.astype(self, dtype)

    method.__doc__ = f"``astype({dtype})`` (PyTorch's spelling)."
    return method


def _dim(self) -> int:
    """The rank (PyTorch's ``dim()``; the Array API's ``ndim``)."""
    return self.ndim


def _numel(self) -> int:
    """The number of elements (PyTorch's ``numel()``; the Array API's ``size``)."""
    return int(self.size)


def _t(self):
    """Transpose of a tensor of rank <= 2 (PyTorch's ``t()``)."""
    if self.ndim > 2:
        raise op_error(ShapeError, "t", (self,),
                       "t() needs rank <= 2; use transpose(dim0, dim1) or mT")
    return F.permute_dims(self, None) if self.ndim == 2 else self


def _contiguous(self):
    """As PyTorch's: the tensor itself when its layout is C-contiguous, else a contiguous
    copy (``x.t().contiguous()``), so a write to the result reaches ``x`` exactly when it
    would in PyTorch. Under jit the layout is the traced value's proxy (graph/views.py)."""
    data = self._data
    layout = getattr(data, "proxy", data)
    flags = getattr(layout, "flags", None)
    if flags is None or flags.c_contiguous:
        return self
    return self.clone()


def _view(self, *shape):
    """PyTorch's ``view``: a reshape (a view where the layout allows it)."""
    return F.reshape(self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int)
                     else shape)


def _expand(self, *sizes):
    return F.expand(self, *sizes)


def _expand_as(self, other):
    """PyTorch's ``expand_as``: ``expand`` to ``other``'s shape."""
    return F.expand(self, *other.shape)


def _clamp_min(self, min):  # noqa: A002 - PyTorch's name
    return F.clamp(self, min=min)


def _clamp_max(self, max):  # noqa: A002 - PyTorch's name
    return F.clamp(self, max=max)


def _pow(self, exponent):
    return F.power(self, exponent)


def _repeat(self, *repeats):
    return F.repeat(self, *repeats)


def _softmax(self, dim=-1):
    from .nn import functional as NF

    return NF.softmax(self, dim)


def _log_softmax(self, dim=-1):
    from .nn import functional as NF

    return NF.log_softmax(self, dim)


def _scatter_add(self, dim, index, src):
    return F.scatter_add(self, dim, index, src)


def _index_add(self, dim, index, source, alpha=1):
    return F.index_add(self, dim, index, source, alpha=alpha)


def _gather(self, dim, index):
    return F.gather(self, dim, index)


def _sort(self, dim=-1, descending=False, stable=True):
    """PyTorch's ``x.sort(dim)``: always the ``(values, indices)`` pair (``em.sort(x)``,
    the Array API function, returns the values unless given ``dim=``)."""
    return F.sort(self, descending=descending, stable=stable, dim=dim)


def _where(self, condition, other):
    """PyTorch's ``x.where(condition, y)``: x where the condition holds, else y."""
    return F.where(condition, self, other)


def _forward(name):
    fn = getattr(F, name)

    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"``em.{name}(x, ...)``."
    return method


METHODS = {
    "float": _cast(float32),
    "double": _cast(float64),
    "long": _cast(int64),
    "int": _cast(int32),
    "bool": _cast(bool_),
    "dim": _dim,
    "numel": _numel,
    "t": _t,
    "contiguous": _contiguous,
    "view": _view,
    "expand": _expand,
    "expand_as": _expand_as,
    "clamp_min": _clamp_min,
    "clamp_max": _clamp_max,
    "pow": _pow,
    "repeat": _repeat,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "scatter_add": _scatter_add,
    "index_add": _index_add,
    "gather": _gather,
    "sort": _sort,
    "where": _where,
    **{name: _forward(name) for name in (
        "clamp", "masked_fill", "cumsum", "argsort", "topk", "take_along_axis",
        "tril", "triu", "split", "chunk", "logaddexp", "square", "sin", "cos", "log1p",
        "expm1", "sign", "floor", "ceil", "round", "maximum", "minimum",
    )},
}


def install_methods(cls) -> None:
    for name, fn in METHODS.items():
        if name in cls.__dict__:
            raise RuntimeError(f"Tensor.{name} is defined twice")
        setattr(cls, name, fn)


class HintAttribute:
    """A name PyTorch or NumPy users type on a tensor that execmode spells otherwise
    (``x.bmm``): reading it raises AttributeError with the hint (aliases.TENSOR_HINTS).
    A descriptor per name rather than ``Tensor.__getattr__``: a class with __getattr__
    pays for it on every attribute read (CPython's slot_tp_getattr_hook), and the eager
    hot path reads ``_data`` and flags several times per op (+150 ns on a 1-element add)."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj, objtype=None):
        from .aliases import tensor_attribute_error

        raise tensor_attribute_error(self.name)


def install_hints(cls) -> None:
    from .aliases import TENSOR_HINTS

    for name in TENSOR_HINTS:
        if name in cls.__dict__:
            raise RuntimeError(f"Tensor.{name} exists: remove its hint from aliases.py")
        setattr(cls, name, HintAttribute(name))
