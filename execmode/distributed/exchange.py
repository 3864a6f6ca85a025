"""What every collective does on NumPy arrays, in eager and in graph mode alike: the small
header exchanged first (each rank's dtype and shape, the root, and whether its own
arguments were wrong), then the data moved through mpi4py's buffer methods, and the op
event a recorder sees. ``collectives.py`` calls it on tensors' arrays; the graph ops
(``graph_ops.py``) call it from a plan's step, so a jitted collective exchanges the same
header and computes the same bits as an eager one, and the ranks may mix the two.
"""

from __future__ import annotations

import enum
import threading
import time

import numpy as np

from .. import dispatch
from .._tensor import Tensor
from ..dtypes import SUPPORTED, type_text
from ..errors import ArgumentError, DTypeError, ShapeError
from . import _mpi
from .errors import DistributedError
from .process_group import ProcessGroup


class ReduceOp(enum.Enum):
    """How ``all_reduce`` and ``reduce_scatter`` combine the ranks' values."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"

    def __repr__(self) -> str:
        return f"ReduceOp.{self.name}"


_MAX_DIMS = 16
# When this thread's last header exchange began and ended (perf_counter_ns), and its
# number in the group: a collective's event runs from the first, the wait is the
# difference, and the number (alike on every rank) is how a report matches one
# collective across the ranks' sessions (profilers/straggler.py).
_exchange = threading.local()
_CODES = {dtype: code for code, dtype in enumerate(SUPPORTED)}


def reduce_op(caller: str, op, dtype: np.dtype):
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


def mpi_buffer(array: np.ndarray) -> np.ndarray:
    """The array as MPI moves it (bools as bytes: MPI's logical type has no MAX/MIN)."""
    return array.view(np.uint8) if array.dtype == np.bool_ else array


# --- the header every collective exchanges first --------------------------------------

def agree(pg: ProcessGroup, caller: str, data: np.ndarray | None, problem, *,
          root: int = -1) -> list[tuple]:
    """Every rank's ``(shape, dtype, root)``, exchanged in one small Allgather.

    A rank with ``problem`` (its own arguments are wrong) raises it; the others raise an
    error naming that rank, so no rank goes on to a data exchange the others skip."""
    if problem is None and data.ndim > _MAX_DIMS:
        problem = ShapeError(f"{caller}: {data.ndim} dimensions; collectives take at most "
                             f"{_MAX_DIMS}")
    if problem is None and data.dtype not in _CODES:
        problem = DTypeError(f"{caller}: dtype {data.dtype} is not one of execmode's")
    mine = header_row(data if problem is None else None, root)
    every = np.empty((pg.size, mine.size), np.int64)
    _exchange.began = time.perf_counter_ns()
    _gather_headers(pg, caller, mine, every)
    _exchange.ended = time.perf_counter_ns()
    _exchange.number = pg.sequence
    return read_headers(caller, every, problem)


def header_row(data: np.ndarray | None, root: int = -1) -> np.ndarray:
    """This rank's header: whether its arguments were wrong (``data`` None), the dtype's
    code, the root, the shape."""
    mine = np.full(4 + _MAX_DIMS, -1, np.int64)
    if data is None:
        mine[0] = 1
    else:
        mine[:4] = (0, _CODES[data.dtype], root, data.ndim)
        mine[4:4 + data.ndim] = data.shape
    return mine


def read_headers(caller: str, every: np.ndarray, problem=None) -> list[tuple]:
    """Every rank's ``(shape, dtype, root)`` from the exchanged rows, or the error of a
    rank whose arguments were wrong (``problem`` on that rank, naming it elsewhere)."""
    failed = [r for r in range(every.shape[0]) if every[r, 0]]
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
    wait_headers(pg, caller, post_headers(pg, mine, every))


def post_headers(pg, mine: np.ndarray, every: np.ndarray) -> tuple:
    """Start the header exchange (numbered as the group's next collective) without
    waiting: ``every[r]`` gets rank r's header once :func:`wait_headers` returns."""
    pg.sequence += 1
    tag = pg.sequence % _TAG_SPAN
    comm, me = pg.comm, pg.rank
    every[me] = mine
    others = [r for r in range(pg.size) if r != me]
    receives = [comm.Irecv(every[r], source=r, tag=tag) for r in others]
    sends = [comm.Isend(mine, dest=r, tag=tag) for r in others]
    return others, receives, sends, pg.sequence


def wait_headers(pg, caller: str, posted: tuple) -> None:
    """Wait for the headers :func:`post_headers` started, at most the group's timeout."""
    others, receives, sends, number = posted
    me = pg.rank
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
                    f"(collective #{number} of rank {me}: they are stuck, or in "
                    "another collective); raise the timeout with init_process_group("
                    "timeout=...) or EXECMODE_COLLECTIVE_TIMEOUT")
            time.sleep(0.0005)
    mpi.Request.Waitall(sends)


