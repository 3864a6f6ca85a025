"""The session writer: a background thread that batches rows into the session file.

The recording thread only appends to a deque (atomic under the GIL, ~40 ns); this thread
wakes at least every 50 ms, drains the deque, formats rows and commits them in one
transaction per batch. So a reader tailing the file is never more than ~100 ms behind,
and a process killed with SIGKILL leaves everything up to the last commit.

Memory stays bounded however many ops run: when more than ``max_pending`` items wait, the
recorder calls :meth:`SessionWriter.wait_for_room` and the script pauses until the writer
has caught up (backpressure rather than an unbounded queue or silently dropped events).

A write that fails (the disk is full, a quota, ``EXECMODE_SESSION_MAX_MB``) never stops the
script: the writer releases its reserve (reserve.py), marks the session partial (meta
``partial``: why, when, how many items were not recorded), and from then on writes only
meta rows (the end stamps, the exit status) and counts the rest as dropped. Only if even
those fail does it stop writing altogether.
"""

from __future__ import annotations

import atexit
import os
import platform
import sqlite3
import sys
import threading
import time
from collections import deque
from typing import NamedTuple

from execmode.profilers import op_columns, store
from execmode.profilers.kernel_totals import GraphRunsRow, KernelTotalRow
from execmode.profilers.reserve import Reserve
from execmode.profilers.rows import RowFormatter, Summary, event_row, memory_row_from_event

from execmode.instrument import Event, OpEvent

FLUSH_INTERVAL_S = 0.05
MAX_PENDING = 20_000
_BATCH = 20_000


# --- the items a writer accepts besides OpEvent and Event ---------------------------------
class SummarizedOp(NamedTuple):
    event: OpEvent
    summary: Summary


class ThreadOp(NamedTuple):
    """An op (OpEvent or SummarizedOp) that ran in a thread other than the script's main
    one; ``thread`` is its number in the session (meta "threads")."""

    op: object
    thread: int


class EncodedEvent(NamedTuple):
    """An event already turned into its row on the recording thread (its data is JSON)."""

    kind: str
    start_ns: int
    end_ns: int
    graph_id: str | None
    data: str


class MemorySample(NamedTuple):
    ts_ns: int
    device: str
    live_bytes: int
    peak_bytes: int
    source: str


class OutputLine(NamedTuple):
    ts_ns: int
    stream: str
    text: str


class SampleRow(NamedTuple):
    thread: str
    stack: str
    count: int
    category: str


class ComparisonRow(NamedTuple):
    function: str
    graph_id: str
    kernel: str
    step_kind: str
    eager_ops: str  # JSON list
    eager_count: int
    eager_ns: int
    kernel_ns: int
    eager_bytes: int
    planned_bytes: int
    repeat: int      # calls per round
    rounds: int
    verdict: str | None


class MetaValue(NamedTuple):
    key: str
    value: str  # JSON


class _Flush(NamedTuple):
    done: threading.Event


class _Ring:
    """An op ring (native.py) whose records this writer writes, and how."""

    __slots__ = ("ring", "direct", "texts")

    def __init__(self, ring, direct: bool):
        self.ring = ring
        self.direct = direct  # through the ring's own connection (C); else as Python rows
        self.texts: dict = {}  # site -> its text columns, for Python rows


def _op_insert(summary: bool, thread: bool) -> str:
    """The INSERT of an op row of one kind, its columns from op_columns.py."""
    columns = op_columns.written(summary, thread)
    return (f"INSERT INTO op_events ({', '.join(c.name for c in columns)}) "
            f"VALUES ({','.join(c.placeholder for c in columns)})")


