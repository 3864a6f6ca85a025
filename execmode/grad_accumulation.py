"""How a leaf's ``.grad`` takes the gradients backward sends it (PyTorch's AccumulateGrad).

The first gradient becomes ``.grad``, in the leaf's layout where the leaf is dense (its
elements fill its memory in some order of its axes: a C-ordered parameter gets a
C-ordered ``.grad`` whatever strides the vjp left, such as a linear weight's transposed
product, and a Fortran-ordered or transposed one an F-ordered ``.grad``), else in C order
(PyTorch's layout contract, AccumulateGrad's ``clone_obey_contract``), eagerly, in graph
mode and on the GPU alike; later ones are added into it in place. ``.grad`` stays the
same tensor object across accumulations (``zero_grad(set_to_none=False)``, or two
backward calls), so a ``g = p.grad`` held by the user or an optimizer sees the
accumulated values, as in PyTorch.

Because later gradients are written into the stored one, it must share memory with
nothing else. A gradient that backward alone holds (a vjp's fresh result) is kept as it
is, as PyTorch steals a gradient nobody else references; any other (the caller's
gradient, one a vjp passed through or sent to two leaves, a view) is copied first.

A non-leaf that ``retain_grad()`` gets a copy first, then out-of-place sums, as PyTorch's
retained gradients do.
"""

from __future__ import annotations

import sys

import numpy as np

from . import dispatch
from . import functional as F
from ._tensor import Tensor
from .ops.movement import inverse_permutation
from .tape import mark_modified

_ndarray = np.ndarray


class _Holder:
    __slots__ = ("_data",)


def _references_of_a_held_array() -> int:
    """What ``sys.getrefcount`` says of an array that one object's slot alone holds (the
    number differs between Python versions)."""
    holder = _Holder()
    holder._data = np.empty(1)
    return sys.getrefcount(holder._data)


_ALONE = _references_of_a_held_array()


def held_alone(g: Tensor) -> bool:
    """Whether ``g``'s memory is its own: a NumPy array of its own (not a view), that no
    other tensor or view references. The caller knows the Tensor object itself is not
    shared (autograd.py: not the vjp's own input, not sent to another leaf)."""
    if sys.getrefcount(g._data) != _ALONE:  # (read as the probe reads it: no local name)
        return False
    d = g._data
    cls = d.__class__
    if cls is not _ndarray and cls is not dispatch._gpu_ndarray:
        return False
    if d.base is None:
        return True
    # A view that shows its whole C-ordered base as the base lays it out (a transpose of a
    # transposed product: nn.Linear's weight gradient), the base seen through it alone:
    # its memory. (A leaf of another order keeps a view of a C-ordered buffer, as jit's.)
    return sys.getrefcount(d.base) == _ALONE and d.base.base is None and \
        d.shape == d.base.shape and d.strides == d.base.strides and \
        d.dtype == d.base.dtype and d.base.flags.c_contiguous


def dense_axes(array) -> tuple | None:
    """The axes of ``array`` (a NumPy or CuPy array, or a traced value's layout proxy)
    from the largest stride to the smallest when its elements fill its memory in that
    order (PyTorch's "non-overlapping and dense": C order, F order, any transpose of
    them), else None. Axes of length 1 stay where they are: they do not change where
    elements lie."""
    shape, strides = array.shape, array.strides
    if any(n == 0 for n in shape):
        return tuple(range(len(shape)))
    by_stride = sorted((a for a in range(len(shape)) if shape[a] != 1),
                       key=lambda a: (-strides[a], a))
    step = array.itemsize
    for a in reversed(by_stride):
        if strides[a] != step:
            return None
        step *= shape[a]
    placed = iter(by_stride)
    return tuple(next(placed) if shape[a] != 1 else a for a in range(len(shape)))


def _grad_axes(leaf_layout) -> tuple:
    """The order of memory ``.grad`` keeps for a leaf of this layout: the leaf's where it
    is dense, else C order."""
    axes = dense_axes(leaf_layout)
    return axes if axes is not None else tuple(range(len(leaf_layout.shape)))


def _in_layout_of(g: Tensor, leaf: Tensor) -> bool:
    """Whether ``g``'s strides are the ones ``.grad`` keeps for ``leaf``: the leaf's own
    where it is dense, else C order (PyTorch's layout contract)."""
    d, ld = g._data, leaf._data
    if ld.__class__ is not _ndarray:
        return True
    if ld.flags.c_contiguous:
        return d.flags.c_contiguous
    if dense_axes(ld) is not None:
        return d.strides == ld.strides
    return d.flags.c_contiguous


def _traced_in_layout_of(g: Tensor, leaf: Tensor) -> bool:
    """Under a trace: whether ``g`` is known to be a value of its own (not a view) with
    the layout ``.grad`` keeps for ``leaf`` (C order, for a leaf that is C-ordered)."""
    proxy = getattr(g._data, "proxy", None)
    if getattr(g._data, "view", None):  # a view of another value: eager would copy it
        return False
    ld = leaf._data
    leaf_layout = getattr(ld, "proxy", ld)
    if proxy is None or leaf_layout is None or not proxy.flags.c_contiguous:
        return False
    return bool(leaf_layout.flags.c_contiguous)


