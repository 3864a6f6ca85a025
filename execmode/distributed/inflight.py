"""An all-reduce started now and finished later (MPI's ``Iallreduce``), so that
DistributedDataParallel's buckets move while backward still computes (reducer.py).

Starting it posts the collective's header exchange (exchange.py: the same header, the
same numbering as a blocking collective's) and the data's ``Iallreduce`` (SUM, in place)
without waiting for either. Finishing waits for the headers first, at most the group's
timeout, so a rank that never arrives is named as for any collective, checks that every
rank reduced the same shape and dtype, then waits for the data. The ranks must start
their all-reduces in the same order (MPI matches collectives by their order on the
communicator): the reducer starts its buckets in bucket order on every rank.

A recorder sees two ops per bucket: ``all_reduce`` when it starts (its time is the
launch; ``waited_us`` 0, ``moved_bytes`` the bucket's, ``started="nonblocking"``) and
``all_reduce_wait`` when it is finished (its time is the wait; ``waited_us`` the part
spent waiting for the other ranks' headers, the rest the data still moving); both carry
the collective's number in the group (``collective``), as a blocking one's event does.
"""

from __future__ import annotations

import time

import numpy as np

from .. import dispatch
from .._tensor import Tensor
from . import _mpi, exchange
from .process_group import ProcessGroup


def _holder(array: np.ndarray) -> Tensor:
    t = Tensor.__new__(Tensor)
    t._data = array
    t.requires_grad = False
    return t


class StartedAllReduce:
    """``work`` (contiguous, floating) being summed across the ranks in place; ``finish``
    waits and divides by the world size (AVG, as exchange.all_reduce_into computes it:
    the same bits as a blocking all-reduce)."""

    def __init__(self, pg: ProcessGroup, caller: str, work: np.ndarray, attrs: dict):
        began = time.perf_counter_ns()
        self.pg, self.caller, self.work, self.attrs = pg, caller, work, attrs
        # Both arrays live as long as this object: MPI reads and writes them until finish.
        self.posted = exchange.post_headers(pg, exchange.header_row(work))
        mpi = _mpi.load()
        self.request = pg.comm.Iallreduce(mpi.IN_PLACE, exchange.mpi_buffer(work),
                                          op=mpi.SUM)
        if dispatch._listening:
            # The event describes no values: MPI owns the buffer until it is finished.
            self._emit("all_reduce", began, np.empty(0, work.dtype), waited_ns=0,
                       moved=work.nbytes, started="nonblocking")

    def progress(self) -> bool:
        """Let MPI move the data (MPICH progresses a nonblocking collective only inside
        MPI calls); whether it is done."""
        return self.request.Test()

    def finish(self) -> np.ndarray:
        """Wait for every rank's header and the data; the averaged ``work``."""
        began = time.perf_counter_ns()
        alike = exchange.wait_headers(self.pg, self.caller, self.posted)
        headers_in = time.perf_counter_ns()
        if not alike:  # raises, naming the rank that reduced another shape
            exchange.same_everywhere(self.caller,
                                     exchange.read_headers(self.caller, self.posted.rows))
        self.request.Wait()
        np.divide(self.work, self.pg.size, out=self.work)
        if dispatch._listening:
            self._emit("all_reduce_wait", began, self.work[...],
                       waited_ns=headers_in - began, moved=0)
        return self.work

    def _emit(self, name: str, began: int, out: np.ndarray, waited_ns: int, moved: int,
              **more) -> None:
        # The measures first: a recorder shortens a long attrs text (a bucket of many
        # parameters' names) from its end, and the report reads them back.
        attrs = {"ranks": self.pg.size, "waited_us": round(waited_ns / 1000, 1),
                 "moved_bytes": int(moved), "collective": self.posted.number, **more,
                 **self.attrs}
        holder = _holder(self.work)
        dispatch.emit_after(name, (holder,), attrs, holder, out, began, ring=False)