_INSERT = {
    "ops": _op_insert(summary=False, thread=False),
    "summarized": _op_insert(summary=True, thread=False),
    "threaded": _op_insert(summary=False, thread=True),
    "threaded_summarized": _op_insert(summary=True, thread=True),
    "kernels": "INSERT INTO kernels (graph_id, kernel, step_kind, member_nodes, member_ops, "
               "start_ns, dur_ns, bytes, output, device, scope, location) "
               "VALUES (?,?,?,?,?,?,?,?,NULLIF(?,''),NULLIF(?,''),NULLIF(?,''),NULLIF(?,0))",
    "events": "INSERT INTO events (kind, start_ns, end_ns, graph_id, data) "
              "VALUES (?,?,?,NULLIF(?,''),?)",
    "memory": "INSERT INTO memory (ts_ns, device, live_bytes, peak_bytes, source) "
              "VALUES (?,?,?,?,?)",
    "output": "INSERT INTO output (ts_ns, stream, text) VALUES (?,?,?)",
    "samples": "INSERT INTO samples (thread, stack, count, category) VALUES (?,?,?,?)",
    "comparisons": "INSERT INTO comparisons (function, graph_id, kernel, step_kind, eager_ops, "
                   "eager_count, eager_ns, kernel_ns, eager_bytes, planned_bytes, repeat, "
                   "rounds, verdict) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
    "meta": "INSERT OR REPLACE INTO meta (key, value) VALUES (?,?)",
    # Sums that grow while recording: each row replaces the step's previous one.
    "kernel_totals": "INSERT OR REPLACE INTO kernel_totals (clock, step_index, graph_id, "
                     "kernel, step_kind, member_nodes, member_ops, calls, loop_calls, "
                     "total_ns, min_ns, max_ns, bytes, output, device, scope, location, "
                     "backend) VALUES "
                     "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULLIF(?,''),NULLIF(?,''),NULLIF(?,0),?)",
    "graph_runs": "INSERT OR REPLACE INTO graph_runs (clock, graph_id, runs, loop_runs, "
                  "total_ns, min_ns, max_ns) VALUES (?,?,?,?,?,?,?)",
}


