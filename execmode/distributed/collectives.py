"""Collectives on CPU tensors over MPI, in place as ``torch.distributed``'s: each rank
passes its tensor, and each rank's tensor holds the result afterwards.

Every collective first exchanges a small header per rank (a few integers: the tensor's
dtype and shape, the root, and whether the rank's own arguments were wrong; exchange.py),
so a rank whose tensor differs fails on every rank with the same message,
naming each rank's shape, instead of hanging or reading past a buffer. Then the data
moves through mpi4py's buffer methods (``Allreduce``, ``Bcast``, ``Allgather``,
``Reduce_scatter_block``) on the tensors' NumPy arrays, into them where their memory
is contiguous (one copy otherwise).

Collectives write tensors' memory directly, outside autograd, as PyTorch's do; the write
counts as an in-place update for autograd (``tape.mark_modified``). A recorder sees each
one as an op (``all_reduce`` ...) after it completes, from its start to its end, with
``waited_us`` (the header exchange: where a rank waits for the last one to arrive) and
``moved_bytes`` (what the data exchange sent) in its attrs: in a merged trace of the
ranks (``execmode launch --profile``), the rank that waited least is the one the others
waited for. A debugger does not stop before them (docs/distributed.md says what is not
built yet).

Inside ``em.jit`` a collective on CPU tensors becomes graph nodes (graph_ops.py): the
argument checks run at trace time on the tensors' shapes and dtypes, and the exchange runs
at every call of the plan. Where it cannot be a node (``async_op=True``, a GPU tensor) or
this rank's arguments are wrong (every rank must hear of it in the exchange, now), the
graph breaks there, with the reason, and the collective runs eagerly between segments.
"""

from __future__ import annotations

import numpy as np

from .. import dispatch
from .._tensor import Tensor
from ..dtypes import type_text
from ..errors import ArgumentError, ExecmodeError, ShapeError, describe_operand
from ..tape import mark_modified
from . import exchange, graph_ops
from .errors import DistributedError
from .exchange import ReduceOp
from .process_group import default_group

__all__ = ["ReduceOp", "Work", "all_gather", "all_gather_into_tensor", "all_reduce",
           "barrier", "broadcast", "reduce_scatter", "reduce_scatter_tensor"]


