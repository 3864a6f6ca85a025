"""Collectives as graph nodes: what a collective called inside ``em.jit`` becomes.

Each collective is an op of the op registry (registered here, when the distributed package
loads: the ops run MPI, which the layers below must not import), flagged ``impure`` and
``collective``. ``impure`` is what the passes read: constant folding, CSE and DCE keep every
such node as traced, fusion never takes an opaque op into a kernel, and the pass manager
checks after every pass that the impure nodes are still there, in the order traced
(passes/effects.py), so every rank issues its collectives in the same order. ``collective``
is what the runtime reads: such a plan runs step by step from Python (no whole-graph C
program, no generated replay that would retry a failed plan), and nothing re-runs the node
on one rank (the graph interpreter refuses), since the other ranks would not take part.

The in-place write of ``all_reduce(t)`` (``broadcast``, the outputs of ``all_gather`` and
``reduce_scatter``) is traced as every in-place write is (graph/functionalization.py): a
node computes the new value, an assign writes it into the tensor, and a written argument
or capture gets it back when the segment ends. A node's implementation is the eager
collective's exchange (exchange.py) on its operand arrays: the same header, the same MPI
call, the same bits, and the same op event for a recorder.
"""

from __future__ import annotations

import numpy as np

from .. import dispatch
from .._tensor import Tensor
from ..ops.registry import OPAQUE, OPS, OpDef, register
from ..tape import mark_modified
from . import exchange
from .errors import DistributedError
from .process_group import default_group

# --- tracing: a collective's call becomes nodes ----------------------------------------


def refusal(tensors, async_op: bool) -> str | None:
    """Why a collective on ``tensors`` cannot be a graph node (None: it can)."""
    if async_op:
        return "with async_op=True (its Work handle is a Python object the graph cannot hold)"
    for t in tensors:
        if isinstance(t, Tensor) and str(t.device) != "cpu":
            return (f"on a {t.device} tensor (NCCL, collectives on GPUs, is not built yet: "
                    "only CPU collectives are graph nodes)")
    return None