class SessionWriter:
    """Creates a session file and writes rows to it from a background thread.

    ``put(item)`` queues an OpEvent, an Event or one of this module's row tuples; it is
    safe from any thread. ``flush()`` returns once everything queued before it is
    committed. ``close()`` (also run at exit) flushes and closes the file.
    """

    def __init__(self, path, meta: dict | None = None, *,
                 interval_s: float = FLUSH_INTERVAL_S, max_pending: int = MAX_PENDING):
        # Who writes: a reader tells "still recording" from "killed" by this pid's liveness.
        writer = {"pid": os.getpid(), "host": platform.node()}
        self.path = store.create(path, {"writer": writer, **(meta or {})})
        self._reserve = Reserve(self.path)
        self._reserve.take()
        self.max_pending = max_pending
        self.error: str | None = None
        self.partial: dict | None = None   # set when a write failed: only meta from then on
        self.dropped = 0
        self.malformed = 0
        self.ops_written = 0
        # This thread's CPU time in Python (formatting rows, reading the kernel sums), its
        # SQLite work left out: the interpreter is held while it runs, so a script running
        # Python waits as long (the recorder states it; SQLite runs with it released).
        self.python_ns = 0
        # Its SQLite work's CPU time (the interpreter released): free while a CPU is idle,
        # taken from the script where its threads fill every CPU (recorder.py states it then).
        self.sql_ns = 0
        self._sql_cpu = 0
        self._interval = interval_s
        self._queue: deque = deque()
        self.put = self._queue.append
        self.queue_length = self._queue.__len__  # a builtin: cheaper per op than a method
        self._wake = threading.Event()
        self._room = threading.Event()
        self._stopping = False
        self._closed = False
        self._formatter = RowFormatter()
        self._conn = store.connect_writer(self.path)
        self._pragmas = "; ".join(store.writer_pragmas(self._conn))
        self._rings: tuple = ()
        # Called on this thread before each batch with a sink for rows that nobody queued
        # (the kernel clock's sums, which grow without events).
        self.collect = None
        self.wake = self._wake.set
        self._thread = threading.Thread(target=self._run, name="execmode-session-writer",
                                        daemon=True)
        self._thread.start()
        atexit.register(self.close)

    # --- the recording side ---------------------------------------------------------------
    def pending(self) -> int:
        return len(self._queue)

    def backlog(self) -> int:
        """Queued items and op records of attached rings not yet written."""
        n = len(self._queue)
        for r in self._rings:
            n += r.ring.pending()
        return n

    def number_ops_after(self, seq_base: int) -> None:
        """Write each op's number in the session (from 1) as its seq: the event's seq minus
        ``seq_base``, the op counter's value when recording began (a ring given the same
        base numbers its records alike). Called before the first op is queued."""
        self._formatter.seq_base = seq_base

    def attach_ring(self, ring) -> str:
        """Write the op records of ``ring`` (an OpRing, native.py) too, until close.

        Returns how: "sqlite" (its own connection to the session, in C, with the GIL
        released) or "rows" (as Python rows, where SQLite's library cannot be shared)."""
        from execmode.profilers import native

        library = native.sqlite_library()
        direct = False
        if library is not None:
            try:
                ring.open_writer(library, str(self.path), self._pragmas)
                direct = True
            except OSError:
                pass
        self._rings = (*self._rings, _Ring(ring, direct))
        return "sqlite" if direct else "rows"

    @property
    def devices(self) -> set[str]:
        """Devices seen in the rows written so far."""
        return set(self._formatter.devices)

    def set_meta(self, key: str, value) -> None:
        """Queue a meta entry (JSON-encoded now, so later changes to ``value`` don't leak)."""
        self.put(MetaValue(key, store.to_json(value)))

    def wait_for_room(self) -> None:
        """Block until the queue is below half of ``max_pending`` (backpressure)."""
        low = self.max_pending // 2
        while self.backlog() > low:
            if not self._thread.is_alive():
                self._drop_all()
                return
            self._room.clear()
            self._wake.set()
            self._room.wait(0.05)

    def flush(self, timeout: float = 10.0) -> bool:
        """Commit everything queued so far; False if the writer is gone or timed out."""
        if not self._thread.is_alive():
            return False
        marker = _Flush(threading.Event())
        self.put(marker)
        self._wake.set()
        return marker.done.wait(timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Flush, stop the thread and close the file. Idempotent; registered with atexit."""
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout)
        atexit.unregister(self.close)

    @property
    def thread_id(self) -> int | None:
        """The writer thread's native id (its /proc/self/task entry)."""
        return self._thread.native_id

    @property
    def closed(self) -> bool:
        return self._closed

    # --- the writer thread ----------------------------------------------------------------
    def _run(self) -> None:
        conn = self._conn
        try:
            while True:
                self._wake.wait(self._interval)
                self._wake.clear()
                batch_cpu = time.thread_time_ns()
                try:
                    collect = self.collect
                    if collect is not None:
                        collect(self._queue.extend)
                    self._write_pending(conn)
                except Exception as exc:
                    if not self._become_partial(conn, exc):
                        raise
                finally:
                    self.python_ns += time.thread_time_ns() - batch_cpu - self._sql_cpu
                    self._sql_cpu = 0
                self._room.set()
                if self._stopping and not self.backlog():
                    break
        except Exception as exc:  # even meta cannot be written: stop recording, say so once
            self.error = f"{type(exc).__name__}: {exc}"
            print(f"execmode: the session writer stopped ({self.error}); "
                  f"{self.path} holds what was written before", file=sys.stderr)
            self._drop_all()
        finally:
            self._room.set()
            self._reserve.release()
            try:
                if self.partial is not None:  # the final count of what was not recorded
                    self._commit_meta(conn, [MetaValue("partial", store.to_json(
                        {**self.partial, "dropped": self.dropped}))])
            except Exception:
                pass
            for r in self._rings:  # before the journal mode can change
                try:
                    r.ring.close_writer()
                except Exception:
                    pass
            try:
                # Back to a rollback journal: a finished session is one self-contained file.
                # Fails harmlessly (stays WAL) while a reader still has the file open.
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.execute("PRAGMA journal_mode = DELETE")
            except Exception:
                pass
            conn.close()

    def _become_partial(self, conn, exc: Exception) -> bool:
        """The first failed write: keep the script running and the session closable. False
        when already partial (then even meta rows fail: the caller stops writing)."""
        if self.partial is not None:
            return False
        self._reserve.release()  # room for the meta rows below and at close
        self.partial = {"reason": f"{type(exc).__name__}: {exc}",
                        "since_ns": time.perf_counter_ns(), "dropped": 0}
        print(f"execmode: cannot write {self.path} ({self.partial['reason']}); the script "
              "goes on, recording stops here and the session is marked partial",
              file=sys.stderr)
        self._commit_meta(conn, [MetaValue("partial", store.to_json(self.partial))])
        return True

    def _commit_meta(self, conn, metas: list) -> None:
        conn.execute("BEGIN")
        try:
            conn.executemany(_INSERT["meta"], metas)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _drop_all(self) -> None:
        q = self._queue
        while q:
            item = q.popleft()
            if isinstance(item, _Flush):
                item.done.set()
            else:
                self.dropped += 1
        for r in self._rings:
            r.ring.take_sites()
            self.dropped += r.ring.drop(r.ring.head())

    def _write_pending(self, conn) -> None:
        q = self._queue
        popleft = q.popleft
        while True:
            items = [popleft() for _ in range(min(len(q), _BATCH))]
            # Each ring's head is read after the queue was drained: a flush marker among
            # the items then covers every op recorded before it.
            heads = [(r, r.ring.head()) for r in self._rings if r.ring.pending()]
            if not items and not heads:
                return
            self._write(conn, items, heads)

    def _write(self, conn, items: list, heads: list = ()) -> None:
        if self.partial is not None:
            return self._write_meta_only(conn, items, heads)
        rows: dict[str, list] = {name: [] for name in _INSERT}
        flushes = []
        fmt = self._formatter
        ops = rows["ops"]
        for item in items:
            cls = item.__class__
            try:
                if cls is OpEvent:
                    ops.append(fmt.op_row(item))
                elif cls is SummarizedOp:
                    rows["summarized"].append(fmt.op_row(item.event, item.summary))
                elif cls is ThreadOp:
                    op = item.op
                    if op.__class__ is SummarizedOp:
                        rows["threaded_summarized"].append(
                            fmt.op_row(op.event, op.summary) + (item.thread,))
                    else:
                        rows["threaded"].append(fmt.op_row(op) + (item.thread,))
                elif cls is MemorySample:
                    rows["memory"].append(item)
                elif cls is EncodedEvent:
                    rows["events"].append(item)
                elif cls is _Flush:
                    flushes.append(item.done)
                elif isinstance(item, Event):
                    self._route_event(fmt, rows, item)
                elif cls is KernelTotalRow:
                    rows["kernel_totals"].append(fmt.kernel_total_row(item))
                else:
                    rows[_TABLE_OF[cls]].append(item)
            except Exception:  # one odd event must not stop the recording
                self.malformed += 1
        direct = []
        for r, upto in heads:
            # The sites of the records up to ``upto`` were registered before those records
            # were written to the ring, so they are among the sites taken now.
            self._take_sites(fmt, r)
            if r.direct:
                direct.append((r, upto))
            else:
                self._ring_rows(r, upto, ops)
        python_ops = (len(ops) + len(rows["summarized"]) + len(rows["threaded"])
                      + len(rows["threaded_summarized"]))
        sql_cpu = time.thread_time_ns()
        try:
            if direct:
                # One transaction on the ring's connection holds this batch's rows and the
                # ring's records: the GIL is handed over once, not around every statement.
                self._commit_with_rings(fmt, rows, direct, python_ops)
            elif fmt.new_locations or any(rows.values()):
                conn.execute("BEGIN")
                if fmt.new_locations:
                    for sql, params in _statements(_LOCATIONS, fmt.new_locations):
                        conn.execute(sql, params)
                    fmt.new_locations = []
                for table, batch in rows.items():
                    for sql, params in _statements(_INSERT[table], batch):
                        conn.execute(sql, params)
                conn.execute("COMMIT")
                self.ops_written += python_ops
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            # The batch is lost, but its meta rows are small: they go back to the front of
            # the queue for the meta-only writer, the rest is counted.
            metas = rows["meta"]
            self._queue.extendleft(reversed(metas))
            self.dropped += sum(len(batch) for table, batch in rows.items() if table != "meta")
            raise
        finally:
            sql_cpu = time.thread_time_ns() - sql_cpu
            self._sql_cpu += sql_cpu
            self.sql_ns += sql_cpu  # per batch: a stop reads it while a long drain runs
            for done in flushes:
                done.set()

    def _commit_with_rings(self, fmt: RowFormatter, rows: dict, direct: list,
                           python_ops: int) -> None:
        """The batch's rows (locations first: the records name them) in the first ring's
        transaction with its records, then each other ring's records. Raises when a
        transaction failed: its records are counted as dropped here, the rows not yet
        committed by the caller."""
        statements = _statements(_LOCATIONS, fmt.new_locations)
        for table, batch in rows.items():
            statements += _statements(_INSERT[table], batch)
        for r, upto in direct:
            while True:
                # At most _BATCH records per transaction, as for the Python path's rows: a
                # script faster than the writer fills the ring (65,536 records, ~4 MiB of
                # rows), and one transaction that size would not fit a session size cap
                # that smaller ones fill up to (tests/faults/test_disk_full.py).
                pending = r.ring.pending()
                end = min(upto, r.ring.head() - pending + _BATCH)
                consumed, written, malformed, error = r.ring.write(end, statements)
                self.malformed += malformed
                if error is not None:
                    self.dropped += consumed - malformed
                    raise sqlite3.OperationalError(error)
                self.ops_written += written
                if statements:  # committed: nothing of the batch's rows is left to lose
                    statements = []
                    fmt.new_locations = []
                    self.ops_written += python_ops
                    for batch in rows.values():
                        batch.clear()
                if end >= upto or not consumed:
                    break

    def _take_sites(self, fmt: RowFormatter, r: _Ring) -> None:
        """Format the ring's new sites: the text columns of their op rows, spelled by
        op_row itself (so a row reads the same whichever path recorded its op)."""
        for index, op, inputs, output, scope, location, attrs in r.ring.take_sites():
            try:
                row = fmt.op_row(OpEvent(0, op, attrs, inputs, output, 0, 0, 0, scope,
                                         location))
                texts = (row[1], row[2], row[3], row[7], row[8], row[9], row[10])
            except Exception:  # its records are counted as malformed
                texts = None
            r.ring.set_site(index, texts)
            if not r.direct:
                r.texts[index] = texts

    def _ring_rows(self, r: _Ring, upto: int, ops: list) -> None:
        texts = r.texts
        for seq, site, t0, t1, nbytes in r.ring.take(upto):
            site_texts = texts[site]
            if site_texts is None:
                self.malformed += 1
                continue
            op, scope, location, inputs, output, device, attrs = site_texts
            ops.append((seq, op, scope, location, t0, t1 - t0, nbytes, inputs, output, device,
                        attrs))

    def _write_meta_only(self, conn, items: list, heads: list = ()) -> None:
        for r, upto in heads:
            r.ring.take_sites()
            self.dropped += r.ring.drop(upto)
        metas = []
        for item in items:
            if item.__class__ is MetaValue:
                metas.append(item)
            elif item.__class__ is _Flush:
                item.done.set()
            else:
                self.dropped += 1
        if metas:
            self._commit_meta(conn, metas)

    @staticmethod
    def _route_event(fmt: RowFormatter, rows: dict, ev: Event) -> None:
        if ev.kind == "kernel":
            rows["kernels"].append(fmt.kernel_row(ev))
        elif ev.kind == "memory":
            rows["memory"].append(memory_row_from_event(ev))
        else:
            rows["events"].append(event_row(ev))


_LOCATIONS = "INSERT INTO locations VALUES (?,?,?,?)"
# Parameters per statement: SQLite before 3.32 allows 999.
_MAX_PARAMS = 999
_multi_row_sql: dict = {}


def _statements(insert: str, rows: list) -> list:
    """(sql, params) pairs that run ``insert`` (one row's INSERT ... VALUES (...)) for every
    row, many rows per statement. Python's sqlite3 hands the GIL back and forth around
    every step: a step per row (executemany) kept the writer waiting for the GIL once per
    memory row or event, and the script's thread and the writer ran by turns instead of
    side by side."""
    if not rows:
        return []
    width = len(rows[0])
    per = max(1, min(64, _MAX_PARAMS // width))
    out = []
    for i in range(0, len(rows), per):
        chunk = rows[i:i + per]
        key = (insert, len(chunk))
        sql = _multi_row_sql.get(key)
        if sql is None:
            head, _, row = insert.partition(" VALUES ")
            sql = _multi_row_sql[key] = f"{head} VALUES {','.join([row] * len(chunk))}"
        out.append((sql, [value for row in chunk for value in row]))
    return out


_TABLE_OF = {
    GraphRunsRow: "graph_runs",
    OutputLine: "output",
    SampleRow: "samples",
    ComparisonRow: "comparisons",
    MetaValue: "meta",
}