class Work:
    """What ``async_op=True`` returns. execmode's collectives complete before they
    return, so ``wait()`` has nothing left to wait for."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True


# --- arguments ------------------------------------------------------------------------

def _array(caller: str, t, what: str = "tensor") -> np.ndarray:
    """``t``'s NumPy array, or why a collective cannot use it. A traced tensor (graph
    mode: _in_graph) has no values yet: the checks read its shape and dtype."""
    if not isinstance(t, Tensor):
        raise ArgumentError(f"{caller}: {what} must be a Tensor, got {type(t).__name__}")
    if t.is_traced:
        return graph_ops.stand_in(t)
    data = t._data
    if data.__class__ is not np.ndarray:
        raise DistributedError(
            f"{caller}: {what} {describe_operand(t)} is not a CPU tensor; NCCL (collectives "
            "on GPUs) is not built yet: move it with .cpu() first")
    return data


def _in_graph(caller: str, tensors, async_op: bool) -> bool:
    """Whether this call is traced by ``em.jit`` and becomes graph nodes. Where it cannot
    (graph_ops.refusal), the graph breaks here with the reason, and the collective runs
    eagerly between the segments."""
    if dispatch.current_tracer() is None:
        return False
    why = graph_ops.refusal(tensors, async_op)
    if why is None:
        return True
    _materialize(caller, tensors, why)
    return False


def _materialize(caller: str, tensors, why: str) -> None:
    """Break the graph here: the traced tensors get their values, and the collective runs
    eagerly between the segments (at every call: a function with breaks re-runs its
    Python), on captures as well as on values traced."""
    dispatch.current_tracer().break_graph(
        f"dist.{caller} {why}: it runs between segments (a collective)", caller)


def _eager_after_all(caller: str, tensors, check) -> Exception | None:
    """This rank's arguments are wrong under the trace: every rank must hear of it in the
    collective's header exchange, so the graph breaks and the checks run again eagerly
    (the error is raised after the exchange, as eagerly)."""
    _materialize(caller, tensors, "with wrong arguments on this rank, which every rank "
                                  "must hear of now")
    return _problem(check)


def _writable(caller: str, t: Tensor, data: np.ndarray, what: str = "tensor") -> None:
    if not data.flags.writeable:
        raise ArgumentError(f"{caller}: {what} {describe_operand(t)} is read-only (a "
                            "broadcast view?): the result is written into it; pass a tensor "
                            "with memory of its own (.clone())")


def _write(t: Tensor, data: np.ndarray, result: np.ndarray) -> None:
    """Put ``result`` into ``t`` (unless it was computed there) and tell autograd."""
    if result is not data:
        data[...] = result
    mark_modified(t)


def _finish(async_op: bool, caller: str | None = None, pg=None, inputs: tuple = (),
            out: np.ndarray | None = None, moved: int = 0, **attrs):
    """What the collective returns; first, when a listener records ops, its event."""
    if caller is not None and dispatch._listening:
        exchange.record(caller, pg, inputs, out, moved, attrs)
    return Work() if async_op else None


def _contiguous(data: np.ndarray) -> np.ndarray:
    """Memory MPI can write: the array itself where it is contiguous, else a scratch."""
    return data if data.flags.c_contiguous else np.empty(data.shape, data.dtype)


# --- the collectives ------------------------------------------------------------------

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Combine ``tensor`` across ranks with ``op`` (SUM, AVG, PRODUCT, MIN, MAX); every
    rank's ``tensor`` holds the result."""
    caller = "all_reduce"
    pg = default_group(caller, group)
    if not (async_op or dispatch._listening or dispatch.current_tracer() is not None):
        # A training loop's all_reduce repeats what an earlier call checked: its short path
        data = tensor._data if tensor.__class__ is Tensor else None
        flags = data.flags if data.__class__ is np.ndarray else None
        if flags is not None and flags.c_contiguous and flags.writeable \
                and exchange.repeated_all_reduce(pg, caller, data, op):
            mark_modified(tensor)
            return None
    data = None

    def check():
        nonlocal data
        data = _array(caller, tensor)
        _writable(caller, tensor, data)
        exchange.reduce_op(caller, op, data.dtype)

    graph = _in_graph(caller, (tensor,), async_op)
    problem = _problem(check)
    if graph and problem is None:
        op, _ = exchange.reduce_op(caller, op, data.dtype)
        graph_ops.write(tensor, graph_ops.node(caller, tensor, reduce_op=op.value))
        return _finish(async_op)
    if graph:
        problem = _eager_after_all(caller, (tensor,), check)
    exchange.same_everywhere(caller, exchange.agree(pg, caller, data, problem))
    work = data if data.flags.c_contiguous else np.ascontiguousarray(data)
    op = exchange.all_reduce_into(pg, caller, work, op)
    _write(tensor, data, work)
    return _finish(async_op, caller, pg, (tensor,), data, work.nbytes, op=op.value)


