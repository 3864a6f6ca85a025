"""The Tensor: an n-dimensional array on a device, with autograd.

Eagerly, ``_data`` is a NumPy or CuPy array. While a function is traced by ``em.jit``,
``_data`` is a :class:`~execmode.graph.traced_value.TracedValue` that knows only shape,
dtype and device; asking such a tensor for a concrete value (``bool``, ``item``,
``numpy``, ``print``) breaks the graph. Operators go through ``execmode.dispatch``, so both
modes share them.

The module is ``_tensor.py``, as PyTorch's is, because ``em.tensor`` is the function that
makes a tensor: a submodule called ``tensor`` would bind itself on the package as
``execmode.tensor`` whenever something imports it, over that function.

This module is low in the engine (it imports only backend, dtypes and errors): dispatch,
autograd and the function API all build on Tensor. The methods that call up into them are
installed onto the class by the ``tensor_methods`` package; until then a placeholder holds each of
their names (``UntilTheEngineLoads``).
"""

from __future__ import annotations

import importlib
import math

import numpy as np

from .backend import CPU, device_of_array
from .dtypes import type_text
from .errors import ArgumentError
from .op_errors import op_error
from .tensor_method_tables import installed_names

SCALAR_TYPES = frozenset({int, float, bool, complex})
_ndarray = np.ndarray


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


class Tensor:
    """An array with a dtype, a device and (optionally) a gradient.

    Create tensors with :func:`execmode.tensor` and friends rather than this class.

    Besides the members listed here, a tensor has the operators (``+ - * / @ ** // %``,
    comparisons, ``x[i]``, ``x[i] = v``, ``+=`` ...), ``.grad``, ``backward()``,
    ``detach()``, ``to()``, ``reshape``/``view``/``transpose``/``permute``/``T``/``mT``
    and the functions as methods (``x.sum(dim=1)``, ``x.exp()``, ``x.float()``,
    ``x.masked_fill(...)`` ...): each calls the function of the same name with the tensor
    first. They are installed by ``execmode.tensor_methods``; docs/pytorch.md lists them.
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
        return Size(math.prod(self._data.shape), self._data.shape)

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

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    # --- concrete values (graph breaks while tracing) ------------------------------------
    # Each reads ``self._concrete(reason)`` (installed by tensor_methods: it asks the
    # tracer), which materializes a traced tensor.
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

    # --- autograd ----------------------------------------------------------------------
    @property
    def data(self) -> Tensor:
        """PyTorch's ``.data``: the same values and memory, cut from autograd (as
        ``detach()``); writes through it change this tensor, in eager and graph mode."""
        return self.detach()

    def requires_grad_(self, flag: bool = True) -> Tensor:
        if flag and self.dtype.kind not in "fc":
            raise ArgumentError("only floating-point and complex tensors can require "
                                f"gradients, not {self.dtype}")
        if not self.is_leaf and not flag:
            raise ArgumentError("requires_grad_(False) on a non-leaf tensor; use detach()")
        self.requires_grad = bool(flag)
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` on this non-leaf tensor after backward (as in PyTorch)."""
        self._retains_grad = True

    def __pos__(self):
        return self

    # Everything else a tensor does (operators, indexing, reshape, sum, backward, .grad,
    # detach, to ...) calls dispatch, the tracer or the function API, which sit above this
    # module and import it: tensor_methods installs those methods from its tables once
    # the engine is loaded (execmode/api.py), replacing the placeholders below.


class UntilTheEngineLoads:
    """Tensor.<name> before tensor_methods.install() has put the method there.

    ``import execmode`` loads the engine on the first ``em.<name>``; a script that only
    imports a part (``from execmode.nn import Linear``) never asks the package for a name.
    Its first ``x + y`` or ``x.sum()`` reads this placeholder, which loads the engine (whose
    install() replaces every placeholder) and hands back the real attribute. After that no
    placeholder is left: the hot path never sees one.
    """

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def _installed(self):
        # Reached at call time, when every import has finished: the package itself,
        # imported here rather than at the top, sits above this module.
        importlib.import_module("execmode")._load_engine()
        real = Tensor.__dict__[self.name]
        if real is self:
            raise RuntimeError(
                f"Tensor.{self.name} was used while the engine was loading (by a module "
                "imported before tensor_methods.install(), at its import time)")
        return real

    def __get__(self, obj, objtype=None):
        real = self._installed()
        return real.__get__(obj, objtype) if hasattr(real, "__get__") else real

    def __set__(self, obj, value):  # x.grad = g on a tensor made before the engine loaded
        self._installed()
        setattr(obj, self.name, value)


for _name in installed_names():
    setattr(Tensor, _name, UntilTheEngineLoads(_name))
del _name
