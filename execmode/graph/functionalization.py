"""Functionalization: in-place writes under a trace, as eager's state semantics ask.

An in-place write (``x[...] = v``, ``x += v``, an optimizer's update) becomes a functional
update of the written tensor's storage: the new value is scattered back through the
tensor's view chain into a new node for the storage's full value, the storage's version
goes up, and every other view of it recomputes from the new value when next read. A
written argument or capture is written back into its array when the segment ends (an
assign node, segments.py). ``.grad`` fields are graph state too: read once (guarded),
written by rebinding. PyTorch's functionalization does the same (FunctionalTensorWrapper).
"""

from __future__ import annotations

from .._tensor import Tensor
from ..dispatch_checks import explain_failure
from ..errors import GraphBreakError
from ..op_errors import op_error
from .traced_value import Storage, TracedValue, traced_by
from .views import ViewStep, inverse_axes, is_view_op


class Functionalization:
    """The Tracer's in-place writes and ``.grad`` state (a part of :class:`~.trace.Tracer`,
    on its state: ``assigned``, ``flags_before``, ``grad_state``, ``wrote_inputs`` ...)."""

    def _assign(self, target: Tensor, value):
        """``target[...] = value``: a functional update of target's storage, scattered back
        through target's view chain; every other view of that storage sees it."""
        from .. import functional as F

        if not isinstance(value, Tensor):
            value = F.full(target.shape, value, dtype=target.dtype, device=target.device)
        elif value.dtype != target.dtype:
            value = F.astype(value, target.dtype)
        value_ref = self._ref(value)
        storage, view, proxy, d = self._place(target)
        if any(step.op == "broadcast_to" for step in view):
            from ..ops import OPS

            raise explain_failure(  # NumPy's broadcast views are read-only
                OPS["assign"], (target, value), {},
                ValueError("assignment destination is read-only"))
        if any(self._observable(other) for other in storage.ambiguous):
            raise op_error(GraphBreakError, "assign", (target, value),
                           "an in-place write to a tensor that may share memory with another "
                           "one, depending on a memory layout only known eagerly (a reshape "
                           "of a strided result, or two arguments that view one array); "
                           "graph mode cannot tell which values it changes. Write to a "
                           ".clone() instead, or run this function eagerly")
        new = value_ref
        if view:
            parents = [storage.node]
            for step in view[:-1]:
                parents.append(self._emit(step.op, (parents[-1],), step.kwargs))
            for step, parent in zip(reversed(view), reversed(parents)):
                new = self._scatter_back(step, parent, new)
        elif isinstance(new, int):
            written = self._builder.graph.node(new)
            if is_view_op(written.op, written.attr):
                # Eager writes into the target's own array; the storage's new value must
                # not be a view of another (a 0-d value broadcast to a .grad: a read-only
                # array, which a later in-place write would meet).
                new = self._emit("copy", (new,), {})
        storage.node = new
        storage.version += 1
        if storage.source is not None:
            storage.written = self.wrote_inputs = True
        if d is None:
            # A real tensor (a capture): traced from now on, so that Python reading it
            # (print, item) breaks the graph; its array is restored when the segment ends.
            self.assigned.setdefault(id(target), (target, target._data))
            target._data = d = TracedValue(self, value_ref, tuple(target.shape),
                                           target.dtype, target.device, storage, view, proxy)
            self.adopt(target)
        d.node_id = value_ref
        d.version = storage.version
        return target

    def _observable(self, storage: Storage) -> bool:
        """Can anything still read ``storage``: an input (the caller holds it) or a live
        traced tensor on it? If not, whether it shared memory does not matter."""
        if storage.source is not None:
            return True
        return any(t._data.storage is storage for t in self._live_tensors())

    def _scatter_back(self, step: ViewStep, parent: int, new: int) -> int:
        """The parent's value with the child's values replaced by ``new``."""
        kw = step.kwargs
        if step.op == "getitem":
            return self._emit("index_put", (parent, new), {"index": kw["index"]})
        if step.op == "permute_dims":
            return self._emit("permute_dims", (new,), {"axes": inverse_axes(kw["axes"])})
        if step.op == "reshape":
            shape = self._builder.graph.node(parent).shape
            return self._emit("reshape", (new,), {"shape": tuple(shape)})
        raise AssertionError(f"no scatter-back for view op {step.op}")

    def note_flags(self, target: Tensor) -> None:
        """``target`` is about to be written (functional.assign): remember a capture's
        autograd flags before the write may change them."""
        if not traced_by(target, self) and id(target) not in self.flags_before:
            self.flags_before[id(target)] = (target, target.requires_grad,
                                             target._grad_fn is None)

    def stale_array(self, array) -> bool:
        """True if ``array`` backs an input that this segment has written (its values are
        not in the array until the segment ends)."""
        hit = self._builder.storages.get(id(array))
        return hit is not None and hit[0].written

    # --- .grad as graph state ----------------------------------------------------------
    def read_grad(self, owner: Tensor):
        state = self.grad_state.get(id(owner))
        if state is None:
            user = self.stand_in_of.get(id(owner), owner)
            grad = user._grad
            # Read before any write: the trace assumed this grad's None-ness, and for a
            # tensor its array's kind, shape and dtype (the graph input's type): guards.
            kind = None if grad is None else (type(grad._data), tuple(grad._data.shape),
                                               grad._data.dtype)
            self.grad_guards[id(owner)] = (owner, grad is None, kind)
            self.grad_state[id(owner)] = state = [owner, grad]
            self.grad_read[id(owner)] = grad
            if grad is not None:
                self.grad_owner_of[id(grad)] = owner
        return state[1]

    def write_grad(self, owner: Tensor, value) -> None:
        state = self.grad_state.get(id(owner))
        if state is None:
            self.grad_state[id(owner)] = [owner, value]
        else:
            state[1] = value