def stand_in(t: Tensor) -> np.ndarray:
    """An array of ``t``'s shape and dtype without memory, for the argument checks that
    read only those (a traced tensor has no values yet)."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, t.dtype), shape=tuple(t.shape),
                                           strides=(0,) * len(t.shape))


def node(name: str, *inputs, **attrs) -> Tensor:
    """The traced result of collective op ``name`` on ``inputs``."""
    return dispatch.apply(OPS[name], *inputs, **attrs)


def write(target: Tensor, value: Tensor) -> None:
    """``target[...] = value`` under the trace, outside autograd as the eager write is."""
    dispatch.apply(OPS["assign"], target, value)
    mark_modified(target)


# --- replay: a plan's step runs the exchange -------------------------------------------

def _fresh(a) -> np.ndarray:
    # A step never writes its operands: they are other steps' values or the caller's arrays.
    return np.array(a, order="C")


def _recorded(caller: str, pg, operand, out: np.ndarray, moved: int, **attrs) -> None:
    if dispatch._listening:
        exchange.record(caller, pg, (dispatch.plain_tensor(operand),), out, moved, attrs)


def _all_reduce(xp, a, *, reduce_op, bucket=()):
    pg = default_group("all_reduce")
    work = _fresh(a)
    exchange.same_everywhere("all_reduce", exchange.agree(pg, "all_reduce", work, None))
    done = exchange.all_reduce_into(pg, "all_reduce", work, reduce_op)
    _recorded("all_reduce", pg, a, work, work.nbytes, op=done.value)
    return work


def _broadcast(xp, a, *, src, bucket=()):
    pg = default_group("broadcast")
    work = _fresh(a)
    root = exchange.broadcast_root("broadcast", exchange.agree(pg, "broadcast", work, None,
                                                               root=src))
    pg.comm.Bcast(exchange.mpi_buffer(work), root=root)
    _recorded("broadcast", pg, a, work, work.nbytes, src=root)
    return work


def _gathered(caller: str, pg, a, out: np.ndarray) -> np.ndarray:
    data = np.ascontiguousarray(a)
    exchange.same_everywhere(caller, exchange.agree(pg, caller, data, None),
                             "tensor" if caller == "all_gather" else "input_tensor")
    pg.comm.Allgather(exchange.mpi_buffer(data), exchange.mpi_buffer(out))
    _recorded(caller, pg, a, out, out.nbytes)
    return out


def _all_gather(xp, a, *, ranks):
    pg = _sized_group("all_gather", ranks)
    return _gathered("all_gather", pg, a, np.empty((pg.size, *np.shape(a)), a.dtype))


def _all_gather_into_tensor(xp, a, *, shape):
    pg = default_group("all_gather_into_tensor")
    return _gathered("all_gather_into_tensor", pg, a, np.empty(shape, a.dtype))


def _scattered(caller: str, pg, send: np.ndarray, shape, reduce_op) -> np.ndarray:
    work = np.empty(shape, send.dtype)
    exchange.same_everywhere(caller, exchange.agree(pg, caller, work, None), "output")
    done = exchange.reduce_scatter_into(pg, caller, send, work, reduce_op)
    _recorded(caller, pg, send, work, send.nbytes, op=done.value)
    return work


def _reduce_scatter(xp, *parts, reduce_op):
    pg = _sized_group("reduce_scatter", len(parts))
    return _scattered("reduce_scatter", pg, np.stack(parts), np.shape(parts[0]),
                      reduce_op)


def _reduce_scatter_tensor(xp, a, *, shape, reduce_op):
    pg = default_group("reduce_scatter_tensor")
    return _scattered("reduce_scatter_tensor", pg, np.ascontiguousarray(a), shape,
                      reduce_op)


def _barrier(xp, *, device):
    pg = default_group("barrier")
    exchange.barrier(pg)
    if dispatch._listening:  # the eager barrier's event: no operand, no output
        exchange.record("barrier", pg, (), None, 0, {})
    return np.zeros((), np.bool_)


def _sized_group(caller: str, ranks: int):
    """The group, which must still have the world size the graph was traced for (the
    node's shape holds one part per rank)."""
    pg = default_group(caller)
    if pg.size != ranks:
        raise DistributedError(f"{caller}: this graph was traced for {ranks} ranks and the "
                               f"group now has {pg.size}; call the jitted function in a group "
                               "of that size")
    return pg


# --- the ops ---------------------------------------------------------------------------

def _same_dtype(dtypes, attrs):
    return dtypes[0]


def _collective(name: str, impl, shape_rule, doc: str, dtype_rule=_same_dtype) -> None:
    # A dtype rule of their own: the default probes the impl on dummies, which would be a
    # collective at trace time.
    if name not in OPS:  # (a reloaded module: the table keeps the first definition)
        register(OpDef(name=name, kind=OPAQUE, impl=impl, shape_rule=shape_rule,
                       dtype_rule=dtype_rule, impure=True, collective=True, doc=doc))


_collective("barrier", _barrier, lambda *, device: (),
            "dist.barrier under em.jit: waits for every rank (its value, False, is unused).",
            lambda dtypes, attrs: np.dtype(np.bool_))
# ``bucket``: the names of the parameters (buffers) a DistributedDataParallel bucket holds,
# flattened into the operand (graph_buckets.py), so the IR shows what each node moves.
_collective("all_reduce", _all_reduce, lambda x, *, reduce_op, bucket=(): tuple(x.shape),
            "dist.all_reduce under em.jit: every rank's tensor combined with op.")
_collective("broadcast", _broadcast, lambda x, *, src, bucket=(): tuple(x.shape),
            "dist.broadcast under em.jit: rank src's tensor on every rank.")
_collective("all_gather", _all_gather, lambda x, *, ranks: (ranks, *x.shape),
            "dist.all_gather under em.jit: every rank's tensor, stacked in rank order.")
_collective("all_gather_into_tensor", _all_gather_into_tensor,
            lambda x, *, shape: tuple(shape),
            "dist.all_gather_into_tensor under em.jit: every rank's tensor in rank order, "
            "in the output's shape.")
_collective("reduce_scatter", _reduce_scatter, lambda *xs, reduce_op: tuple(xs[0].shape),
            "dist.reduce_scatter under em.jit: rank r gets the reduction of every rank's "
            "r-th input.")
_collective("reduce_scatter_tensor", _reduce_scatter_tensor,
            lambda x, *, shape, reduce_op: tuple(shape),
            "dist.reduce_scatter_tensor under em.jit: rank r gets the reduction of every "
            "rank's r-th part of the input.")
