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
# A header's first field: 0 for a rank with good arguments, then these.
_WRONG_ARGUMENTS = 1
_IN_BARRIER = 2
# When this thread's last header exchange began and ended (perf_counter_ns), and its
# number in the group: a collective's event runs from the first, the wait is the
# difference, and the number (alike on every rank) is how a report matches one
# collective across the ranks' sessions (profilers/straggler.py).
_exchange = threading.local()
_CODES = {dtype: code for code, dtype in enumerate(SUPPORTED)}


def reduce_op(caller: str, op, dtype: np.dtype):
    """The MPI op for ``op`` on ``dtype`` (bools combine as any / all)."""
    name = _op_name(op)
    if name is None:  # (any other kind of op: looked up at every call)
        return _reduce_op(caller, op, dtype)
    found = _REDUCE_OPS.get((name, dtype))
    if found is None:
        found = _REDUCE_OPS[(name, dtype)] = _reduce_op(caller, op, dtype)
    return found


_REDUCE_OPS: dict = {}


def _op_name(op) -> str | None:
    """What :func:`reduce_op` remembers ``op`` by, with the dtype: its value (an Enum member
    hashes in Python; every collective asks, with a handful of (op, dtype) pairs); None for
    any other kind of op, looked up at every call."""
    return op._value_ if op.__class__ is ReduceOp else op if op.__class__ is str else None


def _reduce_op(caller: str, op, dtype: np.dtype):
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
    return op, getattr(mpi, _MPI_OPS[op])


_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD",
            ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX"}


def mpi_buffer(array: np.ndarray) -> np.ndarray:
    """The array as MPI moves it (bools as bytes: MPI's logical type has no MAX/MIN)."""
    return array.view(np.uint8) if array.dtype == np.bool_ else array


# --- the header every collective exchanges first --------------------------------------

def agree(pg: ProcessGroup, caller: str, data: np.ndarray | None, problem, *,
          root: int = -1) -> list[tuple]:
    """Every rank's ``(shape, dtype, root)``, exchanged in one small collective.

    A rank with ``problem`` (its own arguments are wrong) raises it; the others raise an
    error naming that rank, so no rank goes on to a data exchange the others skip."""
    if problem is None and data.ndim > _MAX_DIMS:
        problem = ShapeError(f"{caller}: {data.ndim} dimensions; collectives take at most "
                             f"{_MAX_DIMS}")
    if problem is None and data.dtype not in _CODES:
        problem = DTypeError(f"{caller}: dtype {data.dtype} is not one of execmode's")
    began = time.perf_counter_ns()
    if problem is None:
        mine, sent = pg.header_for((data.dtype, data.shape, root),
                                   lambda: _header_pair(header_values(data, root)))
    else:
        mine, sent = _header_pair(header_values(None, root))
    posted = post_headers(pg, mine, sent, pg.header_extremes(sent.size))
    alike = wait_headers(pg, caller, posted)
    _exchange.began, _exchange.ended = began, time.perf_counter_ns()
    _exchange.number = pg.sequence
    if alike:  # every rank's header is this one's: its arguments are good, or all wrong
        if problem is not None:
            raise problem
        return [(data.shape, data.dtype, root)] * pg.size
    return read_headers(caller, posted.rows, problem)


def header_values(data: np.ndarray | None, root: int = -1) -> list[int]:
    """This rank's header: whether its arguments were wrong (``data`` None), the dtype's
    code, the root, the shape."""
    if data is None:
        return [_WRONG_ARGUMENTS] + [-1] * (3 + _MAX_DIMS)
    return [0, _CODES[data.dtype], root, data.ndim, *data.shape] + \
        [-1] * (_MAX_DIMS - data.ndim)


def _header_pair(values: list[int]) -> tuple:
    """(the header as an array, the array of the header then its negation that the
    exchange sends; the first is a view of the second)."""
    sent = np.array(values + [-v for v in values], np.int64)
    return sent[:len(values)], sent


def header_row(data: np.ndarray | None, root: int = -1) -> np.ndarray:
    """:func:`header_values` as an array."""
    return np.array(header_values(data, root), np.int64)


def read_headers(caller: str, every: np.ndarray, problem=None) -> list[tuple]:
    """Every rank's ``(shape, dtype, root)`` from the exchanged rows, or the error of a
    rank whose arguments were wrong (``problem`` on that rank, naming it elsewhere), or
    of ranks in a barrier while others are in another collective (or the reverse)."""
    failed = [r for r in range(every.shape[0]) if every[r, 0] == _WRONG_ARGUMENTS]
    if failed:
        if problem is not None:
            raise problem
        raise DistributedError(f"{caller}: rank(s) {failed} gave wrong arguments (their "
                               "own error says which); no data was exchanged")
    in_barrier = [r for r in range(every.shape[0]) if every[r, 0] == _IN_BARRIER]
    if in_barrier and len(in_barrier) < every.shape[0]:
        elsewhere = [r for r in range(every.shape[0]) if r not in in_barrier]
        raise DistributedError(f"{caller}: rank(s) {in_barrier} are in a barrier while "
                               f"rank(s) {elsewhere} are in another collective; every rank "
                               "must make the same collectives in the same order")
    if in_barrier:
        return []
    return [(tuple(int(d) for d in h[4:4 + h[3]]), SUPPORTED[h[1]], int(h[2])) for h in every]


