"""Creation ops: tensors made from attributes alone (no tensor inputs).

``device`` is an attribute; dispatch picks NumPy or CuPy from it. Random ops draw from
execmode's seeded generator on the host (so a seed gives the same numbers on every device)
and are *impure*: passes never fold or merge them.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import bool_
from . import rng
from .registry import CREATION, OpDef, RuleError, register


def _shape_attr(*avals, shape, **attrs):
    return tuple(shape)


def _fixed_dtype(dtypes, attrs):
    return attrs["dtype"]


def _creation(name, impl, rule=_shape_attr, impure=False, doc=""):
    register(OpDef(name=name, kind=CREATION, impl=impl, shape_rule=rule,
                   dtype_rule=_fixed_dtype, impure=impure, doc=doc))


_creation("full", lambda xp, *, shape, value, dtype, device: xp.full(shape, value, dtype=dtype),
          doc="A tensor of `shape` filled with `value` (zeros and ones are full).")


def _constant_impl(xp, *, value, shape, dtype, device):
    # A copy at every run: the node's value is one array held by the graph, and the
    # result may be returned to the caller, who may write into it (fuzz 1795535866-2877).
    return xp.array(value, dtype=dtype).reshape(shape)


_creation("constant", _constant_impl, doc="A literal tensor (em.tensor inside a trace).")


def _arange_rule(*, start, stop, step, dtype, device):
    if step == 0:
        raise RuleError("arange step must not be zero")
    return (int(max(0, np.ceil((stop - start) / step))),)


_creation("arange",
          lambda xp, *, start, stop, step, dtype, device: xp.arange(start, stop, step, dtype=dtype),
          rule=_arange_rule)


def _linspace_rule(*, start, stop, num, endpoint, dtype, device):
    if num < 0:
        raise RuleError(f"linspace num must be >= 0, got {num}")
    return (num,)


_creation("linspace",
          lambda xp, *, start, stop, num, endpoint, dtype, device:
          xp.linspace(start, stop, num, endpoint=endpoint, dtype=dtype),
          rule=_linspace_rule)
_creation("eye", lambda xp, *, n, m, k, dtype, device: xp.eye(n, m, k, dtype=dtype),
          rule=lambda *, n, m, k, dtype, device: (n, m))


def _on_device(xp, host_array):
    return host_array if xp is np else xp.asarray(host_array)


def _normal_impl(xp, *, shape, mean, std, dtype, device):
    return _on_device(xp, rng.generator().normal(mean, std, size=shape).astype(dtype))


def _uniform_impl(xp, *, shape, low, high, dtype, device):
    return _on_device(xp, rng.generator().uniform(low, high, size=shape).astype(dtype))


def _randint_impl(xp, *, shape, low, high, dtype, device):
    if dtype == bool_:
        raise RuleError("randint needs an integer dtype")
    return _on_device(xp, rng.generator().integers(low, high, size=shape, dtype=dtype))


_creation("random_normal", _normal_impl, impure=True)
_creation("random_uniform", _uniform_impl, impure=True)
_creation("random_randint", _randint_impl, impure=True)
