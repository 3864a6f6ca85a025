"""Measuring the profiler's own cost, so reports can say how much of a number is ours.

Measured with the one protocol (:mod:`execmode.profilers.measure`: interleaved rounds,
medians), on workloads small enough that the profiler's cost shows:

* **eager ops** - rounds of two ops on 16-element tensors (an operator, the fast path, and
  a function, the general path) with nobody listening (``no_listener_ns``), with a
  listener that does nothing (``null_listener_ns``) and with a real recorder writing a
  scratch session, its writer's commits timed within its rounds (``recorder_ns``).
  ``overhead_ns = recorder_ns - no_listener_ns`` is what recording adds to an eager op;
* **graph mode** - a jitted function of :data:`GRAPH_STEPS` small compiled steps, run
  plainly and under the recorder. Recording adds a clock read per step and one per run
  (execmode/kernel_clock.py): ``kernel_step_ns`` is the difference per run over
  ``steps + 1``. With per-run kernel rows (``kernel_rows``), every step instead runs in
  the plan's Python loop and sends an event: ``kernel_row_ns`` is that cost per step.

A report multiplies each by what the session ran (profilers/profiler_cost.py). Negative
differences (the noise of a fast machine) are stated as 0. ``settled`` is False when some
rounds ran on a machine busier than its CPUs or disagreed: such numbers serve the session
at hand and are not cached. Takes ~0.3 s, once per machine
and code (calibration_cache.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from execmode.profilers import measure

from execmode import instrument

DEFAULT_OPS = 2000
GRAPH_STEPS = 6
ROUNDS = measure.MIN_ROUNDS + 2


class _NullListener:
    def on_op(self, ev, output) -> None:
        pass


def _eager_workload(n: int):
    """A callable running ``n`` rounds of two ops: an operator and a function."""
    import execmode as em

    a, b, exp = em.ones(16), em.ones(16), em.exp

    def run():
        for _ in range(n):
            a + b
            exp(a)
    return run


def _graph_workload(calls: int):
    """A callable making ``calls`` calls of a jitted function of GRAPH_STEPS compiled
    steps on 16 elements (each reduction ends a fused kernel)."""
    import execmode as em

    def chain(x):
        for _ in range(GRAPH_STEPS):
            x = em.exp(x - x.max())
        return x

    f, x = em.jit(chain), em.ones(16)
    f(x)

    def run():
        for _ in range(calls):
            f(x)
    return run


def measure_overhead(*, ops: int = DEFAULT_OPS, memory: bool = True,
                     summaries: bool = False, kernel_rows: bool = False) -> dict:
    """Per-op and per-step costs in ns (see the module docstring); ``{"skipped": why}``
    when other listeners are attached (a debugger would see the calibration ops)."""
    if instrument.listeners():
        return {"skipped": "other instrumentation listeners were attached"}
    from execmode.profilers.recorder import Recorder

    rounds_of_two = max(1, ops // 2)
    eager = _eager_workload(rounds_of_two)
    graph_calls = max(1, ops // 4)
    graph = _graph_workload(graph_calls)
    null = _NullListener()
    with tempfile.TemporaryDirectory(prefix="execmode-calibration-") as tmp:
        rec = Recorder(Path(tmp) / "calibration.emsession", memory=memory,
                       summaries=summaries, calibrate=False, kernel_rows=kernel_rows)
        rec.start()
        instrument.remove_listener(rec)
        attached = {"none": (), "null": (null,), "recorder": (rec,),
                    "graph": (), "graph recorded": (rec,)}

        def before_round(name):
            for listener in instrument.listeners():
                instrument.remove_listener(listener)
            for listener in attached[name]:
                instrument.add_listener(listener)

        def sync():  # the writer's commits belong to the rounds whose rows they hold
            if rec in instrument.listeners():
                rec.flush()

        try:
            spreads = measure.measure(
                {"none": eager, "null": eager, "recorder": eager, "graph": graph,
                 "graph recorded": graph},
                rounds=ROUNDS, calls=1, warmup=1, before_round=before_round, sync=sync)
        finally:
            before_round("none")
            rec.close()
    # Numbers from a crowded machine or disagreeing rounds are used for this session and
    # not kept for later ones (calibration_cache.py).
    unsettled = [name for name, spread in spreads.items()
                 if spread.crowded or spread.relative_iqr > measure.MAX_RELATIVE_IQR]
    per_op = {name: spreads[name].median / (2 * rounds_of_two)
              for name in ("none", "null", "recorder")}
    per_run = {name: spreads[name].median / graph_calls for name in ("graph", "graph recorded")}
    per_step = max(0.0, per_run["graph recorded"] - per_run["graph"]) / (GRAPH_STEPS + 1)
    return {
        "ops": 2 * rounds_of_two,
        "rounds": ROUNDS,
        "no_listener_ns": round(per_op["none"]),
        "null_listener_ns": round(per_op["null"]),
        "recorder_ns": round(per_op["recorder"]),
        "instrumentation_ns": max(0, round(per_op["null"] - per_op["none"])),
        "overhead_ns": max(0, round(per_op["recorder"] - per_op["none"])),
        "graph_run_ns": round(per_run["graph"]),
        "graph_steps": GRAPH_STEPS,
        ("kernel_row_ns" if kernel_rows else "kernel_step_ns"): round(per_step),
        "load_average": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "settled": not unsettled,
        "memory": memory,
        "summaries": summaries,
        "kernel_rows": kernel_rows,
    }