def broadcast(tensor, src: int = 0, group=None, async_op: bool = False):
    """Copy rank ``src``'s ``tensor`` into every other rank's."""
    caller = "broadcast"
    pg = default_group(caller, group)
    data = None

    def check():
        nonlocal data
        if isinstance(src, bool) or not isinstance(src, int | np.integer) \
                or not 0 <= src < pg.size:
            raise ArgumentError(f"{caller}: src must be a rank in 0..{pg.size - 1}, got "
                                f"{src!r}")
        data = _array(caller, tensor)
        _writable(caller, tensor, data)

    graph = _in_graph(caller, (tensor,), async_op)
    problem = _problem(check)
    if graph and problem is None:
        received = graph_ops.node(caller, tensor, src=int(src))
        if pg.rank != src:  # the source keeps its tensor as it is, as eagerly
            graph_ops.write(tensor, received)
        return _finish(async_op)
    if graph:
        problem = _eager_after_all(caller, (tensor,), check)
    headers = exchange.agree(pg, caller, data, problem, root=-1 if problem else int(src))
    root = exchange.broadcast_root(caller, headers)
    work = data if data.flags.c_contiguous else np.ascontiguousarray(data)
    pg.comm.Bcast(exchange.mpi_buffer(work), root=root)
    if pg.rank != root:
        _write(tensor, data, work)
    return _finish(async_op, caller, pg, (tensor,), data, work.nbytes, src=root)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """Every rank's ``tensor``, in rank order, into every rank's ``tensor_list`` (a list
    of world-size tensors of ``tensor``'s shape and dtype)."""
    caller = "all_gather"
    pg = default_group(caller, group)
    data = None

    def check():
        nonlocal data
        data = _array(caller, tensor)
        _output_list(caller, "tensor_list", tensor_list, pg.size, data)

    tensors = (tensor, *_listed(tensor_list))
    graph = _in_graph(caller, tensors, async_op)
    problem = _problem(check)
    if graph and problem is None:
        gathered = graph_ops.node(caller, tensor, ranks=pg.size)
        for rank, out in enumerate(tensor_list):
            graph_ops.write(out, gathered[rank])
        return _finish(async_op)
    if graph:
        problem = _eager_after_all(caller, tensors, check)
    exchange.same_everywhere(caller, exchange.agree(pg, caller, data, problem))
    gathered = np.empty((pg.size, *data.shape), data.dtype)
    pg.comm.Allgather(exchange.mpi_buffer(np.ascontiguousarray(data)),
                      exchange.mpi_buffer(gathered))
    for out, part in zip(tensor_list, gathered):
        _write(out, out._data, part)
    return _finish(async_op, caller, pg, (tensor,), gathered, gathered.nbytes)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Every rank's ``input_tensor`` concatenated along dim 0 (or stacked) into
    ``output_tensor``, which holds world size times its elements."""
    caller = "all_gather_into_tensor"
    pg = default_group(caller, group)
    data = out = None

    def check():
        nonlocal data, out
        data = _array(caller, input_tensor, "input_tensor")
        out = _array(caller, output_tensor, "output_tensor")
        _writable(caller, output_tensor, out, "output_tensor")
        _sized(caller, output_tensor, out, input_tensor, data, pg.size, "output_tensor")

    tensors = (output_tensor, input_tensor)
    graph = _in_graph(caller, tensors, async_op)
    problem = _problem(check)
    if graph and problem is None:
        graph_ops.write(output_tensor, graph_ops.node(caller, input_tensor,
                                                      shape=tuple(output_tensor.shape)))
        return _finish(async_op)
    if graph:
        problem = _eager_after_all(caller, tensors, check)
    exchange.same_everywhere(caller, exchange.agree(pg, caller, data, problem),
                             "input_tensor")
    work = _contiguous(out)
    pg.comm.Allgather(exchange.mpi_buffer(np.ascontiguousarray(data)),
                      exchange.mpi_buffer(work))
    _write(output_tensor, out, work)
    return _finish(async_op, caller, pg, (input_tensor,), out, work.nbytes)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Combine the ranks' ``input_list``s elementwise with ``op``; rank r's ``output``
    gets the combined ``input_list[r]``."""
    caller = "reduce_scatter"
    pg = default_group(caller, group)
    out = None

    def check():
        nonlocal out
        out = _array(caller, output, "output")
        _writable(caller, output, out, "output")
        _input_list(caller, input_list, pg.size, out)
        exchange.reduce_op(caller, op, out.dtype)

    tensors = (output, *_listed(input_list))
    graph = _in_graph(caller, tensors, async_op)
    problem = _problem(check)
    if graph and problem is None:
        op, _ = exchange.reduce_op(caller, op, out.dtype)
        graph_ops.write(output, graph_ops.node(caller, *input_list, reduce_op=op.value))
        return _finish(async_op)
    if graph:
        problem = _eager_after_all(caller, tensors, check)
    exchange.same_everywhere(caller, exchange.agree(pg, caller, out, problem), "output")
    send = np.stack([t._data for t in input_list])
    return _reduce_scatter(caller, pg, output, out, send, op, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None,  # noqa: A002 - PyTorch's
                          async_op: bool = False):
    """``reduce_scatter`` with the inputs in one tensor: ``input`` holds world size times
    ``output``'s elements, rank r's part first along dim 0."""
    caller = "reduce_scatter_tensor"
    pg = default_group(caller, group)
    data = out = None

    def check():
        nonlocal data, out
        out = _array(caller, output, "output")
        data = _array(caller, input, "input")
        _writable(caller, output, out, "output")
        _sized(caller, input, data, output, out, pg.size, "input")
        exchange.reduce_op(caller, op, out.dtype)

    tensors = (output, input)
    graph = _in_graph(caller, tensors, async_op)
    problem = _problem(check)
    if graph and problem is None:
        op, _ = exchange.reduce_op(caller, op, out.dtype)
        graph_ops.write(output, graph_ops.node(caller, input, shape=tuple(output.shape),
                                               reduce_op=op.value))
        return _finish(async_op)
    if graph:
        problem = _eager_after_all(caller, tensors, check)
    exchange.same_everywhere(caller, exchange.agree(pg, caller, out, problem), "output")
    return _reduce_scatter(caller, pg, output, out, np.ascontiguousarray(data), op, async_op)


