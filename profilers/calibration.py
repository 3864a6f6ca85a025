"""Measuring the profiler's own cost, so reports can say how much of a number is ours.

Measured with the one protocol (:mod:`execmode.profilers.measure`: interleaved rounds,
medians), on workloads small enough that the profiler's cost shows:

* **eager ops** - rounds of two ops on 16-element tensors (an operator, the fast path, and
  a function, the general path) with nobody listening (``no_listener_ns``), with a
  listener that does nothing (``null_listener_ns``) and with a real recorder writing a
  scratch session (``recorder_ns``): its writer's commits are timed within the rounds
  only where the process has one CPU (with a second, the writer commits while the script
  runs on).
  ``overhead_ns = recorder_ns - no_listener_ns`` is what recording adds to an eager op;
  ``op_path_ns`` is the same by the path the op takes to the recorder (OP_PATHS: a C or
  a Python operator, a C unary function, run_eager), each path pinned in its rounds
  (codegen/eager_operators.pin): run_eager's ops cost about twice a C operator's, and a
  script's ops take the Python operators until they are hot; ``python`` is the path of
  ops the ring does not take (an OpEvent each), on a recorder without one. ``site_ns``
  is what an op adds the first time its site (op, operands, line) is seen: the ring
  registers it and the writer formats it, once;
* **ops over more data than the cache holds** - what an op adds beyond that when the data
  it moved evicted the recorder's own state from the core's cache (``cold_op_ns``, by the
  bytes moved: calibration_cold.py);
* **composites** - what a composite that runs op by op because a recorder watches adds
  beyond its ops' recording, per call of each site (``declined_ns``:
  calibration_declined.py), from its runs plain and recorded side by side in
  ``PAIRED_ROUNDS`` pairs (measure.paired), each run after one untimed call;
* **graph mode** - a jitted function of small compiled steps, run plainly and under the
  recorder side by side (measure.paired, as the composites), twice: as one whole-graph C
  program (which reads the clock in C) and without one (the generated Python replay reads
  it). Recording adds a clock read per step it times and one per run
  (execmode/kernel_clock.py), counted from the plan's own clock.
  The compiled run also has a cost of its own, whatever its steps (the call's path while
  a listener wants kernel times): a second program of one step separates the two, a
  cost per run (``kernel_run_ns``) and per clock read (``kernel_step_ns``), the line
  through the two programs' differences. ``kernel_loop_step_ns`` is the Python loop's
  difference per clock read. With per-run kernel rows (``kernel_rows``), every step runs
  in the plan's Python loop and sends an event: ``kernel_row_ns`` is that cost per step.

A report multiplies each by what the session ran (profilers/profiler_cost.py). Negative
differences (the noise of a fast machine) are stated as 0. ``settled`` is False when some
rounds ran on a machine busier than its CPUs (``crowded`` names them): such numbers serve
the session at hand and are not cached; rounds that disagree on a quiet machine
(``disagreeing``) are the workload's own, and kept. Takes ~4-8.5 s on the 2-core dev VM
(~1 s of it the cache sweeps, ~2 s the composites' pairs; more on a busy machine or a slow
one), once per machine and code (calibration_cache.py).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from execmode.profilers import calibration_cold, calibration_declined, measure
from execmode.profilers.profiler_cost import stated_eager_ns

from execmode import instrument

DEFAULT_OPS = 2000
GRAPH_STEPS = 6
ROUNDS = measure.MIN_ROUNDS + 2
PAIRED_ROUNDS = 15  # pairs of runs of each composite and jitted workload (measure.paired)


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


# Eager ops cost the recorder differently by the way they reach it, and the op ring counts
# each way (op_ring.c's ``counted``): (entry, execmode's Python frames passed). Each is
# measured here on the path that takes it: C operators; Python operators (before a
# script's operators are hot); C unary functions; run_eager and Python unary functions.
# ``native``: with the C operators and unary functions in.
OP_PATHS = {("binary", 0): ("operator", True), ("binary", 1): ("operator", False),
            ("general", 1): ("unary", True), ("general", 2): ("general", False)}


def _path_workload(kind: str, n: int):
    """A callable running ``n`` rounds of two ops of one path (OP_PATHS)."""
    import execmode as em

    a, b, x, exp, matmul = em.ones(16), em.ones(16), em.ones((2, 2)), em.exp, em.matmul

    def operator():
        for _ in range(n):
            a + b
            b * a

    def unary():
        for _ in range(n):
            exp(a)
            exp(b)

    def general():  # run_eager's op and a Python unary function's
        for _ in range(n):
            matmul(x, x)
            exp(a)
    return {"operator": operator, "unary": unary, "general": general}[kind]


SITES = 200


def _site_workload(n: int):
    """A callable running ``n`` operators, each on arrays of a shape no op had before: in
    a recording, each is a new site (op, operands, line) that the ring registers and the
    writer formats once. Its tensors are made without an op."""
    import itertools

    import numpy as np

    from execmode.dispatch import plain_tensor

    sizes = itertools.count(SITES)

    def run():
        for _ in range(n):
            t = plain_tensor(np.ones(next(sizes), np.float32))
            t + t
    return run


def _graph_workload(calls: int, *, python_loop: bool = False, steps: int = GRAPH_STEPS):
    """(a callable making ``calls`` runs of a jitted function's plan of small compiled
    steps on 16 elements, the plan). As compiled, the plan is one whole-graph program,
    timed in C; with ``python_loop`` its program is set aside and the plan's Python loop
    runs the same C kernels step by step, timing them as the generated replay does."""
    import execmode as em

    def chain(x):
        for _ in range(steps):
            x = em.exp(x - x.max())
        return x

    f, x = em.jit(chain), em.ones(16)
    f(x)
    f(x)
    plan = f.concrete_functions[-1].segments[0].compiled.plan
    if python_loop:
        plan.program = None
        arrays = [x._data]
        run_plan = plan.run

        def run():
            for _ in range(calls):
                run_plan(arrays)
        run()
        return run, plan

    def run():
        for _ in range(calls):
            f(x)
    return run, plan


def _clock_reads_per_run(plan) -> int:
    """The clock reads one run makes: one per step it times (a program never runs a
    view), and one for the run."""
    clock = plan.clock
    runs = clock.run_totals()[0]
    timed = sum(1 for i in range(clock.n_steps) if clock.step_totals(i)[0] >= runs > 0)
    return timed + 1


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
    # Calibrating compiles kernels; loading them must not set the BLAS's thread count of
    # a script that may never compile one itself (threads.py).
    from execmode.codegen.threads import blas_left_alone

    with blas_left_alone():
        graph, program_plan = _graph_workload(graph_calls)
        short, short_plan = _graph_workload(graph_calls, steps=1)
        loop, loop_plan = _graph_workload(graph_calls, python_loop=True)
    paths = {f"{entry}{frames}": (_path_workload(kind, rounds_of_two), native)
             for (entry, frames), (kind, native) in OP_PATHS.items()}
    # New sites, on the Python operators' path (binary1), whose cost per op is known.
    paths["sites"] = (_site_workload(SITES), False)
    paths["python"] = (_path_workload("operator", rounds_of_two), False)
    composites = calibration_declined.workloads()
    primers = calibration_declined.workloads(calls=1)  # one call of each, untimed
    from execmode._tensor import Tensor
    from execmode.codegen import eager_operators

    restore_operators = eager_operators.snapshot(Tensor)
    null = _NullListener()
    # With a second CPU the recorder's writer thread commits rows while the script runs
    # on: what recording adds to the script's wall time is its own thread's work and the
    # writer's contention, not the writer's work (a round that waited for the writer's
    # commits stated fancy_func's cost 5x the measured one). Alone on one CPU, the
    # writer's work is the script's wait. The last rows' commit is the stop's, measured.
    writer_runs_beside = len(os.sched_getaffinity(0)) > 1 if hasattr(os, "sched_getaffinity") \
        else (os.cpu_count() or 1) > 1
    with tempfile.TemporaryDirectory(prefix="execmode-calibration-") as tmp:
        rec = Recorder(Path(tmp) / "calibration.emsession", memory=memory,
                       summaries=summaries, calibrate=False, kernel_rows=kernel_rows)
        rec.start()
        instrument.remove_listener(rec)
        # The Python path (an OpEvent per op: ops the ring does not take, another thread's,
        # a GPU array's) on a recorder without a ring.
        python_rec = Recorder(Path(tmp) / "python.emsession", memory=memory,
                              summaries=summaries, calibrate=False, kernel_rows=kernel_rows,
                              op_ring=False).start()
        instrument.remove_listener(python_rec)
        attached = {"none": (), "null": (null,), "recorder": (rec,),
                    "graph": (), "graph recorded": (rec,), "short": (), "short recorded": (rec,),
                    "loop": (), "loop recorded": (rec,),
                    **{f"{path} plain": () for path in paths},
                    **{f"{path} recorded": (python_rec if path == "python" else rec,)
                       for path in paths},
                    **{f"composite:{name} plain": () for name in composites},
                    **{f"composite:{name} recorded": (rec,) for name in composites}}
        native_in = {}

        def before_round(name):
            for listener in instrument.listeners():
                instrument.remove_listener(listener)
            restore_operators()
            path = name.split(" ")[0]
            if path in paths:
                native_in[path] = eager_operators.pin(Tensor, paths[path][1])
            # Rows queued by earlier rounds (kernel rows, the ring's) are written now, not
            # charged to the next recorded round.
            rec.flush()
            python_rec.flush()
            for listener in attached[name]:
                instrument.add_listener(listener)
            if name.startswith("composite:"):
                # A composite's round is a few dozen calls: after the other workloads, its
                # first call runs from memory, the recorded path's code and data ~30 us
                # more than the plain path's (measured apart): ~0.6 us a call of a round.
                # One call first, untimed, as a script's loop runs its ops again and again.
                primers[name.split(" ")[0].removeprefix("composite:")]()

        def recorded_path(run, recorder):
            # The writer's commits belong to the rounds they hold rows of.
            def recorded():
                run()
                if not writer_runs_beside:
                    recorder.flush()
            return recorded

        # What each composite does under the recorder: its calls by site, its ops by path
        # (a first run registers its sites, which the rounds then find registered).
        instrument.add_listener(rec)
        try:
            for run in composites.values():
                run()
            probes = {name: calibration_declined.probe(run, rec)
                      for name, run in composites.items()}
        finally:
            instrument.remove_listener(rec)
        try:
            spreads = measure.measure(
                {"none": eager, "null": eager, "recorder": recorded_path(eager, rec), "graph": graph,
                 **{f"{path} plain": run for path, (run, _) in paths.items()},
                 **{f"{path} recorded": recorded_path(run, python_rec if path == "python" else rec)
                    for path, (run, _) in paths.items()}},
                rounds=ROUNDS, calls=1, warmup=1, before_round=before_round,
                replay_sizes=False)
            # A composite costs a recorder ~1 us a call beyond its ops, a jitted run tens of
            # ns: small differences of two runs, measured with the two side by side, many
            # times (the composites and the jitted runs apart: interleaved, the jitted
            # runs' 500 calls widened the composites' spread). As the difference of two
            # medians of interleaved rounds, matmul's composite read 0-1855 ns in six
            # calibrations (one matpow session stated 86-201 ms by them) and a jitted run
            # cost 0 in two of six; paired, 652-1201 ns (120-133 ms) and never 0 in twelve.
            spreads.update(measure.paired(
                {**{f"composite:{name} plain": run for name, run in composites.items()},
                 **{f"composite:{name} recorded": recorded_path(run, rec)
                    for name, run in composites.items()}},
                {f"composite:{name}": (f"composite:{name} plain", f"composite:{name} recorded")
                 for name in composites},
                rounds=PAIRED_ROUNDS, before_round=before_round))
            spreads.update(measure.paired(
                {"graph": graph, "graph recorded": graph, "short": short,
                 "short recorded": short, "loop": loop, "loop recorded": loop},
                {f"{path} added": (path, f"{path} recorded") for path in ("graph", "short", "loop")},
                rounds=PAIRED_ROUNDS, before_round=before_round))
            before_round("none")
            cold_points, cold_spreads = calibration_cold.measure_points(
                lambda: instrument.add_listener(rec), lambda: instrument.remove_listener(rec),
                rounds=calibration_cold.ROUNDS)
            spreads.update({f"cold:{name}": spread for name, spread in cold_spreads.items()})
        finally:
            before_round("none")
            rec.close()
            python_rec.close()
        reads = {"graph": _clock_reads_per_run(program_plan),
                 "short": _clock_reads_per_run(short_plan),
                 "loop": _clock_reads_per_run(loop_plan)}
    # Numbers from a crowded machine are used for this session and not kept for later
    # ones (calibration_cache.py): a quieter moment measures them again. Rounds that
    # disagree on a quiet machine are the workload's own (with kernel rows, every step's
    # event meets the writer thread): measuring again would not settle them, and every
    # debugger start would pay the calibration again; they are kept, and named.
    unsettled = [name for name, spread in spreads.items() if spread.crowded]
    disagreeing = [name for name, spread in spreads.items()
                   if spread.relative_iqr > measure.MAX_RELATIVE_IQR]
    per_op = {name: spreads[name].median / (2 * rounds_of_two)
              for name in ("none", "null", "recorder")}
    # A path whose C version could not be built here is never taken: not stated.
    op_path_ns = {path: (max(0, round((spreads[f"{path} recorded"].median
                                       - spreads[f"{path} plain"].median) / (2 * rounds_of_two)))
                         if native_in.get(path, False) == native else None)
                  for path, (_, native) in paths.items() if path != "sites"}
    site_ns = max(0, round((spreads["sites recorded"].median - spreads["sites plain"].median)
                           / SITES - (op_path_ns["binary1"] or 0)))
    # A composite's cost left beyond the recorder's stated work on its ops, per site.
    overhead_ns = max(0, round(per_op["recorder"] - per_op["none"]))
    stated_for = {"overhead_ns": overhead_ns, "op_path_ns": op_path_ns}
    left_ns = {name: spreads[f"composite:{name}"].median
               - (stated_eager_ns(stated_for, probe["ops"], probe["ring_ops"]) or 0)
               for name, probe in probes.items()}
    added = {path: max(0.0, spreads[f"{path} added"].median / graph_calls)
             for path in ("graph", "short", "loop")}
    per_read = {"loop": added["loop"] / reads["loop"],
                "graph": max(0.0, (added["graph"] - added["short"])
                             / max(1, reads["graph"] - reads["short"]))}
    compiled_run = max(0.0, added["short"] - per_read["graph"] * reads["short"])
    return {
        "ops": 2 * rounds_of_two,
        "rounds": ROUNDS,
        "no_listener_ns": round(per_op["none"]),
        "null_listener_ns": round(per_op["null"]),
        "recorder_ns": round(per_op["recorder"]),
        "instrumentation_ns": max(0, round(per_op["null"] - per_op["none"])),
        "overhead_ns": overhead_ns,
        # What recording adds to an op by its path (OP_PATHS' keys as "binary0" ...).
        "op_path_ns": op_path_ns,
        # What a new site adds (registered by the ring, formatted by the writer), per site.
        "site_ns": site_ns,
        # What a composite's call adds beyond its ops' recording, by site
        # (calibration_declined.py), where a recorder makes it run op by op.
        "declined_ns": calibration_declined.per_site_ns(left_ns, probes),
        # What an op adds beyond that after its data pushed the recorder out of the core's
        # cache: [[bytes moved, ns], ...] (calibration_cold.py).
        "cold_op_ns": cold_points,
        "graph_run_ns": round(spreads["graph"].median / graph_calls),
        "graph_steps": reads["graph"] - 1,
        # Per clock read (a timed step, or a run's end): compiled code, or Python; with
        # kernel rows, per step of the plan's step-by-step loop with its event.
        **({"kernel_row_ns": round(added["graph"] / reads["graph"])} if kernel_rows else
           {"kernel_step_ns": round(per_read["graph"]),
            "kernel_run_ns": round(compiled_run),
            "kernel_loop_step_ns": round(per_read["loop"])}),
        "load_average": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "settled": not unsettled,
        "crowded": unsettled,         # the workloads measured on a machine busier than its CPUs
        "disagreeing": disagreeing,   # those whose rounds spread more than MAX_RELATIVE_IQR
        "memory": memory,
        "summaries": summaries,
        "kernel_rows": kernel_rows,
    }
