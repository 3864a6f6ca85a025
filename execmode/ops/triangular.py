"""tril and triu: the lower or upper triangle of the last two axes, the rest zeroed.

They are not elementwise (the kept region depends on element positions), so under jit
each runs as one plan step on NumPy/CuPy's own tril/triu, like getitem does.
"""

from __future__ import annotations

from .movement import _same_dtype
from .registry import MOVEMENT, F, OpDef, RuleError, register


def _triangle_rule(name):
    def rule(x, *, k):
        if len(x.shape) < 2:
            raise RuleError(f"{name} needs a tensor of rank >= 2, got shape {tuple(x.shape)}")
        return tuple(x.shape)

    return rule


def _triangle(name):
    rule = _triangle_rule(name)

    def impl(xp, a, *, k):
        rule(a, k=k)  # eager runs no shape rule: NumPy would broadcast a 1-D input
        # xp.tril of a bool array keeps bool (it multiplies by a mask), as the rule says.
        return getattr(xp, name)(a, k)

    register(OpDef(
        name=name, kind=MOVEMENT, impl=impl, shape_rule=rule,
        dtype_rule=_same_dtype,
        # The gradient keeps the same triangle: the zeroed elements did not reach the output.
        vjp=lambda g, out, x, *, k: (F.apply_op(name, g, k=k),),
        doc=f"{name}(x, k): the {'lower' if name == 'tril' else 'upper'} triangle of the "
            "last two axes (diagonal offset k), zeros elsewhere.",
    ))


_triangle("tril")
_triangle("triu")
