"""Collectives on CPU tensors over MPI, in place as ``torch.distributed``'s: each rank
passes its tensor, and each rank's tensor holds the result afterwards.

Every collective first exchanges a small header per rank (an ``Allgather`` of a few
integers: the tensor's dtype and shape, the root, and whether the rank's own arguments
were wrong), so a rank whose tensor differs fails on every rank with the same message,
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
waited for. They are not yet graph nodes, and a debugger does not stop before them
(docs/distributed.md says what is not built yet).
"""

from __future__ import annotations

import enum
import threading
import time

import numpy as np

from .. import dispatch
from .._tensor import Tensor
from ..dtypes import SUPPORTED, type_text
from ..errors import ArgumentError, DTypeError, ExecmodeError, ShapeError, describe_operand
from ..tape import mark_modified
from . import _mpi
from .errors import DistributedError
from .process_group import ProcessGroup, default_group


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and ``reduce_scatter`` combine the ranks' values."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"

    def __repr__(self) -> str:
        return f"ReduceOp.{self.name}"


class Work:
    """What ``async_op=True`` returns. execmode's collectives complete before they
    return, so ``wait()`` has nothing left to wait for."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True


_MAX_DIMS = 16
# When this thread's last header exchange began and ended (perf_counter_ns): a
# collective's event runs from the first, and the wait is the difference.
_exchange = threading.local()
_CODES = {dtype: code for code, dtype in enumerate(SUPPORTED)}
_UNSUPPORTED = -1


# --- arguments ------------------------------------------------------------------------

def _array(caller: str, t, what: str = "tensor") -> np.ndarray:
    """``t``'s NumPy array, or why a collective cannot use it."""
    if not isinstance(t, Tensor):
        raise ArgumentError(f"{caller}: {what} must be a Tensor, got {type(t).__name__}")
    data = t._data
    if t.is_traced:
        # Graph mode: the graph breaks here (the reason names the collective), the
        # segment before it runs, and the collective runs on its concrete values between
        # the segments, as eagerly. Collectives are not graph nodes yet.
        data = data.materialize(t, f"dist.{caller} (a collective)")
    if data.__class__ is not np.ndarray:
        raise DistributedError(
            f"{caller}: {what} {describe_operand(t)} is not a CPU tensor; NCCL (collectives "
            "on GPUs) is not built yet: move it with .cpu() first")
    return data


def _writable(caller: str, t: Tensor, data: np.ndarray, what: str = "tensor") -> None:
    if not data.flags.writeable:
        raise ArgumentError(f"{caller}: {what} {describe_operand(t)} is read-only (a "
                            "broadcast view?): the result is written into it; pass a tensor "
                            "with memory of its own (.clone())")


def _reduce_op(caller: str, op, dtype: np.dtype):
    """The MPI op for ``op`` on ``dtype`` (bools combine as any / all)."""
    try:
        op = op if isinstance(op, ReduceOp) else ReduceOp(str(op).lower())
    except ValueError:
        names = ", ".join(f"ReduceOp.{o.name}" for o in ReduceOp)
        raise ArgumentError(f"{caller}: op must be one of {names}, got {op!r}") from None
    if op is ReduceOp.AVG and dtype.kind != "f":
        raise DTypeError(f"{caller}: ReduceOp.AVG needs a floating-point tensor, got "
                         f"{type_text((), dtype)[:-2]}; use SUM and divide")
    mpi = _mpi.load()
    if dtype == np.bool_:
        return op, (mpi.MAX if op in (ReduceOp.SUM, ReduceOp.MAX) else mpi.MIN)
    table = {ReduceOp.SUM: mpi.SUM, ReduceOp.AVG: mpi.SUM, ReduceOp.PRODUCT: mpi.PROD,
             ReduceOp.MIN: mpi.MIN, ReduceOp.MAX: mpi.MAX}
    return op, table[op]


def _buffer(array: np.ndarray) -> np.ndarray:
    """The array as MPI moves it (bools as bytes: MPI's logical type has no MAX/MIN)."""
    return array.view(np.uint8) if array.dtype == np.bool_ else array


# --- the header every collective exchanges first --------------------------------------