def _reduce_scatter(caller, pg, output, out, send, op, async_op):
    work = _contiguous(out)
    op = exchange.reduce_scatter_into(pg, caller, send, work, op)
    _write(output, out, work)
    return _finish(async_op, caller, pg, (output,), out, send.nbytes, op=op.value)


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank has reached this call."""
    pg = default_group("barrier", group)
    if _in_graph("barrier", (), async_op):
        graph_ops.node("barrier", device="cpu")
        return _finish(async_op)
    exchange.barrier(pg)
    return _finish(async_op, "barrier", pg)


def _listed(tensors) -> tuple:
    """The tensors of a list argument (nothing if it is not a list: its check says so)."""
    return tuple(tensors) if isinstance(tensors, list | tuple) else ()


# --- argument checks that run before the header exchange -------------------------------

def _problem(check) -> Exception | None:
    """The error ``check()`` raises, kept to be raised after the header exchange."""
    try:
        check()
    except ExecmodeError as e:
        return e
    return None


def _output_list(caller, what, tensors, size, like: np.ndarray) -> None:
    if not isinstance(tensors, list | tuple) or len(tensors) != size:
        got = len(tensors) if isinstance(tensors, list | tuple) else type(tensors).__name__
        raise ArgumentError(f"{caller}: {what} must be a list of {size} tensors (the world "
                            f"size), got {got}")
    for i, t in enumerate(tensors):
        data = _array(caller, t, f"{what}[{i}]")
        _writable(caller, t, data, f"{what}[{i}]")
        if data.shape != like.shape or data.dtype != like.dtype:
            raise ShapeError(f"{caller}: {what}[{i}] is {type_text(data.shape, data.dtype)}, "
                             f"the tensor is {type_text(like.shape, like.dtype)}: they must "
                             "match")


def _input_list(caller, tensors, size, like: np.ndarray) -> None:
    if not isinstance(tensors, list | tuple) or len(tensors) != size:
        got = len(tensors) if isinstance(tensors, list | tuple) else type(tensors).__name__
        raise ArgumentError(f"{caller}: input_list must be a list of {size} tensors (the "
                            f"world size), got {got}")
    for i, t in enumerate(tensors):
        data = _array(caller, t, f"input_list[{i}]")
        if data.shape != like.shape or data.dtype != like.dtype:
            raise ShapeError(f"{caller}: input_list[{i}] is "
                             f"{type_text(data.shape, data.dtype)}, output is "
                             f"{type_text(like.shape, like.dtype)}: they must match")


def _sized(caller, big_t, big, small_t, small, size, what) -> None:
    """``big`` must hold ``size`` times ``small``'s elements, of the same dtype."""
    if big.dtype != small.dtype or big.size != size * small.size:
        raise ShapeError(f"{caller}: {what} is {describe_operand(big_t)}; it must hold the "
                         f"world size ({size}) times the {describe_operand(small_t)}'s "
                         f"elements, of its dtype")
