"""Graph mode's kernel times as a recording keeps them: sums per compiled step.

While recording, every plan sums its own steps' runs (:mod:`execmode.kernel_clock`: C
inside a whole-graph program, the plan's loop otherwise), so a jitted call costs a clock
read per step instead of an event per step. :class:`KernelTotals` turns those sums into
rows of the session's ``kernel_totals`` and ``graph_runs`` tables: what was summed since
the recording started (each clock's values at the start are its baseline), rewritten in
place as they grow. The writer thread asks for them at each batch, the recorder once more
at the end, after the clock stopped, so the last rows are exact.
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
    total_ns: int
    min_ns: int
    max_ns: int
    bytes: int           # new buffers over all runs (views, planned and pooled: none)
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
    total_ns: int
    min_ns: int
    max_ns: int


class KernelTotals:
    """The kernel_totals and graph_runs rows of one recording (see the module docstring)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._baseline: dict = {}   # (clock number, step index or -1) -> (calls, ns, bytes)
        self._written: dict = {}    # the same key -> the calls of the last row given
        self._open = True
        for clock in kernel_clock.clocks():
            self._baseline[(clock.number, -1)] = clock.run_totals()[:2] + (0,)
            for i in range(clock.n_steps):
                calls, ns, _, _, nbytes = clock.step_totals(i)
                self._baseline[(clock.number, i)] = (calls, ns, nbytes)

    def rows(self, *, final: bool = False) -> list:
        """Rows that changed since the last call; ``final``: the last call (later calls
        give nothing, so a late periodic read never overwrites the exact last rows)."""
        with self._lock:
            if not self._open:
                return []
            if final:
                self._open = False
            out = []
            for clock in kernel_clock.clocks():
                out.extend(self._clock_rows(clock))
            return out

    def _clock_rows(self, clock) -> list:
        out = []
        runs, ns, low, high = clock.run_totals()
        base = self._baseline.get((clock.number, -1), (0, 0, 0))
        if runs > base[0] and self._changed((clock.number, -1), runs):
            out.append(GraphRunsRow(clock.number, clock.graph_id, runs - base[0],
                                    ns - base[1], low, high))
        for i, step in enumerate(clock.steps):
            calls, ns, low, high, nbytes = clock.step_totals(i)
            base = self._baseline.get((clock.number, i), (0, 0, 0))
            if calls <= base[0] or not self._changed((clock.number, i), calls):
                continue
            out.append(KernelTotalRow(
                clock.number, i, clock.graph_id, step.name, step.kind, step.member_ids,
                step.member_ops, calls - base[0], ns - base[1], low, high, nbytes - base[2],
                step.shape, step.dtype, step.device, step.scope, step.location,
                step.backend))
        return out

    def _changed(self, key, calls: int) -> bool:
        if self._written.get(key) == calls:
            return False
        self._written[key] = calls
        return True