def _agree(pg: ProcessGroup, caller: str, data: np.ndarray | None, problem, *,
           root: int = -1) -> list[tuple]:
    """Every rank's ``(shape, dtype, root)``, exchanged in one small Allgather.

    A rank with ``problem`` (its own arguments are wrong) raises it; the others raise an
    error naming that rank, so no rank goes on to a data exchange the others skip."""
    if problem is None and data.ndim > _MAX_DIMS:
        problem = ShapeError(f"{caller}: {data.ndim} dimensions; collectives take at most "
                             f"{_MAX_DIMS}")
    if problem is None and data.dtype not in _CODES:
        problem = DTypeError(f"{caller}: dtype {data.dtype} is not one of execmode's")
    mine = np.full(4 + _MAX_DIMS, -1, np.int64)
    if problem is None:
        mine[:4] = (0, _CODES[data.dtype], root, data.ndim)
        mine[4:4 + data.ndim] = data.shape
    else:
        mine[0] = 1
    every = np.empty((pg.size, mine.size), np.int64)
    _exchange.began = time.perf_counter_ns()
    _gather_headers(pg, caller, mine, every)
    _exchange.ended = time.perf_counter_ns()
    failed = [r for r in range(pg.size) if every[r, 0]]
    if failed:
        if problem is not None:
            raise problem
        raise DistributedError(f"{caller}: rank(s) {failed} gave wrong arguments (their "
                               "own error says which); no data was exchanged")
    return [(tuple(int(d) for d in h[4:4 + h[3]]), SUPPORTED[h[1]], int(h[2])) for h in every]


# Tags of the header messages: the collective's number in the group (every rank numbers
# its collectives alike), modulo what every MPI allows (32767 at least). A stop (a rank
# that hit a NaN under --break nan: stop_on_nan.py) has a tag of its own.
_TAG_SPAN = 32000
_STOP_TAG = 32767


def announce_stop(message: str) -> None:
    """Tell every other rank of the default group why this one stops: they raise with
    ``message`` in the collective they wait in (or their next). Nothing when no group."""
    from .process_group import _default as pg

    if pg is None:
        return
    data = np.frombuffer(message.encode(), np.uint8).copy()
    _exchange.stop_sends = [pg.comm.Isend(data, dest=r, tag=_STOP_TAG)
                            for r in range(pg.size) if r != pg.rank]
    _exchange.stop_data = data  # kept alive until the sends complete


def _stopped(pg) -> str | None:
    """Another rank's stop message, if one came."""
    mpi = _mpi.load()
    status = mpi.Status()
    if not pg.comm.Iprobe(source=mpi.ANY_SOURCE, tag=_STOP_TAG, status=status):
        return None
    data = np.empty(status.Get_count(mpi.BYTE), np.uint8)
    pg.comm.Recv(data, source=status.Get_source(), tag=_STOP_TAG)
    return data.tobytes().decode(errors="replace")


def _gather_headers(pg, caller: str, mine: np.ndarray, every: np.ndarray) -> None:
    """An allgather of the headers, point to point: each rank sends its own to every other
    and receives theirs, waiting at most the group's timeout. A rank that has not sent
    by then is named: it never arrived at this collective (stuck, or in another one)."""
    pg.sequence += 1
    tag = pg.sequence % _TAG_SPAN
    comm, me = pg.comm, pg.rank
    every[me] = mine
    others = [r for r in range(pg.size) if r != me]
    receives = [comm.Irecv(every[r], source=r, tag=tag) for r in others]
    sends = [comm.Isend(mine, dest=r, tag=tag) for r in others]
    mpi = _mpi.load()
    deadline = time.monotonic() + pg.timeout_s
    polls = 0
    while not mpi.Request.Testall(receives):
        polls += 1
        if polls % 64 == 0:
            stop = _stopped(pg)
            if stop is not None:
                raise DistributedError(f"{caller}: stopped on rank {me}, since {stop}")
        if polls > 2000:  # past the first ~ms: a rank is late; poll without a busy core
            if time.monotonic() > deadline:
                missing = [r for r, req in zip(others, receives) if not req.Test()]
                raise DistributedError(
                    f"{caller}: rank(s) {missing} did not arrive within {pg.timeout_s:g} s "
                    f"(collective #{pg.sequence} of rank {me}: they are stuck, or in "
                    "another collective); raise the timeout with init_process_group("
                    "timeout=...) or EXECMODE_COLLECTIVE_TIMEOUT")
            time.sleep(0.0005)
    mpi.Request.Waitall(sends)


def _same_everywhere(caller: str, headers: list[tuple], what: str = "tensor",
                     source: int | None = None) -> None:
    """Every rank's shape and dtype must be rank 0's (the ``source``'s for a broadcast);
    the error names that rank's and each one that differs (the first eight)."""
    reference = 0 if source is None else source
    differ = [r for r, h in enumerate(headers) if h[:2] != headers[reference][:2]]
    if not differ:
        return
    shown = [reference] + differ
    text = ", ".join(f"rank {r} has {type_text(*headers[r][:2])}" for r in shown[:9])
    if len(shown) > 9:
        text += f" (and {len(shown) - 9} more ranks differ)"
    rule = ("every rank must pass the same shape and dtype" if source is None else
            f"every rank must pass the shape and dtype of the source, rank {source}")
    raise ShapeError(f"{caller}: the ranks' {what}s differ: {text}; {rule}")


