"""Methods made from the function API's functions: the tables' entries (tensor_method_tables.py)
become one-line methods with the function's name and a docstring that names it."""

from __future__ import annotations

from .. import functional as F
from ..nn import functional as NF


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