# Tags of the few point-to-point messages (every MPI allows tags up to 32767 at least):
# the headers, where the ranks' differ; a stop (a rank that hit a NaN under --break nan:
# stop_on_nan.py); and, at a collective's timeout, the question "who waits in this
# collective?" and its answers, which name the ranks that never arrived.
_HEADERS_TAG = 32764
_ASK_TAG = 32765
_ARRIVED_TAG = 32766
_STOP_TAG = 32767
# Polls of a header exchange before it counts as a long wait (~1 ms): it then polls
# without a busy core, answering questions.
_LONG_WAIT_POLLS = 2000
_ANSWER_GRACE_S = 1.0  # how long a rank at its timeout waits for the others' answers


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


class PostedHeaders:
    """A header exchange started (:func:`post_headers`): its request, what this rank sent
    (its header and the negation), what the all-reduce gives, the collective's number in
    the group, and, once :func:`wait_headers` returns, every rank's header where they
    differ (``rows``, a row each; this rank's own header before)."""

    __slots__ = ("request", "sent", "extremes", "number", "rows")

    def __init__(self, request, sent, extremes, number, rows):
        self.request, self.sent, self.extremes = request, sent, extremes
        self.number, self.rows = number, rows


def post_headers(pg, mine: np.ndarray, sent=None, extremes=None) -> PostedHeaders:
    """Start the header exchange (numbered as the group's next collective) without
    waiting.

    One small nonblocking all-reduce (MPI's ``Iallreduce``, MAX) of the header and its
    negation gives every rank the largest and the smallest value of each field: where
    both are this rank's own, every rank sent the same header, the usual case, which
    costs one small collective (~2 us on 2 ranks) where exchanging the headers point to
    point took ~10 us and delayed the data's collective by as much again. Where they
    differ, every rank sees it, and all of them send theirs to each other, point to point,
    to say which rank differs: the ranks make the same collectives in the same order
    either way."""
    pg.sequence += 1
    if sent is None:  # (``sent``: the header then its negation, where the caller made it)
        sent = np.concatenate((mine, -mine))
        extremes = np.empty_like(sent)
    request = pg.comm.Iallreduce(sent, extremes, op=_mpi.load().MAX)
    return PostedHeaders(request, sent, extremes, pg.sequence, mine)


def wait_headers(pg, caller: str, posted: PostedHeaders) -> bool:
    """Wait for the headers :func:`post_headers` started, at most the group's timeout;
    whether every rank's header was this one's; where not, ``posted.rows`` holds them."""
    polls = 0
    while not posted.request.Test():
        polls += 1
        if polls % 64 == 0:
            stop = _stopped(pg)
            if stop is not None:
                raise DistributedError(f"{caller}: stopped on rank {pg.rank}, since {stop}")
        if polls >= _LONG_WAIT_POLLS:
            _wait_long(pg, caller, posted.request, posted.number)
            break
    if posted.extremes.tobytes() == posted.sent.tobytes():
        return True
    posted.rows = _headers_by_messages(pg, posted.rows.copy())  # (copied: a buffer reused)
    return False


def _headers_by_messages(pg, mine: np.ndarray) -> np.ndarray:
    """Every rank's header, a row each, sent point to point: what the ranks do when their
    headers differ. Every rank sees that alike, but some may be in a blocking collective
    and others finishing a DDP bucket whose data all-reduce is still in flight: a second
    collective here could meet those in another order on different ranks, which MPI
    forbids; messages of their own tag cannot. Every rank has arrived (the all-reduce of
    the headers completed), so each receive is answered."""
    rows = np.empty((pg.size, mine.size), np.int64)
    rows[pg.rank] = mine
    others = [r for r in range(pg.size) if r != pg.rank]
    sends = [pg.comm.Isend(mine, dest=r, tag=_HEADERS_TAG) for r in others]
    for r in others:
        pg.comm.Recv(rows[r], source=r, tag=_HEADERS_TAG)
    _mpi.load().Request.Waitall(sends)
    return rows


