"""Many tensors through few collectives: parameters broadcast from one rank, gradients
averaged across ranks, each in buckets of flat memory (one MPI call per bucket rather
than per tensor), as DistributedDataParallel does.

Buckets hold tensors of one dtype, in reverse order of the parameters (the order
backward produces gradients in), up to ``bucket_cap_mb`` each. They move through the
collectives (collectives.py), so each bucket waits for the other ranks at most the
group's timeout and is an op for a recorder (``all_reduce``, ``broadcast``, at the line
that wrapped the model or ran backward). Nothing here is pickled:
what the ranks compare (which parameters have gradients, the models' shapes) travels as
integer arrays, and a mismatch's description as UTF-8 text.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .._tensor import Tensor
from ..dtypes import type_text
from ..tape import mark_modified
from .collectives import ReduceOp, all_reduce, broadcast
from .errors import DistributedError
from .process_group import ProcessGroup

DEFAULT_BUCKET_CAP_MB = 25  # PyTorch's default


def _tensor(array: np.ndarray) -> Tensor:
    """A tensor on ``array`` (no op: the collectives write into it)."""
    t = Tensor.__new__(Tensor)
    t._data = array
    t.requires_grad = False
    return t


def buckets(tensors: list, cap_bytes: int) -> list[list]:
    """``tensors`` in buckets of one dtype and at most ``cap_bytes`` (a larger tensor has
    one of its own), in the order given."""
    out: list[list] = []
    open_by_dtype: dict = {}
    for t in tensors:
        dtype = t._data.dtype
        bucket = open_by_dtype.get(dtype)
        size = t._data.nbytes
        if bucket is None or bucket[1] + size > cap_bytes:
            bucket = open_by_dtype[dtype] = [[], 0]
            out.append(bucket[0])
        bucket[0].append(t)
        bucket[1] += size
    return out


def exchange_text(pg: ProcessGroup, text: str) -> list[str]:
    """Every rank's ``text`` (UTF-8 bytes through Allgatherv)."""
    mine = np.frombuffer(text.encode(), np.uint8)
    sizes = np.empty(pg.size, np.int64)
    pg.comm.Allgather(np.array([mine.size], np.int64), sizes)
    every = np.empty(int(sizes.sum()), np.uint8)
    pg.comm.Allgatherv(mine, [every, sizes.tolist()])
    starts = np.concatenate([[0], np.cumsum(sizes)])
    return [every[starts[r]:starts[r + 1]].tobytes().decode() for r in range(pg.size)]


def check_same_tensors(pg: ProcessGroup, caller: str, named: list[tuple[str, Tensor]]) -> None:
    """Every rank must hold tensors of the same names, shapes and dtypes (one Allgather of
    a digest; the descriptions are exchanged only when they differ)."""
    lines = [f"{name}: {type_text(t.shape, t.dtype)}" for name, t in named]
    digest = hashlib.sha256("\n".join(lines).encode()).digest()[:8]
    mine = np.frombuffer(digest, np.int64)
    every = np.empty(pg.size, np.int64)
    pg.comm.Allgather(mine, every)
    if (every == every[0]).all():
        return
    described = [text.split("\n") for text in exchange_text(pg, "\n".join(lines))]
    for r in range(1, pg.size):
        if described[r] == described[0]:
            continue
        for k in range(max(len(described[0]), len(described[r]))):
            a = described[0][k] if k < len(described[0]) else "(nothing)"
            b = described[r][k] if k < len(described[r]) else "(nothing)"
            if a != b:
                raise DistributedError(
                    f"{caller}: the ranks' models differ: rank 0 has {len(described[0])} "
                    f"tensors, rank {r} has {len(described[r])}; the first difference, "
                    f"tensor {k}: rank 0 has {a}, rank {r} has {b}")


def broadcast_tensors(pg: ProcessGroup, tensors: list, src: int = 0,
                      cap_bytes: int = DEFAULT_BUCKET_CAP_MB << 20) -> None:
    """Copy rank ``src``'s values of ``tensors`` into every rank's, bucket by bucket."""
    for bucket in buckets(tensors, cap_bytes):
        flat = np.concatenate([t._data.reshape(-1) for t in bucket]) if pg.rank == src \
            else np.empty(sum(t._data.size for t in bucket), bucket[0]._data.dtype)
        broadcast(_tensor(flat), src=src, group=pg)
        if pg.rank != src:
            offset = 0
            for t in bucket:
                n = t._data.size
                t._data[...] = flat[offset:offset + n].reshape(t._data.shape)
                mark_modified(t)
                offset += n


def average_gradients(pg: ProcessGroup, parameters: list,
                      cap_bytes: int = DEFAULT_BUCKET_CAP_MB << 20) -> int:
    """Replace each parameter's ``.grad`` with the mean of the ranks' gradients, one
    Allreduce per bucket; returns the number of buckets.

    A parameter without a gradient on some rank counts as zeros there (PyTorch's
    ``find_unused_parameters``); one without a gradient on every rank keeps ``None``.
    Which is which costs one small Allreduce of a flag per parameter. The averaged
    gradients are views of each bucket's flat buffer (PyTorch's
    ``gradient_as_bucket_view``)."""
    params = [p for p in parameters if p.requires_grad]
    has_grad = np.array([p.grad is not None for p in params], np.bool_)
    all_reduce(_tensor(has_grad), op=ReduceOp.MAX, group=pg)  # any rank has one
    used = [p for p, flag in zip(params, has_grad) if flag]
    made = buckets(list(reversed(used)), cap_bytes)
    for bucket in made:
        dtype = bucket[0]._data.dtype
        flat = np.empty(sum(p._data.size for p in bucket), dtype)
        offset = 0
        for p in bucket:
            n = p._data.size
            if p.grad is None:
                flat[offset:offset + n] = 0
            else:
                flat[offset:offset + n] = p.grad.numpy().reshape(-1)
            offset += n
        all_reduce(_tensor(flat), op=ReduceOp.AVG, group=pg)  # gradients are floating-point
        offset = 0
        for p in bucket:
            n = p._data.size
            grad = Tensor.__new__(Tensor)
            grad._data = flat[offset:offset + n].reshape(p._data.shape)
            grad.requires_grad = False
            p.grad = grad
            offset += n
    return len(made)
