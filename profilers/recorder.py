"""The recorder: the instrumentation listener that fills a session file.

    rec = Recorder("run.emsession", summaries=True).start()
    ...                      # eager ops and graph-mode events are recorded
    rec.close()              # or: with Recorder(path) as rec: ...

Eager ops reach it two ways. As the only op listener, without value summaries, it gives
dispatch its op ring (:mod:`execmode.profilers.native`): each op is five integers written
in C, its site (op, operand types, scope, line, attrs) formatted once, and the writer
thread inserts the rows with the GIL released. Otherwise (beside a debugger, another
thread's op, an op the ring does not describe, no C compiler) ``on_op`` receives an
OpEvent and queues it as it is (formatting happens on the writer thread). Either way the
output's memory is tracked, and with summaries on the output's values are summarised
(:func:`execmode.stats.value_stats`, right after the op: a later in-place update would
change them). Other events (trace, pass, compile, graph breaks, ...) are encoded to JSON at
once, because their data may be reused by the code that emitted them. Before attaching,
it reads its own cost (measured once per machine: :mod:`execmode.profilers.calibration`,
cached by :mod:`execmode.profilers.calibration_cache`) and stores it in meta.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import threading
import time
import weakref
from datetime import datetime, timezone

from execmode.profilers import measure
from execmode.profilers.kernel_totals import KernelTotals
from execmode.profilers.machine import gpu_info, machine_info
from execmode.profilers.memory import MemoryTracker
from execmode.profilers.ranks import rank_of_process
from execmode.profilers.rows import event_row
from execmode.profilers.writer import (
    ComparisonRow,
    EncodedEvent,
    SessionWriter,
    SummarizedOp,
    ThreadOp,
)

from execmode import instrument, watched_composites
from execmode.instrument import Event
from execmode.stats import value_stats

_active: weakref.WeakSet = weakref.WeakSet()


class Recorder:
    """Records eager ops and graph-mode events into a session file.

    ``target`` is a path (a new session file is created there) or a SessionWriter.
    ``summaries`` stores min/max/mean/std and NaN/Inf counts of every op output (costly
    on large outputs); ``memory`` tracks live/peak bytes; ``calibrate`` measures the
    recorder's own per-op cost at start.
    """

    # Graph mode: each compiled step's runs summed where they run (kernel_clock.py), read
    # into the kernel_totals table; per-run kernel rows only with ``kernel_rows``.
    wants_kernel_times = True
    # An optimizer's fused step (optim/plain.py) runs while this records, as one op per
    # parameter: the session measures the step that runs without a recorder.
    records_fused_steps = True

    def __init__(self, target, *, summaries: bool = False, memory: bool = True,
                 calibrate: bool = True, kernel_rows: bool = False, meta: dict | None = None,
                 op_ring: bool = True):
        init_start = time.perf_counter_ns()
        self._use_ring = op_ring  # False: every op takes the Python path (the calibration's)
        self.options = {"summaries": bool(summaries), "memory": bool(memory),
                        "calibrate": bool(calibrate), "kernel_rows": bool(kernel_rows)}
        if isinstance(target, SessionWriter):
            self.writer = target
            for key, value in (meta or {}).items():
                self.writer.set_meta(key, value)
        else:
            self.writer = SessionWriter(target, self._initial_meta(meta))
        self.path = self.writer.path
        self.memory = MemoryTracker(self.writer.put) if memory else None
        self.calibration: dict | None = None
        self.seq_base = 0  # op numbers are seq minus this: the last seq before the start
        self.t0_ns = 0
        self._started = False
        self._stopped = False
        self._put = self.writer.put
        self._pending = self.writer.queue_length
        self._max_pending = self.writer.max_pending
        # Each thread's number lives in its own thread-local slot: the OS reuses the idents
        # of ended threads, a thread-local slot dies with its thread.
        self._thread_number = threading.local()
        self._thread_names: dict[str, str] = {}
        self._threads_lock = threading.Lock()
        # (binary, general): the op ring's entry points, which dispatch calls instead of
        # building an OpEvent while this recorder is the only op listener (native.py).
        self.native_op_sink = None
        self._ring = None
        self.op_path = "python"
        self.on_op = self._choose_on_op()
        self.kernel_totals: KernelTotals | None = None
        if kernel_rows:
            # A row per kernel run: plans then run step by step in Python (costly for small
            # kernels; the calibration measures it).
            self.on_kernel = self._on_kernel_run
        # What starting and stopping cost the script, outside the recorded wall time
        # (profiler_cost.py states it): creating the session, calibrating, attaching.
        self._cost = {"start": time.perf_counter_ns() - init_start}
        self._script_ns: list | None = None  # [start, end] of the script, marked by a runner
        self._writer_python_ns = 0
        self._writer_sql_ns = 0
        self._script_waits: dict | None = None
        self._declined_before: dict = {}  # watched_composites.counts() at the start
        self._runner_ns = 0  # a runner's measured work during the script (runner_ns)

    def _initial_meta(self, extra: dict | None) -> dict:
        return {
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            # The threads and the load the numbers will be measured under (machine.py).
            "machine": machine_info(threads=True),
            "options": self.options,
            "pyspy": {"status": "off"},
            # Which rank of a distributed run this is, when a launcher said (ranks.py).
            **({"rank": rank} if (rank := rank_of_process()) is not None else {}),
            **(extra or {}),
        }

    # --- lifecycle ------------------------------------------------------------------------
    def calibrate(self) -> dict:
        """Measure the recorder's per-op cost and store it (once; start() calls it when the
        calibrate option is on, callers that start other tools first may call it earlier)."""
        if self.calibration is None:
            # Measured once per machine and code, then read from the user cache.
            from execmode.profilers.calibration_cache import cached_overhead

            self.calibration = cached_overhead(memory=self.options["memory"],
                                               summaries=self.options["summaries"],
                                               kernel_rows=self.options["kernel_rows"])
            self.writer.set_meta("calibration", self.calibration)
        return self.calibration

    def start(self) -> Recorder:
        """Calibrate (if asked), write the start stamps and attach to the hooks."""
        if self._started:
            return self
        start = time.perf_counter_ns()
        if self.options["calibrate"]:
            self.calibrate()
        self._started = True
        # Ops are numbered from 1 in each session (docs/session-store.md, "How ops and
        # kernels are numbered"): dispatch's counter runs for the whole process
        # (calibration, earlier recordings), so rows hold seq minus its value here: the
        # session's first op is seq_base + 1.
        self.seq_base = instrument.upcoming_seq() - 1
        self.writer.number_ops_after(self.seq_base)
        if self.memory is not None:
            # Before the ring adopts the CPU's counters (a new tracker has no device yet:
            # no row), so both op paths write the same memory rows.
            self.memory.sample_now()
        self._attach_ring()
        # The objects the start made (modules, the session's meta, the ring) would make
        # the script's next young collection one of ours, and the full collections due
        # (a full one runs after ten of the middle generation's) would fall where the
        # process's history puts them: ~13 ms inside a 30 ms script in some runs, in
        # none in others. Collected now, fully, as the start's cost: the script starts
        # with every generation empty.
        gc.collect()
        _active.add(self)
        # The sums' baseline, before this recorder starts the kernel clock.
        self.kernel_totals = KernelTotals()
        self.writer.collect = self.kernel_totals.drain
        # Before the writer's own handler (atexit runs last-registered first): a script that
        # never closes its recorder still gets its end stamps.
        atexit.register(self.close)
        # The start's rows (the meta, the calibration) committed now, as the start's cost:
        # left queued, the writer's first batch (its work holds the interpreter in part)
        # would fall inside a short script's recording, stated nowhere.
        self.writer.flush()
        # Baselines (reading every thread's schedstat costs ~0.1 ms): taken before the
        # clock starts, as the start's own work.
        self._script_waits = measure.threads_waits({self.writer.thread_id})
        self._declined_before = watched_composites.counts()
        instrument.add_listener(self)
        # The session's clock starts here, after all of the start's own work (calibrating,
        # loading the op ring, attaching), which is stated as the start's cost.
        self.t0_ns = time.perf_counter_ns()
        self._writer_python_ns = self.writer.python_ns  # the start's batches: not in the window
        self._writer_sql_ns = self.writer.sql_ns
        self.writer.set_meta("t0_ns", self.t0_ns)
        self.writer.set_meta("wall_start", time.time())
        self._cost["start"] += time.perf_counter_ns() - start
        return self

    def script_started(self) -> None:
        """A runner's mark: the script's own code starts now. What the runner does from
        the start to here, and from :meth:`script_ended` to the stop, is inside the
        recorded wall time but is not the script's: the stop states it as the recorder's
        cost ("around")."""
        if self._started and not self._stopped:
            self._script_ns = [time.perf_counter_ns(), None]

    def script_ended(self) -> None:
        if self._script_ns is not None and not self._stopped:
            self._script_ns[1] = time.perf_counter_ns()

    def runner_ns(self, ns: int) -> None:
        """A runner's own work during the script (recording its output), measured by the
        runner: stated with its work around the script."""
        self._runner_ns += int(ns)

    def stop(self) -> None:
        """Detach from the hooks and write the end stamps (the file stays open)."""
        if not self._started or self._stopped:
            return
        self._stopped = True
        stop = time.perf_counter_ns()
        instrument.remove_listener(self)
        _active.discard(self)
        # The clock stopped with the listener: these last sums are exact, and queued after
        # any periodic drain (drain holds its lock while it hands rows on).
        self.writer.collect = None
        self.kernel_totals.drain(self._put_rows, final=True)
        self._uninstall_allocator()
        if self.memory is not None:
            self.memory.sample_now()
        end_ns = time.perf_counter_ns()
        self.writer.set_meta("end_ns", end_ns)
        # The writer's Python work while the script ran: the interpreter it held.
        self._cost["writer"] = self.writer.python_ns - self._writer_python_ns
        # The writer's SQLite work runs with the interpreter released, beside the script:
        # free on a CPU the script leaves idle, the script's loss where its threads wanted
        # that CPU. What they lost shows as their wait, ready to run, for a CPU; stated up
        # to the SQLite work's CPU time (other processes make threads wait too).
        sql = self.writer.sql_ns - self._writer_sql_ns
        waits = measure.threads_waits({self.writer.thread_id})
        if waits is not None and self._script_waits is not None:
            self._cost["displaced"] = min(sql, measure.waited_since(self._script_waits, waits))
        self._cost["writer_sql"] = sql
        script = self._script_ns
        if script is not None and script[1] is not None:
            self._cost["around"] = ((script[0] - self.t0_ns) + (end_ns - script[1])
                                    + self._runner_ns)
        self.writer.set_meta("wall_end", time.time())
        self.writer.flush()
        devices = sorted(self.writer.devices)
        self.writer.set_meta("recorded", {
            "ops": self.writer.ops_written,
            "dropped": self.writer.dropped,
            "malformed": self.writer.malformed,
            "devices": devices or ["cpu"],
            "op_path": self.op_path,
            # Composites that ran op by op because a recorder watched, by site.
            "declined": watched_composites.since(self._declined_before),
            # The ring's ops by entry and by frames passed: what their cost is stated from
            # (profiler_cost.py); the other ops took the Python path.
            **({"ring_ops": ring["recorded"], "ring_sites": ring["sites"],
                "ring_waited_ns": ring["waited_ns"]}
               if (ring := self._ring.stats() if self._ring is not None else None) else {}),
        })
        if any(d.startswith("cuda") for d in devices):
            self.writer.set_meta("gpus", gpu_info())
        self._cost["stop"] = time.perf_counter_ns() - stop
        self.writer.set_meta("recorder_cost_ns", self._cost)
        self.writer.flush()

    def close(self, status: str | None = None, code: int | None = None,
              traceback: str | None = None) -> None:
        """Stop recording and close the session file.

        ``status``/``code``/``traceback`` record how the script ended, for callers that run
        scripts themselves (the debugger agent): status "ok" (or "normal"), "exit",
        "exception", "interrupted", "quit".
        """
        if status is not None and not self.writer.closed:
            kind = "normal" if status == "ok" else status
            self.set_meta("exit", {"kind": kind, "code": code, "traceback": traceback})
        self.stop()
        self.writer.close()
        atexit.unregister(self.close)

    def _uninstall_allocator(self) -> None:
        counters = self.memory.native_cpu if self.memory is not None else None
        if counters is not None:
            counters.uninstall_allocator()

    def flush(self, timeout: float = 10.0) -> bool:
        """Commit everything recorded so far (the debugger calls this before a pause)."""
        return self.writer.flush(timeout)

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc) -> bool:
        self.close()
        return False

    def _attach_ring(self) -> None:
        """Give dispatch an op ring when this recording can use one (see the module
        docstring); ``op_path`` says which path eager ops take and why."""
        if self.options["summaries"]:
            self.op_path = "python (value summaries are computed per op)"
            return
        from execmode.profilers import native

        if not self._use_ring:
            self.op_path = "python (op_ring=False)"
            return
        if not native.enabled():
            self.op_path = "python (EXECMODE_NATIVE_RECORDER=0)"
            return
        try:
            ring = native.new_ring(tracker=self.memory, wake=self.writer.wake,
                                   seq_base=self.seq_base)
        except Exception as exc:  # optional: record without it, and say why
            ring, reason = None, f"{type(exc).__name__}: {exc}"
        else:
            reason = native.status()["reason"]
        if ring is None:
            first_line = (reason.strip().splitlines() or ["unavailable"])[0][:200]
            self.op_path = f"python (no op ring: {first_line})"
            return
        counters = self.memory.native_cpu if self.memory is not None else None
        if counters is not None:
            # NumPy allocates through a counting wrapper of its allocator until stop():
            # op outputs' buffers are then counted without a weak reference each.
            counters.install_allocator()
        how = self.writer.attach_ring(ring)
        self.op_path = f"ring ({'C writer' if how == 'sqlite' else 'Python rows'})"
        self.native_op_sink = (ring.binary, ring.general)
        self._ring = ring

    # --- listener protocol ----------------------------------------------------------------
    def _choose_on_op(self):
        # One specialised method per option set: the per-op path tests no options. Ops of
        # the main thread go as they are; another thread's are tagged with its number (one
        # get_ident() per op, ~40 ns).
        put, pending, limit = self._put, self._pending, self._max_pending
        wait = self.writer.wait_for_room
        track = self.memory.on_op if self.memory is not None else None
        get_ident, main = threading.get_ident, threading.main_thread().ident
        in_thread = self._in_thread

        if self.options["summaries"]:
            def on_op(ev, output):
                try:
                    item = SummarizedOp(ev, value_stats(output._data))
                except Exception:  # an array type summaries don't know: record the op alone
                    item = ev
                put(item if get_ident() == main else in_thread(item))
                if track is not None:
                    track(ev, output)
                if pending() > limit:
                    wait()
        elif track is not None:
            def on_op(ev, output):
                put(ev if get_ident() == main else in_thread(ev))
                track(ev, output)
                if pending() > limit:
                    wait()
        else:
            def on_op(ev, output):
                put(ev if get_ident() == main else in_thread(ev))
                if pending() > limit:
                    wait()
        return on_op

    def _in_thread(self, item) -> ThreadOp:
        """``item`` tagged with the calling thread's number; a thread seen for the first
        time gets the next number and its name in meta "threads"."""
        slot = self._thread_number
        try:
            number = slot.number
        except AttributeError:
            with self._threads_lock:
                number = slot.number = len(self._thread_names) + 1
                self._thread_names[str(number)] = threading.current_thread().name
                self.writer.set_meta("threads", dict(self._thread_names))
        return ThreadOp(item, number)

    def _put_rows(self, rows: list) -> None:
        for row in rows:
            self._put(row)

    def _on_kernel_run(self, ev: Event) -> None:
        self._put(ev)  # formatted on the writer thread
        if self._pending() > self._max_pending:
            self.writer.wait_for_room()

    def on_event(self, ev: Event) -> None:
        start = time.perf_counter_ns()
        kind = ev.kind
        if kind == "kernel" or kind == "memory":
            self._put(ev)  # frequent in graph replay: formatted on the writer thread
        else:
            # Encoded now (its data may change later): a graph's or a pass's IR as JSON
            # costs milliseconds, rare enough to time directly and state as it is.
            self._put(EncodedEvent(*event_row(ev)))
        if self._pending() > self._max_pending:
            self.writer.wait_for_room()
        # Its own encoding, and what the jit spent building the event for listeners.
        built = ev.data.get("emit_ns") if kind == "graph" else None
        self._cost["events"] = (self._cost.get("events", 0) + time.perf_counter_ns() - start
                                + (built if isinstance(built, int) else 0))

    # --- extra rows -----------------------------------------------------------------------
    def mark(self, name: str, text: str = "") -> None:
        """A free-form mark on the timeline."""
        now = time.perf_counter_ns()
        self.on_event(Event("mark", {"name": name, "text": text}, now, now))

    def set_meta(self, key: str, value) -> None:
        self.writer.set_meta(key, value)

    def record_comparison(self, *, function: str, graph_id: str, kernel: str, step_kind: str,
                          eager_ops, eager_ns: int, kernel_ns: int, eager_bytes: int,
                          planned_bytes: int, repeat: int = 1, rounds: int = 0,
                          verdict: str | None = None) -> None:
        """One row of em.compare: a compiled step next to the eager ops it replaced, with
        the medians of ``rounds`` rounds of ``repeat`` calls and the row's verdict
        ("1.84x", "undecided (overlap)"; None for an op the passes removed)."""
        ops = list(eager_ops)
        self._put(ComparisonRow(str(function), str(graph_id), str(kernel), str(step_kind),
                                json.dumps(ops), len(ops), int(eager_ns), int(kernel_ns),
                                int(eager_bytes), int(planned_bytes), int(repeat),
                                int(rounds), verdict))


def start_recording(path, *, script: str | None = None, argv=None, **options) -> Recorder:
    """Create a session at ``path`` and start recording into it (for script runners such
    as the debugger agent); end with ``recorder.close(status=..., code=...)``.

    ``options`` are :class:`Recorder`'s (summaries, memory, calibrate).
    """
    meta = {"cwd": os.getcwd()}
    if script is not None:
        meta["script"] = os.path.abspath(script)
        meta["argv"] = [str(script), *[str(a) for a in (argv or ())]]
    return Recorder(path, meta=meta, **options).start()


def _forget_in_child() -> None:
    # A forked child has no writer thread: its recorders must not queue forever.
    for rec in list(_active):
        instrument.remove_listener(rec)
        rec._uninstall_allocator()
        rec._stopped = True
    _active.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