def _write(t: Tensor, data: np.ndarray, result: np.ndarray) -> None:
    """Put ``result`` into ``t`` (unless it was computed there) and tell autograd."""
    if result is not data:
        data[...] = result
    mark_modified(t)


def _finish(async_op: bool, caller: str | None = None, pg=None, inputs: tuple = (),
            out: np.ndarray | None = None, moved: int = 0, **attrs):
    """What the collective returns; first, when a listener records ops, its event."""
    if caller is not None and dispatch._listening:
        _record(caller, pg, inputs, out, moved, attrs)
    return Work() if async_op else None


def _record(caller: str, pg, inputs: tuple, out, moved: int, attrs: dict) -> None:
    """The collective as an op for the listeners (after it, as an op event). Its output is
    a view of the array it wrote (or of the first input): in place, no new buffer."""
    began = getattr(_exchange, "began", None)
    ended = getattr(_exchange, "ended", None)
    if began is None or ended is None:
        return
    attrs = {**attrs, "ranks": pg.size, "waited_us": round((ended - began) / 1000, 1),
             "moved_bytes": int(moved)}
    array = out if out is not None else np.empty(0, np.float32)
    holder = next((t for t in inputs if isinstance(t, Tensor)), None)
    dispatch.emit_after(caller, inputs, attrs, holder, array[...], began, ring=False)


def _contiguous(data: np.ndarray) -> np.ndarray:
    """Memory MPI can write: the array itself where it is contiguous, else a scratch."""
    return data if data.flags.c_contiguous else np.empty(data.shape, data.dtype)


# --- the collectives ------------------------------------------------------------------

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Combine ``tensor`` across ranks with ``op`` (SUM, AVG, PRODUCT, MIN, MAX); every
    rank's ``tensor`` holds the result."""
    caller = "all_reduce"
    pg = default_group(caller, group)
    data = None

    def check():
        nonlocal data
        data = _array(caller, tensor)
        _writable(caller, tensor, data)
        _reduce_op(caller, op, data.dtype)

    problem = _problem(check)
    _same_everywhere(caller, _agree(pg, caller, data, problem))
    op, mpi_op = _reduce_op(caller, op, data.dtype)
    work = data if data.flags.c_contiguous else np.ascontiguousarray(data)
    pg.comm.Allreduce(_mpi.load().IN_PLACE, _buffer(work), op=mpi_op)
    if op is ReduceOp.AVG:
        np.divide(work, pg.size, out=work)
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

    problem = _problem(check)
    headers = _agree(pg, caller, data, problem, root=-1 if problem else int(src))
    roots = sorted({h[2] for h in headers})
    if len(roots) > 1:
        raise ArgumentError(f"{caller}: the ranks named different sources: "
                            + ", ".join(f"rank {r} src={h[2]}" for r, h in enumerate(headers)))
    root = roots[0]
    _same_everywhere(caller, headers, source=root)
    work = data if data.flags.c_contiguous else np.ascontiguousarray(data)
    pg.comm.Bcast(_buffer(work), root=root)
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

    problem = _problem(check)
    _same_everywhere(caller, _agree(pg, caller, data, problem))
    gathered = np.empty((pg.size, *data.shape), data.dtype)
    pg.comm.Allgather(_buffer(np.ascontiguousarray(data)), _buffer(gathered))
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

    problem = _problem(check)
    _same_everywhere(caller, _agree(pg, caller, data, problem), "input_tensor")
    work = _contiguous(out)
    pg.comm.Allgather(_buffer(np.ascontiguousarray(data)), _buffer(work))
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
        _reduce_op(caller, op, out.dtype)

    problem = _problem(check)
    _same_everywhere(caller, _agree(pg, caller, out, problem), "output")
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
        _reduce_op(caller, op, out.dtype)

    problem = _problem(check)
    _same_everywhere(caller, _agree(pg, caller, out, problem), "output")
    return _reduce_scatter(caller, pg, output, out, np.ascontiguousarray(data), op, async_op)


def _reduce_scatter(caller, pg, output, out, send, op, async_op):
    op, mpi_op = _reduce_op(caller, op, out.dtype)
    work = _contiguous(out)
    pg.comm.Reduce_scatter_block(_buffer(send), _buffer(work), op=mpi_op)
    if op is ReduceOp.AVG:
        np.divide(work, pg.size, out=work)
    _write(output, out, work)
    return _finish(async_op, caller, pg, (output,), out, send.nbytes, op=op.value)


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank has reached this call."""
    pg = default_group("barrier", group)
    mark = np.zeros(1, np.int64)
    _exchange.began = time.perf_counter_ns()
    _gather_headers(pg, "barrier", mark, np.empty((pg.size, 1), np.int64))
    _exchange.ended = time.perf_counter_ns()
    return _finish(async_op, "barrier", pg)


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
