"""DistributedDataParallel's gradient averaging overlapped with backward (PyTorch's
``Reducer``): each bucket's all-reduce starts as soon as backward has produced every
gradient in it, and moves while backward computes the rest.

The buckets are laid out once, at wrap time, over every trainable parameter (one dtype
each, in reverse parameter order, up to ``bucket_cap_mb``: buckets.py), so every rank
has the same buckets in the same order. A post-accumulate-grad hook on each parameter
(tape.register_post_accumulate_grad_hook: it runs once the parameter's ``.grad`` holds
every contribution of the backward) counts its bucket down; a bucket whose count reaches
zero is copied into a flat buffer, and the ready buckets start in bucket order (a bucket
waits for the ones before it, so every rank starts the same collectives in the same
order, as MPI needs). At the end of backward (the callback DistributedDataParallel
queues) the buckets not started yet start, every one is finished, and each ``.grad``
becomes a view of its averaged bucket, as buckets.average_gradients leaves it: the same
bits (an MPI sum, then a division by the world size) on two ranks; on more, MPI may add
the ranks' values in another order in a nonblocking all-reduce than in a blocking one.

Which parameters have a gradient on some rank travels in the buckets themselves: after a
bucket's gradients, one element per parameter, 1 where this rank has a gradient and 0
where it has none (zeros in its place). The sum of the flags says whether any rank had
one, so a parameter without a gradient anywhere keeps ``None``, with no exchange of its
own. A parameter that gets no gradient in a backward holds its bucket, and the buckets
after it, until the end of that backward (they are averaged then, without overlap),
unless ``find_unused_parameters=True`` found it unused when the backward began.

The overlap is on where the ranks are on several machines, and off where they all are on
one (overlap_enabled says why): the buckets are then all-reduced when backward ends
(buckets.average_gradients). ``EXECMODE_DDP_OVERLAP=1`` or ``=0`` decides instead; every
rank must take the same setting.
"""

from __future__ import annotations

import os

import numpy as np

from .. import dispatch
from .._tensor import Tensor
from ..tape import MultiOutputOp, register_post_accumulate_grad_hook
from .buckets import buckets
from .errors import DistributedError
from .inflight import StartedAllReduce
from .process_group import ProcessGroup

OVERLAP_SWITCH = "EXECMODE_DDP_OVERLAP"


def overlap_enabled(pg: ProcessGroup) -> bool:
    """Whether DDP overlaps its all-reduces with backward: ``EXECMODE_DDP_OVERLAP`` where
    it is set, else only where the ranks are on several machines. On one machine MPI moves
    the data through shared memory, on the ranks' own CPUs and only inside their MPI
    calls: nothing moves while backward computes, and the nonblocking collectives, advanced
    a little at each gradient hook, took ~3x the blocking ones' time for the same bytes
    (a 2-rank step of a 1024-wide MLP, 8 buckets: 16.2 ms of backward against 13.9)."""
    text = os.environ.get(OVERLAP_SWITCH, "").strip().lower()
    if not text:
        return not pg.one_node
    return text not in ("0", "false", "no", "off")


class _Round:
    """One backward's averaging: what is left to produce in each bucket, the buckets'
    buffers, and the all-reduces started."""

    def __init__(self, layout: list[list]):
        self.left = [len(bucket) for bucket in layout]
        self.ready: set[int] = set()      # parameters (ids) whose gradients are done
        self.flats: list = [None] * len(layout)
        self.started: list[StartedAllReduce] = []
        # Parameters found unused when it began (id -> parameter), and those of them that
        # got a gradient all the same (a path outside the module): their hooks ran in this
        # backward. Not told by .grad's identity, which in-place accumulation keeps.
        self.unused: dict[int, Tensor] = {}
        self.late: dict[int, Tensor] = {}


