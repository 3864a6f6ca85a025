"""``torch.nn.parallel``: ``DataParallel`` on one device is the module itself (PyTorch's
``DataParallel`` without GPUs calls the module directly); ``DistributedDataParallel``
trains one replica per process over ``torch.distributed`` (``execmode.distributed``).

How DistributedDataParallel averages gradients: as PyTorch's, each bucket's all-reduce
starts as soon as backward has produced every gradient in it (a post-accumulate-grad
hook on each parameter), as a nonblocking MPI collective that moves while backward
computes the rest (distributed/reducer.py). A node on the module's outputs starts the
count when backward reaches it and queues, for when backward has walked the whole tape
(``autograd.queue_callback``), the wait for every bucket and the averaged ``.grad``s.
Where every rank is on one machine, every bucket is all-reduced at that callback instead
(buckets.average_gradients: the same bits, no overlap), since shared memory moves nothing
while backward computes (reducer.overlap_enabled); ``EXECMODE_DDP_OVERLAP=1`` or ``=0``
decides instead.

Under ``em.jit`` the same node and callback run in the traced backward, so the buckets
are made of traced values and each bucket's all-reduce is a graph node
(distributed/graph_buckets.py): a jitted training step through the module is one graph.
A backward outside the jitted call that ran the module (``em.jit(ddp_model)``) goes
through the call's backward graph, where the node passes the gradients through and asks
(``at_each_backward``) to queue the averaging at each backward, which then runs eagerly
on what the graph sends to the parameters, as after an eager forward.
"""

from __future__ import annotations

import contextlib
import warnings

from ... import dispatch
from ..._tensor import Tensor
from ...autograd import queue_callback
from ...distributed.buckets import (
    DEFAULT_BUCKET_CAP_MB,
    average_gradients,
    broadcast_tensors,
    buckets,
    check_same_tensors,
)
from ...distributed.errors import DistributedError
from ...distributed.graph_buckets import average_gradients_traced, broadcast_traced
from ...distributed.process_group import default_group
from ...distributed.reducer import Reducer, overlap_enabled
from ...errors import ArgumentError
from ...grad_mode import no_grad
from ...nn.module import Module
from ...tape import GradNode, MultiOutputOp


class DataParallel(Module):
    """``DataParallel(module)``: runs ``module`` on the one device execmode uses; the
    module stays reachable as ``.module`` (state_dict keys gain ``module.``, as PyTorch's)."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.dim = dim

    def forward(self, *args, **kwargs):
        """The wrapped module's forward."""
        return self.module(*args, **kwargs)


