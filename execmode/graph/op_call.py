"""One node's op as a plain function of arrays: ``op_function(node)(*operands)``.

The one place that turns a (non-fused) node into something callable. The plan's steps
call it at every replay, so it is built once per node and does as little as it can
(a ufunc itself, an array method for views); the graph interpreter (graph/interpret.py)
calls the same functions, so a re-run computes exactly what the plan's step computes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import symbolic_sizes
from ..backend import as_device, xp_for
from ..ops import OPS
from .ir import Node


def op_function(n: Node, xp=None, operand_dtypes=()):
    """``fn(*operands) -> array`` computing ``n``'s op with its attributes, on the array
    module of its device (or ``xp``: constant folding computes with NumPy).
    ``operand_dtypes``: the dtypes of ``n``'s tensor operands, where the caller knows them
    (a float function of floats is then its ufunc itself)."""
    if symbolic_sizes.has_symbolic(n.attrs):
        return _sized_function(n, xp, operand_dtypes)
    view = _cheap_view(n)
    if view is not None:
        return view
    op = OPS[n.op]
    attrs = n.attr
    if xp is None:
        xp = xp_for(as_device(n.device))
    impl = op.impl
    if n.shape == () and xp is np:
        # NumPy returns scalars (np.float32) for 0-d results; the plan deals in arrays.
        asarray = np.asarray
        return lambda *args: asarray(impl(xp, *args, **attrs))
    if attrs:
        return lambda *args: impl(xp, *args, **attrs)
    if isinstance(op.ufunc, np.ufunc) and xp is np:
        # The ufunc itself, as eager's operator fast path calls it: the impl adds only
        # check_supported, and a traced graph's dtypes were checked by the dtype rule.
        # A third of a jitted single op's call was the lambda and the check.
        return op.ufunc
    if op.float_ufunc is not None and xp is np and n.dtype.kind == "f" and operand_dtypes \
            and all(d == n.dtype for d in operand_dtypes):
        # exp of float32 is np.exp itself (the impl casts only ints and bools): the C fast
        # entry then calls its loop directly (codegen/ufunc_loop.py), as for a + b.
        return op.float_ufunc
    return lambda *args: impl(xp, *args)


def _sized_function(n: Node, xp, operand_dtypes):
    """A node whose attributes hold symbolic sizes (``pos[:t]``, ``ones(t, t)``): its
    function for the sizes bound when it runs (symbolic_sizes.sizes_bound; the traced
    ones outside a size-generic replay), made once per distinct sizes."""
    made: dict = {}
    resolve, bound_sizes = symbolic_sizes.resolve, symbolic_sizes.bound_sizes

    def run(*args):
        sizes = bound_sizes()
        fn = made.get(sizes)
        if fn is None:
            if len(made) >= _SIZED_KEEP:
                made.clear()
            fn = made[sizes] = op_function(
                replace(n, attrs=resolve(n.attrs, sizes), shape=resolve(n.shape, sizes)),
                xp, operand_dtypes)
        return fn(*args)

    return run


_SIZED_KEEP = 64  # functions kept per symbolic node (one per size a loop met lately)


def _cheap_view(n: Node):
    """Views through the array's own methods: a.transpose(axes) costs a fifth of
    np.permute_dims(a, axes), and a plan of small steps pays it at every call."""
    if n.op == "permute_dims":
        axes = n.attr["axes"]
        return lambda a: a.transpose(axes)
    if n.op == "reshape":
        shape = n.attr["shape"]
        return lambda a: a.reshape(shape)
    return None


def may_raise(n: Node) -> bool:
    """Ops whose values can make eager raise (an index tensor out of range): they run even
    when nothing uses their result, so graph mode raises where eager does."""
    op = OPS.get(n.op)
    if op is not None and op.may_raise:  # gather, scatter_add, one_hot, check_labels ...
        return True
    tensor_operands = {"getitem": 1, "index_add": 1, "index_put": 2}.get(n.op)
    return tensor_operands is not None and len(n.inputs) > tensor_operands


__all__ = ["may_raise", "op_function"]
