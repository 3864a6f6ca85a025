"""Measuring the profiler's own cost, so reports can say how much of a number is ours.

Three timings of the same small workload (tiny tensors, so the op's own work is small
and the per-op overheads show):

* ``no_listener_ns``: per op with nobody listening (the engine's fast path);
* ``null_listener_ns``: with a listener that does nothing (dispatch building events);
* ``recorder_ns``: with a real recorder writing to a scratch session, including the time
  the writer needs to commit the rows (amortised per op).

``overhead_ns = recorder_ns - no_listener_ns`` is what recording adds to each eager op;
a report multiplies it by the op count. Takes ~50 ms at the start of a recording.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from execmode import instrument

DEFAULT_OPS = 2000

_perf_ns = time.perf_counter_ns


class _NullListener:
    def on_op(self, ev, output) -> None:
        pass


def _workload(n: int) -> int:
    """ns for ``n`` rounds of two ops: an operator (fast path) and a function (general path)."""
    import execmode as em

    a = em.ones(16)
    b = em.ones(16)
    exp = em.exp
    start = _perf_ns()
    for _ in range(n):
        a + b
        exp(a)
    return _perf_ns() - start


def _best_per_op(n: int, repeats: int = 3) -> float:
    return min(_workload(n) for _ in range(repeats)) / (2 * n)


def measure_overhead(*, ops: int = DEFAULT_OPS, memory: bool = True,
                     summaries: bool = False) -> dict:
    """Per-op costs in ns (see the module docstring); ``{"skipped": why}`` when other
    listeners are attached (a debugger would see the calibration ops)."""
    if instrument.listeners():
        return {"skipped": "other instrumentation listeners were attached"}
    from execmode.profilers.recorder import Recorder

    rounds = max(1, ops // 2)
    _workload(100)  # warm caches: imports, interned locations, NumPy dispatch
    none_ns = _best_per_op(rounds)
    with instrument.listening(_NullListener()):
        _workload(100)
        null_ns = _best_per_op(rounds)
    with tempfile.TemporaryDirectory(prefix="execmode-calibration-") as tmp:
        rec = Recorder(Path(tmp) / "calibration.emsession", memory=memory,
                       summaries=summaries, calibrate=False)
        try:
            rec.start()
            _workload(100)
            rec.flush()
            run_ns = _workload(rounds)
            flush_start = _perf_ns()
            rec.flush()
            flush_ns = _perf_ns() - flush_start
        finally:
            rec.close()
    recorder_ns = (run_ns + flush_ns) / (2 * rounds)
    return {
        "ops": 2 * rounds,
        "no_listener_ns": round(none_ns),
        "null_listener_ns": round(null_ns),
        "recorder_ns": round(recorder_ns),
        "instrumentation_ns": round(null_ns - none_ns),
        "overhead_ns": round(recorder_ns - none_ns),
        "memory": memory,
        "summaries": summaries,
    }