class DistributedDataParallel(Module):
    """One replica of ``module`` per process, kept equal across the process group.

    At wrap time every rank checks that all ranks hold the same parameters and buffers
    (names, shapes, dtypes) and takes rank 0's values (one broadcast per bucket). After
    each backward through the module's outputs, every parameter's ``.grad`` is the mean
    of the ranks' gradients (all-reduced in buckets of ``bucket_cap_mb``, each started
    once backward has produced its gradients: see the module's docstring). ``no_sync()``
    skips the averaging, so that gradients accumulate locally until the next backward
    outside it. Buffers are taken from rank 0 before each forward
    (``broadcast_buffers=True``, as PyTorch).

    ``device_ids``, ``output_device`` and ``gradient_as_bucket_view`` are accepted (CPU
    tensors only; the averaged gradients are views of their bucket). A parameter without
    a gradient on a rank counts as zeros there, whatever ``find_unused_parameters`` says;
    with it True, the parameters that no path from the outputs reaches are found when
    backward starts, so their buckets start without waiting for the end of backward.
    ``init_sync=False`` skips the broadcast at wrap time; ``mixed_precision`` and
    ``device_mesh`` are refused.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None,
                 bucket_cap_mb: float | None = None, find_unused_parameters: bool = False,
                 check_reduction: bool = False, gradient_as_bucket_view: bool = False,
                 static_graph: bool = False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 init_sync: bool = True):
        super().__init__()
        for name, given in (("mixed_precision", mixed_precision), ("device_mesh", device_mesh),
                            ("delay_all_reduce_named_params", delay_all_reduce_named_params),
                            ("param_to_hook_all_reduce", param_to_hook_all_reduce)):
            if given is not None:
                raise ArgumentError(f"DistributedDataParallel({name}=...) is not supported")
        if not isinstance(module, Module):
            raise ArgumentError(f"DistributedDataParallel: expected a Module, got "
                                f"{type(module).__name__}")
        pg = default_group("DistributedDataParallel", process_group)
        state = [*module.named_parameters(), *module.named_buffers()]
        for name, t in state:
            if str(t.device) != "cpu":
                raise DistributedError(
                    f"DistributedDataParallel: {name} is on {t.device}; NCCL (collectives "
                    "on GPUs) is not built yet, so the module must be on the CPU")
        cap = DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        if not cap > 0:
            raise ArgumentError(f"DistributedDataParallel: bucket_cap_mb must be positive, "
                                f"got {bucket_cap_mb!r}")
        self.module = module
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self._pg = pg
        self._cap_bytes = int(cap * (1 << 20))
        # False inside no_sync(); PyTorch's name: nanoGPT sets it for its micro-steps
        self.require_backward_grad_sync = True
        self._queued = False     # the averaging is queued for the running backward
        # The buckets of the last averaging; before any, those of every trainable
        # parameter (PyTorch lays its buckets out at wrap time too). A jitted step that
        # averages in as many leaves it unchanged, which em.jit would see as a write of
        # Python state (re-running the step's Python at every call).
        self.buckets_reduced = len(buckets(
            [p for p in reversed(module.parameters()) if p.requires_grad], self._cap_bytes))
        check_same_tensors(pg, "DistributedDataParallel", state)
        # Laid out at wrap time, the same on every rank (the models were just checked).
        self._reducer = Reducer(pg, list(module.named_parameters()), self._cap_bytes)
        if init_sync:
            with no_grad():
                broadcast_tensors(pg, [t for _, t in state], 0, self._cap_bytes)

    def forward(self, *args, **kwargs):
        """The module's forward; its outputs carry the node that averages the gradients
        once backward through them ends."""
        tracing = dispatch.current_tracer() is not None
        buffers = self.module.buffers()
        if self.broadcast_buffers and buffers and self._pg.size > 1:
            with no_grad():
                if tracing:
                    broadcast_traced(self._pg, list(self.module.named_buffers()), 0,
                                     self._cap_bytes)
                else:
                    broadcast_tensors(self._pg, buffers, 0, self._cap_bytes)
        out = self.module(*args, **kwargs)
        if self.require_backward_grad_sync and dispatch.grad_enabled() and self._pg.size > 1:
            self._queued = False  # a backward that failed halfway leaves it set
            self._reducer.forget()
            out = _through_sync(out, _GradientSync(self))
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Inside: backward accumulates gradients locally, without averaging (the next
        backward outside averages what accumulated)."""
        previous, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def _begin_averaging(self, outputs: tuple = ()) -> None:
        """A backward reached the outputs: average the gradients once it ends (the first
        time it reaches them), starting each bucket as its gradients are done (with
        ``find_unused_parameters``, the parameters no path from ``outputs`` reaches are
        done at once)."""
        if self._queued:
            return
        self._queued = True
        queue_callback(self._average)
        if dispatch.current_tracer() is None and overlap_enabled(self._pg):
            self._reducer.begin(outputs if self.find_unused_parameters else ())

    def _average(self) -> None:
        self._queued = False
        if dispatch.current_tracer() is not None:  # a backward inside em.jit: nodes
            made = average_gradients_traced(self._pg, list(self.module.named_parameters()),
                                            self._cap_bytes)
            self.buckets_reduced = len(made)
            return
        if self._reducer.overlapping:
            self.buckets_reduced = self._reducer.finish()
            return
        self.buckets_reduced = average_gradients(self._pg, self.module.parameters(),
                                                 self._cap_bytes)


class _GradientSync(MultiOutputOp):
    """The node on a forward's outputs: their gradients pass through unchanged, and the
    first backward that reaches it queues the averaging for when that backward ends."""

    name = "DistributedDataParallel"
    saves_for_backward = False  # nothing saved: a second backward (retain_graph) works

    def __init__(self, ddp: DistributedDataParallel):
        self.ddp = ddp
        self.inputs: tuple = ()

    def vjp(self, g, saved, *inputs, output: int):
        # In the backward graph of the results of a jitted call that ran the module
        # (em.jit(ddp_model), jit_driver/backward_trace.py): the gradients pass through,
        # and at each backward through that graph at_each_backward queues the averaging
        # of what the graph sends to the parameters, eagerly, as this node's backward does.
        return [g if k == output else None for k in range(len(inputs))]

    def at_each_backward(self) -> None:
        self.ddp._begin_averaging()

    def backward(self, gradients: dict) -> list:
        self.ddp._begin_averaging(self.inputs)
        return [(self.inputs[k], g) for k, (_, g) in sorted(gradients.items())]


def _through_sync(out, sync: _GradientSync):
    """``out`` with each tensor that has a gradient path replaced by one that shares its
    memory and leads through ``sync`` (tensors in tuples, lists and dicts; each place a
    tensor appears is a result of its own)."""
    sync.inputs = tuple(t for t in _tensors(out) if t.requires_grad)
    if not sync.inputs:
        warnings.warn("DistributedDataParallel: the module's output holds no tensor with a "
                      "gradient path in a tensor, tuple, list or dict, so backward will not "
                      "average the gradients", stacklevel=3)
        return out
    position = iter(range(len(sync.inputs)))

    def swap(value):
        if isinstance(value, Tensor):
            if not value.requires_grad:
                return value
            t = Tensor.__new__(Tensor)
            t._data, t.requires_grad = value._data, True
            t._grad_fn = GradNode(sync, sync.inputs, {"output": next(position)}, None)
            if t.is_traced:  # under em.jit: the tracer knows it (and poisons it if it leaks)
                t._data.adopt(t)
            return t
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
            return type(value)(*(swap(v) for v in value))
        if isinstance(value, list | tuple):
            return type(value)(swap(v) for v in value)
        if isinstance(value, dict):
            return type(value)((k, swap(v)) for k, v in value.items())
        return value

    return swap(out)


def _tensors(value):
    """The tensors in ``value``, in the order ``_through_sync`` replaces them."""
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


__all__ = ["DataParallel", "DistributedDataParallel"]