def _wait_long(pg, caller: str, request, number: int) -> None:
    """A rank is late: poll without a busy core until the collective completes, answering
    other ranks that ask who is in it, or until the timeout, which names the ranks that
    did not answer this rank's own question."""
    deadline = time.monotonic() + pg.timeout_s
    while not request.Test():
        _answer_asks(pg, number)
        stop = _stopped(pg)
        if stop is not None:
            raise DistributedError(f"{caller}: stopped on rank {pg.rank}, since {stop}")
        if time.monotonic() > deadline:
            missing = _ask_who_arrived(pg, number, request)
            if missing is None:  # the last rank came while this one asked
                return
            if not missing:  # every rank says it is in it: MPI completes it soon
                deadline = time.monotonic() + pg.timeout_s
                continue
            raise DistributedError(
                f"{caller}: rank(s) {missing} did not arrive within {pg.timeout_s:g} s "
                f"(collective #{number} of rank {pg.rank}: they are stuck, or in "
                "another collective); raise the timeout with init_process_group("
                "timeout=...) or EXECMODE_COLLECTIVE_TIMEOUT")
        time.sleep(0.0005)


def _words(pg, tag: int):
    """(source, number) of each one-number message of ``tag`` that has come, read now."""
    mpi = _mpi.load()
    status, word = mpi.Status(), np.empty(1, np.int64)
    while pg.comm.Iprobe(source=mpi.ANY_SOURCE, tag=tag, status=status):
        pg.comm.Recv(word, source=status.Get_source(), tag=tag)
        yield status.Get_source(), int(word[0])


def _answer_asks(pg, number: int) -> None:
    """Tell each rank that asked (at its timeout) which collective this one waits in."""
    for asker, _ in _words(pg, _ASK_TAG):
        word = np.array([number], np.int64)
        _exchange.answers = [*getattr(_exchange, "answers", [])[-64:],
                             (word, pg.comm.Isend(word, dest=asker, tag=_ARRIVED_TAG))]


def _ask_who_arrived(pg, number: int, request) -> list[int] | None:
    """The ranks that do not answer, within a short grace, that they wait in collective
    ``number``; None if the collective completes meanwhile (every rank came after all).
    Only a rank at its timeout asks, so a question is left unread only where the last rank
    came during the grace."""
    others = [r for r in range(pg.size) if r != pg.rank]
    word = np.array([number], np.int64)
    _exchange.asks = (word, [pg.comm.Isend(word, dest=r, tag=_ASK_TAG) for r in others])
    heard: set = set()
    until = time.monotonic() + _ANSWER_GRACE_S
    while len(heard) < len(others) and time.monotonic() < until:
        if request.Test():
            return None
        heard.update(r for r, said in _words(pg, _ARRIVED_TAG) if said == number)
        _answer_asks(pg, number)  # the others may reach their timeouts now too
        time.sleep(0.0005)
    return [r for r in others if r not in heard]


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
    """Wait until every rank has sent its header, a barrier's mark: the barrier's whole
    exchange. A rank in another collective meanwhile fails on every rank, naming it."""
    mark = np.full(4 + _MAX_DIMS, -1, np.int64)
    mark[0] = _IN_BARRIER
    _exchange.began = time.perf_counter_ns()
    posted = post_headers(pg, mark)
    alike = wait_headers(pg, "barrier", posted)
    _exchange.ended = time.perf_counter_ns()
    _exchange.number = pg.sequence
    if not alike:
        read_headers("barrier", posted.rows)


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

def repeated_all_reduce(pg: ProcessGroup, caller: str, data: np.ndarray, op) -> bool:
    """All-reduce ``data`` (a contiguous, writable array) in place where a call before
    checked the same dtype, shape and op (its header and MPI op are known); False, with
    nothing exchanged, where the full path must run.

    The same header exchange and data reduction as :func:`agree` and
    :func:`all_reduce_into`, in fewer Python steps: after a large reduction the CPU's
    caches hold its data, and each step of Python around the two collectives runs from
    memory (a 1 MiB all_reduce spent ~50 us more than mpi4py's ``Allreduce`` on the
    full path)."""
    # (the last call's, by the dtype's identity: no hash of the dtype at each call)
    last = pg.last_all_reduce
    if last is None or data.dtype is not last[0] or op is not last[2] \
            or data.shape != last[1]:
        dtype = data.dtype
        pair = pg.known_header((dtype, data.shape, -1))
        found = _REDUCE_OPS.get((_op_name(op), dtype))  # (reduce_op's, for this call)
        if pair is None or found is None or dtype.kind == "b":  # (bools: mpi_buffer's view)
            return False
        last = pg.last_all_reduce = (dtype, data.shape, op, *pair, *found)
    _, _, _, mine, sent, op, mpi_op = last
    posted = post_headers(pg, mine, sent, pg.header_extremes(sent.size))
    if not wait_headers(pg, caller, posted):  # another rank sent another header
        same_everywhere(caller, read_headers(caller, posted.rows))
    pg.comm.Allreduce(_mpi.load().IN_PLACE, data, op=mpi_op)
    if op is ReduceOp.AVG:
        np.divide(data, pg.size, out=data)
    return True


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
