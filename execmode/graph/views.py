"""Views while tracing: which ops alias their input in eager mode, and how to undo them.

Eagerly, ``x[:, :2]``, ``x.T``, ``broadcast_to`` and (where NumPy can) ``reshape`` return
NumPy views: a later in-place write through either tensor is seen through the other. A
traced graph is functional, so the tracer records each tensor as a *storage* plus a chain
of :class:`ViewStep` from the storage's full value (PyTorch's functionalization):

* reading a view whose storage was written since replays the chain on the new value;
* writing through a view scatters the new values back into the storage by walking the
  chain backwards (:func:`scatter_back`).

Whether a reshape is a view depends on the memory layout, exactly as in NumPy, so every
traced value carries a *layout proxy*: a strided array over one byte with the value's
shape and (element) strides. View ops are applied to the proxy with NumPy itself, so the
tracer takes the decision NumPy will take eagerly; the proxy's memory is never read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..symbolic_sizes import has_symbolic, resolve

_BYTE = np.zeros(1, dtype=np.uint8)
VIEW_OPS = ("getitem", "permute_dims", "reshape", "broadcast_to")


@dataclass(frozen=True)
class ViewStep:
    """One view op from a parent value to a child value (attrs as the op takes them)."""

    op: str
    attrs: tuple  # sorted (name, value) pairs

    @property
    def kwargs(self) -> dict:
        return dict(self.attrs)

    @functools.cached_property
    def replay_kwargs(self) -> tuple:
        """(the op's implementation, its keyword arguments, whether they hold a symbolic
        size): read at every replay of a view (a jitted model hands out dozens per call),
        worked out once."""
        from ..ops import OPS

        kwargs = dict(self.attrs)
        return OPS[self.op].impl, kwargs, has_symbolic(kwargs)


def contiguous_proxy(shape) -> np.ndarray:
    """The layout of a fresh C-contiguous array of ``shape``."""
    # (symbolic sizes as their traced numbers: a cache key)
    return contiguous_layout(tuple(map(int, shape)))


@functools.lru_cache(maxsize=4096)
def contiguous_layout(shape: tuple) -> np.ndarray:
    """``contiguous_proxy`` of a tuple of plain ints."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return _strided(tuple(shape), tuple(reversed(strides)))


def proxy_of(array) -> np.ndarray | None:
    """The layout of a real array (NumPy or CuPy), in element strides."""
    strides = getattr(array, "strides", None)
    if strides is None:
        return None
    itemsize = array.dtype.itemsize
    key = (tuple(array.shape), tuple(strides), itemsize)
    hit = _proxies.get(key, _NONE)
    if hit is _NONE:  # (a capture at every segment of every call asks: one lookup)
        if len(_proxies) > 4096:
            _proxies.clear()
        hit = _proxies[key] = None if any(s % itemsize for s in strides) else _strided(
            key[0], tuple(s // itemsize for s in strides))
    return hit


_proxies: dict = {}  # (shape, byte strides, itemsize) -> proxy_of's answer
_NONE = object()


@functools.lru_cache(maxsize=4096)
def _strided(shape, strides) -> np.ndarray:
    # Read-only and only ever asked about its layout, so one proxy per layout serves
    # every tensor of that layout (a function with graph breaks asks at every call).
    return np.lib.stride_tricks.as_strided(_BYTE, shape, strides, writeable=False)


def view_proxy(op: str, attrs: dict, proxy: np.ndarray | None, shape: tuple):
    """(is a view, layout of the result) for ``op(x)`` in eager NumPy; ``shape`` is x's.

    ``proxy`` None means x's layout is not known (an op result computed from strided
    inputs): basic indexing, transposes and broadcasts are views whatever the layout (of a
    layout then unknown too), and so is a reshape that only adds or drops axes of length 1
    (expand_dims, squeeze: NumPy never copies for those); any other reshape's answer
    depends on the layout (None: not known)."""
    ndim = len(shape)
    if op == "permute_dims":
        return True, None if proxy is None else np.transpose(proxy, attrs["axes"])
    if op == "broadcast_to":
        return True, None if proxy is None else np.broadcast_to(proxy, attrs["shape"])
    if op == "getitem":
        from ..ops.movement import index_to_key

        key = index_to_key(attrs["index"], ())
        if len(key) == ndim and all(isinstance(k, int) for k in key):
            # Every axis indexed by an int: NumPy gives a scalar, eager a new 0-d array.
            return False, None
        if proxy is None:
            return True, None
        out = proxy[key]
        return (True, out) if isinstance(out, np.ndarray) else (False, None)
    if op == "reshape":
        if proxy is None:
            if _without_unit_axes(shape) == _without_unit_axes(attrs["shape"]):
                return True, None
            return None, None
        try:
            out = proxy.reshape(attrs["shape"], copy=False)  # a view, or ValueError
        except ValueError:
            return False, None
        except TypeError:  # NumPy 2.0: no copy= yet (NumPy 2.5 deprecates setting .shape)
            out = proxy.view()
            try:
                out.shape = attrs["shape"]
            except AttributeError:
                return False, None
        return True, out
    return False, None


def c_ordered(proxy: np.ndarray) -> bool:
    """Whether a layout's strides shrink (ties allowed) from the first axis to the last,
    over its axes longer than 1. NumPy's concatenate orders its result's axes by its
    inputs' strides, C order winning every conflict (PyArray_CreateMultiSortedStridePerm):
    inputs that are all C-ordered, contiguous or not, give a C-contiguous result."""
    strides = [abs(s) for s, n in zip(proxy.strides, proxy.shape) if n != 1]
    return all(a >= b for a, b in zip(strides, strides[1:]))


def _without_unit_axes(shape) -> tuple:
    return tuple(n for n in shape if n != 1)


def is_view_op(op: str, attrs: dict) -> bool:
    """Ops that may return a view: getitem only with a static index (no index tensors)."""
    if op not in VIEW_OPS:
        return False
    return op != "getitem" or all(item[0] != "tensor" for item in attrs["index"])


def replay(steps, array):
    """Apply view steps to a real array, giving the same (NumPy) views as eager mode."""
    if array.__class__ is np.ndarray:
        xp = np
    else:
        from ..backend import device_of_array, xp_for

        xp = xp_for(device_of_array(array))
    for step in steps:
        impl, kwargs, symbolic = step.replay_kwargs
        if symbolic:  # a view of a symbolic size: this call's (symbolic_sizes)
            kwargs = resolve(kwargs)
        array = impl(xp, array, **kwargs)
    return array


def inverse_axes(axes) -> tuple:
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return tuple(inverse)


__all__ = ["ViewStep", "c_ordered", "contiguous_layout", "contiguous_proxy", "inverse_axes",
           "is_view_op", "proxy_of", "replay", "view_proxy"]