def store_first(leaf: Tensor, g: Tensor, owned: bool) -> None:
    """``leaf.grad`` was None: it becomes ``g`` (``owned``: held by backward alone, see
    held_alone) or a copy of ``g`` in the leaf's layout."""
    if owned and _in_layout_of(g, leaf):
        if g._data.base is not None:  # a whole view of memory of its own: that memory
            g._data = g._data.base
        leaf.grad = g
        return
    if dispatch.current_tracer() is not None:
        # Graph mode tells a traced value's layout by its proxy (graph/views.py); a copy
        # node's result is a fresh C-ordered buffer of the graph's own, so a leaf of
        # another order gets the copy of ``g`` seen in that order, seen back.
        if _traced_in_layout_of(g, leaf):
            leaf.grad = g
            return
        ld = leaf._data
        layout = getattr(ld, "proxy", ld)
        axes = _grad_axes(layout) if layout is not None else tuple(range(leaf.ndim))
        if axes == tuple(range(len(axes))):
            leaf.grad = F.copy(g)
        else:
            copied = F.copy(F.permute_dims(g, axes))
            leaf.grad = F.permute_dims(copied, inverse_permutation(axes))
        return
    arrays = dispatch.plain_arrays(leaf, g)
    if arrays is not None:
        # A C-ordered buffer seen in the leaf's order of axes: what graph mode's copy
        # gives (above), so that eager and jit leave the same .grad (strides, and a
        # view of a buffer of its own where the leaf is not C-ordered).
        ld = arrays[0]
        axes = _grad_axes(ld)
        out = np.empty(tuple(ld.shape[a] for a in axes), ld.dtype)
        if axes != tuple(range(out.ndim)):
            out = out.transpose(inverse_permutation(axes))
        np.copyto(out, arrays[1])
        leaf.grad = dispatch.plain_tensor(out)
        return
    gpu = dispatch._gpu_ndarray
    axes = _grad_axes(leaf._data)
    if gpu is not None and dispatch._plain and g._data.__class__ is gpu:
        # Nobody watches, on the GPU: one device copy in the leaf's order of axes, not
        # the ops below (each a launch and a dispatch).
        if axes == tuple(range(len(axes))):
            copied = g._data.copy(order="C")
        else:
            copied = g._data.transpose(axes).copy(order="C").transpose(inverse_permutation(axes))
        leaf.grad = dispatch.plain_tensor(copied)
        return
    # A listener watches (the debugger): the copy as ops it sees, into a C-ordered buffer
    # seen in the leaf's order of axes.
    if axes == tuple(range(len(axes))):
        copy = F.empty_like(leaf)
    else:
        shape = tuple(leaf.shape[a] for a in axes)
        copy = F.permute_dims(F.empty(shape, dtype=leaf.dtype, device=leaf.device),
                              inverse_permutation(axes))
    F.assign(copy, g)
    leaf.grad = copy


def add_into(current: Tensor, g: Tensor) -> None:
    """``current += g`` in place (``current`` is a ``.grad``; autograd is off). The write
    is remembered as an accumulation (``_accumulated_at``): an op that read the ``.grad``
    but saved nothing for its backward (``v = p.grad + w``) may still backpropagate after
    it, as in PyTorch, whose version check covers saved tensors alone
    (autograd.check_not_overwritten)."""
    arrays = dispatch.plain_arrays(current, g)
    if arrays is not None:
        into, more = arrays
        if into.shape == more.shape and into.dtype == more.dtype and into.flags.writeable:
            np.add(into, more, out=into)  # the bits of add then assign
            mark_modified(current)
            current._accumulated_at = current._written_at
            return
    F.assign(current, current + g)
    current._accumulated_at = getattr(current, "_written_at", 0)


def accumulate(leaf: Tensor, g: Tensor, owned: bool = False) -> None:
    """One gradient for a leaf: the first becomes ``.grad``, later ones add into it.
    Reading and writing through the property lets a tracer see ``.grad`` as graph state."""
    current = leaf.grad
    if current is None:
        store_first(leaf, g, owned)
    else:
        add_into(current, g)


def retain(t: Tensor, g: Tensor) -> None:
    """The gradient of a non-leaf that retains it: a C-ordered copy first, then
    out-of-place sums (PyTorch's retained gradients are not accumulated in place)."""
    current = t.grad
    if current is not None:
        t.grad = current + g
        return
    arrays = dispatch.plain_arrays(g)
    if arrays is not None:
        t.grad = dispatch.plain_tensor(np.array(arrays[0], order="C"))
    elif dispatch.current_tracer() is not None:
        t.grad = F.copy(g)  # graph mode's results are C-ordered
    else:
        copy = F.empty(g.shape, dtype=g.dtype, device=g.device)
        F.assign(copy, g)
        t.grad = copy
