"""Tensor methods that call up into the engine, installed onto Tensor from tables.

``_tensor.py`` sits below dispatch, autograd and the function API, which all build on it,
so the methods that call them are defined here and installed once the engine is loaded
(``install(Tensor)``, called by ``execmode/api.py``), as JAX's
``register_jax_array_methods()`` does. Most are one-line calls of the function API with the
tensor first, so they are tables (``tensor_method_tables.py``: ``UNARY``, ``BINARY``,
``REFLECTED``, ``FORWARDED``), not dozens of methods; the rest, with bodies of their own,
are the methods of ``engine._EngineMethods`` and ``torch_spellings._PyTorchMethods``
(builders.py makes the one-line ones). Until install() runs, Tensor holds a placeholder
under each of these names (``_tensor.py``) that loads the engine on first use. The Array
API spellings (``astype``, ``axis=``, ``x.size`` as an attribute) stay primary; PyTorch's
sit beside them.
"""

from __future__ import annotations

from .. import dtypes
from .. import functional as F
from .._tensor import UntilTheEngineLoads
from ..aliases import tensor_attribute_error, tensor_hint_names
from ..dispatch import counting_operator, make_operator
from ..nn import functional as NF
from ..ops import OPS
from ..tensor_method_tables import (
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
from .builders import _binary, _cast, _forwarded, _in_place, _reflected, _unary
from .engine import _EngineMethods
from .torch_spellings import _PyTorchMethods


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
