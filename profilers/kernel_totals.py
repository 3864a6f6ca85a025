"""Graph mode's kernel times as a recording keeps them: sums per compiled step.

While recording, every plan sums its own steps' runs (:mod:`execmode.kernel_clock`: C
inside a whole-graph program or the fast entry, Python in the plan's loops and the
generated replay), so a jitted call costs a clock read per step instead of an event per
step. :class:`KernelTotals` turns those sums into rows of the session's ``kernel_totals``
and ``graph_runs`` tables: what was summed since the recording started (each clock's
values at the start are its baseline), rewritten in place as they grow. The writer thread
drains them at each batch, the recorder once more at the end, after the clock stopped, so
the last rows are exact: rows are handed on while the lock is held, so a periodic drain can
never be queued after the final one.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

from execmode import kernel_clock


class KernelTotalRow(NamedTuple):
    """One step of one compiled plan: its runs while recording (table kernel_totals)."""

    clock: int           # the plan's clock number: two plans may share a graph id
    step_index: int
    graph_id: str
    kernel: str
    step_kind: str
    member_nodes: tuple
    member_ops: tuple
    calls: int
    loop_calls: int      # of those, timed in Python (the profiler's cost differs per path)
    total_ns: int
    min_ns: int
    max_ns: int
    bytes: int           # new buffers over all runs (views, planned, reused: none)
    shape: tuple
    dtype: str
    device: str
    scope: str
    location: object     # SourceLocation or None (the writer interns it)
    backend: str


class GraphRunsRow(NamedTuple):
    """Whole runs of one compiled plan while recording (table graph_runs): what its
    steps' rows do not cover is the rest of the run (write-backs, copies, the loop)."""

    clock: int
    graph_id: str
    runs: int
    loop_runs: int
    total_ns: int
    min_ns: int
    max_ns: int


class KernelTotals:
    """The kernel_totals and graph_runs rows of one recording (see the module docstring)."""

    def __init__(self):
        self._lock = threading.Lock()
        # (clock number, step index or -1) -> (calls, loop calls, ns, bytes) at the start
        self._baseline: dict = {}
        self._runs_seen: dict = {}  # clock number -> its runs at the last drain
        self._open = True
        for clock in kernel_clock.clocks():
            runs, ns = clock.run_totals()[:2]
            self._baseline[(clock.number, -1)] = (runs, clock.loop_runs(), ns, 0)
            for i in range(clock.n_steps):
                calls, ns, _, _, nbytes = clock.step_totals(i)
                self._baseline[(clock.number, i)] = (calls, clock.loop_calls(i), ns, nbytes)

    def drain(self, sink, *, final: bool = False) -> None:
        """Hand ``sink`` the rows of every plan that ran since the last drain (one list).
        ``final``: the last drain; later ones hand on nothing."""
        with self._lock:
            if not self._open:
                return
            if final:
                self._open = False
            rows = []
            for clock in kernel_clock.clocks():
                rows.extend(self._clock_rows(clock))
            if rows:
                sink(rows)

    def _clock_rows(self, clock) -> list:
        runs, ns, low, high = clock.run_totals()
        if self._runs_seen.get(clock.number) == runs:
            return []  # no run since the last drain: its rows are as written
        self._runs_seen[clock.number] = runs
        out = []
        base = self._baseline.get((clock.number, -1), (0, 0, 0, 0))
        if runs > base[0]:
            out.append(GraphRunsRow(clock.number, clock.graph_id, runs - base[0],
                                    clock.loop_runs() - base[1], ns - base[2], low, high))
        for i, step in enumerate(clock.steps):
            calls, ns, low, high, nbytes = clock.step_totals(i)
            base = self._baseline.get((clock.number, i), (0, 0, 0, 0))
            if calls <= base[0]:
                continue
            out.append(KernelTotalRow(
                clock.number, i, clock.graph_id, step.name, step.kind, step.member_ids,
                step.member_ops, calls - base[0], clock.loop_calls(i) - base[1],
                ns - base[2], low, high, nbytes - base[3], step.shape, step.dtype,
                step.device, step.scope, step.location, step.backend))
        return out