def same_everywhere(caller: str, headers: list[tuple], what: str = "tensor",
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


def barrier(pg: ProcessGroup) -> None:
    """Wait until every rank has sent its (empty) header: the barrier's whole exchange."""
    mark = np.zeros(1, np.int64)
    _exchange.began = time.perf_counter_ns()
    _gather_headers(pg, "barrier", mark, np.empty((pg.size, 1), np.int64))
    _exchange.ended = time.perf_counter_ns()
    _exchange.number = pg.sequence


# --- the op event ---------------------------------------------------------------------

def record(caller: str, pg, inputs: tuple, out, moved: int, attrs: dict) -> None:
    """The collective as an op for the listeners (after it, as an op event). Its output is
    a view of the array it wrote (or of the first input): in place, no new buffer."""
    began = getattr(_exchange, "began", None)
    ended = getattr(_exchange, "ended", None)
    if began is None or ended is None:
        return
    attrs = {**attrs, "ranks": pg.size, "waited_us": round((ended - began) / 1000, 1),
             "moved_bytes": int(moved), "collective": _exchange.number}
    array = out if out is not None else np.empty(0, np.float32)
    holder = next((t for t in inputs if isinstance(t, Tensor)), None)
    dispatch.emit_after(caller, inputs, attrs, holder, array[...], began, ring=False)


# --- the data moves -------------------------------------------------------------------

def all_reduce_into(pg: ProcessGroup, caller: str, work: np.ndarray, op) -> ReduceOp:
    """Reduce ``work`` (contiguous) across the ranks in place; returns the ReduceOp."""
    op, mpi_op = reduce_op(caller, op, work.dtype)
    pg.comm.Allreduce(_mpi.load().IN_PLACE, mpi_buffer(work), op=mpi_op)
    if op is ReduceOp.AVG:
        np.divide(work, pg.size, out=work)
    return op


def broadcast_root(caller: str, headers: list[tuple]) -> int:
    """The source every rank named (the ranks must agree), its shape checked."""
    roots = sorted({h[2] for h in headers})
    if len(roots) > 1:
        raise ArgumentError(f"{caller}: the ranks named different sources: "
                            + ", ".join(f"rank {r} src={h[2]}" for r, h in enumerate(headers)))
    same_everywhere(caller, headers, source=roots[0])
    return roots[0]


def reduce_scatter_into(pg: ProcessGroup, caller: str, send: np.ndarray, work: np.ndarray,
                        op) -> ReduceOp:
    """Rank r's ``work`` (contiguous) gets the reduction of every rank's ``send[r]``."""
    op, mpi_op = reduce_op(caller, op, work.dtype)
    pg.comm.Reduce_scatter_block(mpi_buffer(send), mpi_buffer(work), op=mpi_op)
    if op is ReduceOp.AVG:
        np.divide(work, pg.size, out=work)
    return op
