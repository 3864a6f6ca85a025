"""What a tensor holds while traced, and the memory behind it.

A traced tensor's ``_data`` is a :class:`TracedValue`: the node computing it, the
:class:`Storage` it lives in (PyTorch's storage, with a version counter) and the view chain
from that storage's full value. A traced tensor that outlives its trace holds a
:class:`LeakedValue`, whose every use says so.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..errors import GraphBreakError


class Storage:
    """The memory behind traced tensors (PyTorch's storage): an argument's or a capture's
    array, or an op's result. ``node`` is the graph node holding its current full value;
    every in-place write makes a new node and bumps ``version`` (PyTorch's ``_version``),
    so views taken before the write know they must be recomputed."""

    __slots__ = ("node", "input_node", "version", "shape", "dtype", "device", "source",
                 "array", "written", "ambiguous")

    def __init__(self, node, shape, dtype, device, source=None, array=None):
        self.node = node
        self.input_node = node if source is not None else None
        self.version = 0
        self.shape, self.dtype, self.device = shape, dtype, device
        self.source = source        # InputSource for inputs; None for op results
        self.array = array          # the input's array (kept alive while traced)
        self.written = False        # an input written in place: write back at segment end
        # Storages this one may share memory with, depending on a layout only NumPy knows
        # (a reshape of a strided result; two arguments viewing one array).
        self.ambiguous: list = []


class TracedValue:
    """What a tensor holds while traced: the node that computes it, the storage it lives
    in, the view chain from that storage's full value, and its layout (views.py)."""

    __slots__ = ("tracer", "node_id", "shape", "dtype", "em_device", "storage", "view",
                 "version", "proxy", "__weakref__")

    def __init__(self, tracer, node_id, shape, dtype, device, storage, view=(), proxy=None):
        self.tracer = tracer
        self.node_id = node_id
        self.shape = shape
        self.dtype = dtype
        self.em_device = device
        self.storage = storage
        self.view = view
        self.version = storage.version
        self.proxy = proxy

    def materialize(self, tensor: Tensor, reason: str):
        return self.tracer.materialize(tensor, reason)

    def adopt(self, tensor: Tensor) -> None:
        self.tracer.adopt(tensor)

    def __repr__(self) -> str:
        return f"%{self.node_id}"


class LeakedValue:
    """A traced tensor that outlived its trace without being an output (JAX's
    UnexpectedTracerError): any use says so instead of failing obscurely."""

    __slots__ = ("shape", "dtype", "em_device", "where")

    def __init__(self, value: TracedValue, where: str):
        self.shape, self.dtype, self.em_device = value.shape, value.dtype, value.em_device
        self.where = where

    def materialize(self, tensor, reason):
        raise GraphBreakError(
            f"{reason} on a tensor created while tracing {self.where} that escaped the trace "
            "(stored in a global or attribute). Graph mode runs Python only while tracing; "
            "return the tensor from the jitted function instead."
        )

    def adopt(self, tensor) -> None:
        pass


def traced_by(t, tracer) -> bool:
    """Is ``t`` a tensor traced by ``tracer`` (in its current trace)?"""
    return isinstance(t, Tensor) and t._data.__class__ is TracedValue and t._data.tracer is tracer