class Reducer:
    """The buckets of one DistributedDataParallel and their all-reduces, one round per
    backward through its outputs."""

    def __init__(self, pg: ProcessGroup, named: list[tuple[str, Tensor]], cap_bytes: int):
        self.pg = pg
        trainable = [(name, p) for name, p in named if p.requires_grad]
        self.layout = buckets([p for _, p in reversed(trainable)], cap_bytes)
        self.bucket_of = {id(p): k for k, bucket in enumerate(self.layout) for p in bucket}
        self.names = {id(p): name for name, p in trainable}
        self._round: _Round | None = None
        self._hooks = [register_post_accumulate_grad_hook(p, self._gradient_done)
                       for _, p in trainable]

    def begin(self, outputs: tuple = ()) -> None:
        """A backward through the module's outputs has started: count the buckets down.
        With ``outputs`` (``find_unused_parameters=True``), the parameters that no path
        from them reaches are done at once (PyTorch's walk of the graph), so their
        buckets need not wait for the end of backward."""
        r = self._round = _Round(self.layout)
        if not outputs:
            return
        reached = _leaves_reached(outputs)
        for bucket in self.layout:
            for p in bucket:
                if id(p) not in reached:
                    r.unused[id(p)] = p
                    self._gradient_done(p)

    @property
    def overlapping(self) -> bool:
        """Whether a round is counting down (this backward's buckets start as they fill)."""
        return self._round is not None

    def forget(self) -> None:
        """Drop a round a failed backward left behind (no write when there is none: a
        forward traced by em.jit would count one as Python state the step changes)."""
        if self._round is not None:
            self._round = None

    def _gradient_done(self, p: Tensor) -> None:
        r = self._round
        if r is None or dispatch.current_tracer() is not None:
            return  # not a DDP backward (or a traced one: graph_buckets.py's nodes)
        if id(p) in r.ready:
            if id(p) in r.unused:
                r.late[id(p)] = p
            return
        r.ready.add(id(p))
        k = self.bucket_of[id(p)]
        r.left[k] -= 1
        if r.left[k] == 0:
            r.flats[k] = self._flatten(k)
            self._start_ready(r)
        for started in r.started:  # let MPI move what is in flight
            started.progress()

    def _start_ready(self, r: _Round) -> None:
        """Start the buckets that are ready, in bucket order, up to the first that is not."""
        while len(r.started) < len(self.layout) and r.flats[len(r.started)] is not None:
            k = len(r.started)
            names = tuple(self.names[id(p)] for p in self.layout[k])
            r.started.append(StartedAllReduce(self.pg, "all_reduce", r.flats[k],
                                              {"reduce_op": "avg", "bucket": names}))

    def _flatten(self, k: int) -> np.ndarray:
        """Bucket ``k``'s gradients in one buffer (zeros where this rank has none), then a
        flag per parameter: whether it has one."""
        bucket = self.layout[k]
        sizes = [p._data.size for p in bucket]
        total = sum(sizes)
        flat = np.empty(total + len(bucket), bucket[0]._data.dtype)
        offset = 0
        for j, (p, n) in enumerate(zip(bucket, sizes)):
            if p.grad is None:
                flat[offset:offset + n] = 0
                flat[total + j] = 0
            else:
                flat[offset:offset + n] = p.grad.numpy().reshape(-1)
                flat[total + j] = 1
            offset += n
        return flat

    def finish(self) -> int:
        """End of backward: start what has not started, wait for every bucket, and make
        each ``.grad`` a view of its averaged bucket; returns the number of buckets."""
        r, self._round = self._round, None
        if r is None:
            return 0
        late = list(r.late.values())
        for k, flat in enumerate(r.flats):
            if flat is None:
                r.flats[k] = self._flatten(k)
        self._start_ready(r)
        for k, started in enumerate(r.started):
            flat = started.finish()
            bucket = self.layout[k]
            total = flat.size - len(bucket)
            offset = 0
            for j, p in enumerate(bucket):
                n = p._data.size
                if flat[total + j] > 0:  # some rank had a gradient
                    grad = Tensor.__new__(Tensor)
                    grad._data = flat[offset:offset + n].reshape(p._data.shape)
                    grad.requires_grad = False
                    p.grad = grad
                offset += n
        if late:  # every rank has waited for every bucket: they stay in step
            raise DistributedError(
                f"DistributedDataParallel: parameter {self.names[id(late[0])]} got a "
                "gradient in this backward, though no path from the module's outputs "
                "reaches it (find_unused_parameters=True counted it unused and averaged its "
                "bucket without it); use it inside the module, or leave "
                "find_unused_parameters False")
        return len(self.layout)


def _leaves_reached(outputs: tuple) -> set[int]:
    """The ids of the leaves that some path of the tape from ``outputs`` reaches."""
    reached: set[int] = set()
    seen: set[int] = set()
    stack = list(outputs)
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, MultiOutputOp):
            stack.extend(item.inputs)
            continue
        if not isinstance(item, Tensor):
            continue
        node = item._grad_fn
        if node is None:
            reached.add(id(item))
        elif isinstance(node.op, MultiOutputOp):
            stack.append(node.op)
        else:
            stack.extend(node.inputs)
    return reached
