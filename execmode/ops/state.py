"""Ops that move data between devices or write into existing tensors."""

from __future__ import annotations

from ..backend import as_device, to_device
from .registry import OPAQUE, F, OpDef, register


def _to_device_impl(xp, a, *, device):
    return to_device(a, as_device(device))


register(OpDef(
    name="to_device", kind=OPAQUE, impl=_to_device_impl,
    shape_rule=lambda x, *, device: tuple(x.shape),
    vjp=lambda g, out, x, *, device: (F.to_device(g, str(x.device)),),
    doc="Copy to another device (host <-> GPU).",
))


def _assign_impl(xp, target, value):
    target[...] = value
    return target


register(OpDef(
    name="assign", kind=OPAQUE, impl=_assign_impl,
    shape_rule=lambda target, value: tuple(target.shape),
    dtype_rule=lambda dtypes, attrs: dtypes[0],
    doc="In-place write of value into target (optimizer updates, x[...] = v). Under jit it is "
        "an explicit node applied at the end of the graph.",
))


def _debug_print_impl(xp, a, *, fmt):
    values = a if xp.__name__ == "numpy" else a.get()
    print(fmt.format(values), flush=True)
    return a


register(OpDef(
    name="debug_print", kind=OPAQUE, impl=_debug_print_impl,
    shape_rule=lambda x, *, fmt: tuple(x.shape), dtype_rule=lambda dtypes, attrs: dtypes[0],
    impure=True,
    doc="Print a tensor's values when the op runs, in eager and in graph mode alike "
        "(no graph break): em.debug_print(x, 'x = {}').",
))
