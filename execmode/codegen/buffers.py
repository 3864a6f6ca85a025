"""Output buffers, data pointers and array layouts for the ctypes call path.

Reading a NumPy array's data pointer the documented way costs about 1 us
(``arr.ctypes.data``), more than the ctypes call itself (~0.2 us). So:

* **The pointer from the object header.** ``PyArrayObject`` starts with the object header
  and then ``char *data`` (NumPy's stable ABI, what its own ``PyArray_DATA`` macro reads):
  on CPython ``id(arr)`` is the object's address, so the pointer is one read at
  ``id(arr) + header size`` (~0.12 us). Checked against ``ctypes.data`` at import; any
  other interpreter or layout uses ``ctypes.data``.
* **Output pools.** A kernel keeps a couple of output arrays. When the plan has dropped
  every reference to one (the plan frees a value after its last use, the user let go of a
  returned tensor) the kernel writes into it again, with no allocation and no new pointer.
  "Nobody else holds it" is read from the reference count: the pool's own references only.
* **Argument memos** (call_path.py): the same array object as last call needs no pointer.
"""

from __future__ import annotations

import ctypes
import platform
import sys
import weakref

import numpy as np

_getrefcount = sys.getrefcount

# id(array) -> (array, data pointer) for every pooled buffer alive.
REGISTRY: dict[int, tuple] = {}

_HEADER = 2 * ctypes.sizeof(ctypes.c_ssize_t)   # ob_refcnt, ob_type
_read_pointer = ctypes.c_void_p.from_address


def _header_read_works() -> bool:
    if platform.python_implementation() != "CPython":
        return False
    probe = np.arange(3.0)[1:]
    return _read_pointer(id(probe) + _HEADER).value == probe.ctypes.data


_FAST_POINTERS = _header_read_works()


def data_pointer(a: np.ndarray) -> int:
    """The address of ``a``'s first element (``a`` must be an ndarray)."""
    if _FAST_POINTERS:
        return _read_pointer(id(a) + _HEADER).value or 0
    return a.ctypes.data


def has_strides(a: np.ndarray, element_strides) -> bool:
    """Does ``a`` have these element strides (along its axes longer than 1)?"""
    item = a.itemsize
    return all(s == e * item for s, e, d in zip(a.strides, element_strides, a.shape) if d > 1)


def arranged(xp, a, dtype, element_strides):
    """A copy of ``a`` in ``dtype`` laid out with ``element_strides`` (a permutation of
    C-contiguous strides, with 0 along broadcast axes): what a kernel reading a permuted
    or broadcast view in place expects."""
    shape = tuple(a.shape)
    if any(s == 0 and n > 1 for s, n in zip(element_strides, shape)):
        # A broadcast layout: its values repeat along the 0-stride axes. One of each,
        # laid out with the other strides, broadcast back (a view of the copy).
        one = tuple(slice(0, 1) if s == 0 else slice(None) for s in element_strides)
        compact = arranged(xp, a[one], dtype, element_strides)
        return xp.broadcast_to(compact, shape)
    axes = sorted(range(len(shape)), key=lambda d: -element_strides[d])
    base = xp.empty([shape[d] for d in axes], dtype)
    view = base.transpose(tuple(int(i) for i in np.argsort(axes)))
    view[...] = a
    return view


def _free_refcount() -> int:
    """The reference count ``OutputPool.take`` sees for a buffer that only the pool holds
    (measured with the same expression, rather than assumed: it depends on the
    interpreter)."""
    entries = []
    array = np.empty(1)
    entry = (array, 0)
    entries.append(entry)
    registry = {0: entry}
    del array, entry
    for entry in entries:
        count = _getrefcount(entry[0])
    del registry
    return count


FREE_REFS = _free_refcount()


class OutputPool:
    """Reusable output arrays of one shape and dtype, each with its pointer.

    ``made`` counts the bytes of every array the pool had to make anew: a caller that keeps
    each result makes every call allocate, one that drops it none. ``count_into(array,
    index)``: while ``array[0]`` is set (the kernel clock runs), the same bytes are added
    to ``array[index]``, where compiled callers that never return to Python are counted."""

    __slots__ = ("shape", "dtype", "capacity", "entries", "counter", "made", "__weakref__")

    def __init__(self, shape, dtype, capacity: int = 2):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.capacity = capacity
        self.entries: list = []          # [(array, pointer)]
        self.counter = None              # (clock array, index of the step's bytes)
        self.made = 0

    def count_into(self, array, index: int) -> None:
        self.counter = (array, index)

    def take(self) -> tuple:
        """(array, pointer) of an output nobody else holds; a new one if all are busy."""
        for entry in self.entries:
            if _getrefcount(entry[0]) == FREE_REFS:
                return entry
        array = np.empty(self.shape, self.dtype)
        self.made += array.nbytes
        counter = self.counter
        if counter is not None and counter[0][0]:
            counter[0][counter[1]] += array.nbytes
        entry = (array, data_pointer(array))  # (a.ctypes.data builds a ctypes object)
        if len(self.entries) < self.capacity:
            self.entries.append(entry)
            REGISTRY[id(array)] = entry
            # Unregister when the pool (its kernel, its plan) goes away.
            weakref.finalize(self, REGISTRY.pop, id(array), None)
        return entry
