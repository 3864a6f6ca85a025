"""DistributedDataParallel's buckets under ``em.jit``: the same buckets as eagerly
(buckets.py), made of traced values, so a jitted training step through a DDP module is
one graph per rank whose gradient averaging is one ``all_reduce`` node per bucket.

Eagerly the buckets are NumPy buffers filled by copying; here each bucket is a ``concat``
of its gradients, flattened (exact: the same bits), all-reduced with ``AVG`` by a graph
node (graph_ops.py: the eager exchange at every call), and each parameter's ``.grad``
becomes a view of the reduced bucket, as eager's is a view of its buffer. The node
carries ``bucket``, the names of the parameters it covers, so the printed IR, the pass
record and ``execmode explain`` show the buckets.

Which parameters have a gradient on some rank is what eager DDP exchanges before the
buckets at every backward (one small all-reduce of flags). A trace decides it once: the
ranks trace their first call together, so the flags are exchanged then, at trace time,
and the graph keeps the buckets they gave (a parameter unused on this rank but used on
another is zeros in its bucket, as eagerly). The replays exchange the buckets only.
"""

from __future__ import annotations

import numpy as np

from .. import functional as F
from .._tensor import Tensor
from ..errors import ShapeError
from . import exchange, graph_ops
from .buckets import buckets
from .errors import DistributedError
from .process_group import ProcessGroup


def _own_buffer(parts: list) -> Tensor:
    """The flat parts joined in a tensor of its own (the collective writes into it, never
    into a gradient or a buffer: concat of one part would be that part)."""
    return F.concat(parts) if len(parts) > 1 else parts[0].clone()


def _used_anywhere(pg: ProcessGroup, has_grad: np.ndarray) -> np.ndarray:
    """Every rank's flags combined (any rank has a gradient), at trace time: the eager
    exchange on a plain array, outside the graph.

    It leaves the group's count of collectives as it was: the count numbers the headers
    (exchange.py), and the replays, which skip this exchange, must number theirs as the
    trace did. A rank that retraces alone meets the others' next collective under the
    same number, and every rank raises, naming the shapes (and stays in step)."""
    flags = has_grad.copy()
    count = pg.sequence
    headers = exchange.agree(pg, "DistributedDataParallel", flags, None)
    try:
        exchange.same_everywhere("DistributedDataParallel", headers)
    except ShapeError as e:  # the count stays: the others counted their collective
        raise DistributedError(
            f"{e}. Under em.jit this rank traced its DDP step while another rank ran "
            "something else (its replay's buckets): the ranks must trace their steps "
            "together, so give every rank the same shapes (DistributedSampler pads the "
            "ranks' shares to one size)") from None
    exchange.all_reduce_into(pg, "DistributedDataParallel", flags, exchange.ReduceOp.MAX)
    pg.sequence = count
    return flags


def average_gradients_traced(pg: ProcessGroup, named: list[tuple[str, Tensor]],
                             cap_bytes: int) -> list[tuple[str, ...]]:
    """Each parameter's ``.grad`` replaced, under the trace, with the mean of the ranks'
    gradients, one ``all_reduce`` node per bucket; returns the buckets' parameter names."""
    named = [(name, p) for name, p in named if p.requires_grad]
    has_grad = np.array([p.grad is not None for _, p in named], np.bool_)
    used = [(name, p) for (name, p), flag in zip(named, _used_anywhere(pg, has_grad)) if flag]
    name_of = {id(p): name for name, p in used}
    made = buckets([p for _, p in reversed(used)], cap_bytes)
    for bucket in made:
        parts = [F.zeros(p.size, dtype=p.dtype) if p.grad is None
                 else F.reshape(p.grad, (-1,)) for p in bucket]
        flat = _own_buffer(parts)
        names = tuple(name_of[id(p)] for p in bucket)
        graph_ops.write(flat, graph_ops.node("all_reduce", flat, reduce_op="avg",
                                             bucket=names))
        offset = 0
        for p in bucket:
            p.grad = F.reshape(flat[offset:offset + p.size], p.shape)
            offset += p.size
    return [tuple(name_of[id(p)] for p in bucket) for bucket in made]


def broadcast_traced(pg: ProcessGroup, named: list[tuple[str, Tensor]], src: int,
                     cap_bytes: int) -> None:
    """Rank ``src``'s values of the tensors (buffers) into every rank's, under the trace:
    one ``broadcast`` node per bucket, written back into each tensor on the other ranks."""
    name_of = {id(t): name for name, t in named}
    for bucket in buckets([t for _, t in named], cap_bytes):
        flat = _own_buffer([F.reshape(t, (-1,)) for t in bucket])
        received = graph_ops.node("broadcast", flat, src=src,
                                  bucket=tuple(name_of[id(t)] for t in bucket))
        if pg.rank == src:  # the source keeps its tensors, as eagerly
            continue
        offset = 0
        for t in bucket:
            graph_ops.write(t, F.reshape(received[offset:offset + t.size], t.shape))
            offset += t.size
