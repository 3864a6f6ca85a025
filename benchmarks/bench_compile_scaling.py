"""Compile time against graph size, in three shapes, the C compiler's time included.

    python benchmarks/bench_compile_scaling.py                 # each shape's sizes (SIZES)
    python benchmarks/bench_compile_scaling.py --quick         # smaller sizes, 5 rounds
    python benchmarks/bench_compile_scaling.py --shapes chain_tanh --sizes 500 5000
    python benchmarks/bench_compile_scaling.py --backend numpy # execmode's own time only

Shapes (a size counts the traced ops):

* ``chain``: ``x * 1.0001 + 0.5 ...``, one fused kernel (what made fuse quadratic);
* ``chain_tanh``: the same with a third of the ops ``tanh`` (bench_peers.py's
  ``chain_1000_steady``, issue 16's "1000-op fused kernel"): transcendentals are where
  the C compiler's time grew (bench_first_call.py has issue 35's rows);
* ``wide``: a ladder of small matmuls whose values die together and are reused together
  (what made memory planning quadratic).

Every measurement is one fresh process with an empty kernel cache (benchmarks/timing.py):
what a person waits for the first time a function of that size is compiled. It prints the
time to trace, the passes (from the pass record), the verification and bookkeeping
between them, and ``compile``: code generation, the C compiler (gcc) and plan building
with the C backend (``--backend numpy``: no C compiler, execmode's own time). The fast
entry's build and the first run are not in these stages; bench_peers.py's first-call rows
time a whole first call. Rounds interleave every size and shape; each cell is the median
(interquartile range) of the rounds.

The last columns compare a size's total with the previous size's: a linear compile gives
10x ops -> ~10x time. Goal: 10x ops -> <= 12x time (for other steps, 1.2x the ops ratio),
judged on the medians.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import timing  # noqa: E402

import execmode as em  # noqa: E402

GROWTH_GOAL = 1.2  # time ratio over ops ratio


def make_chain(n_ops: int):
    """``x * 1.0001 + 0.5 ...``: n_ops elementwise ops, one fused kernel when optimized."""

    def chain(x):
        for k in range(n_ops):
            x = x * 1.0001 if k % 2 == 0 else x + 0.5
        return x

    return chain


def make_chain_tanh(n_ops: int):
    """n_ops elementwise ops, a third of them tanh (bench_peers.py's transcendental chain)."""

    def chain(x):
        for k in range(n_ops):
            x = em.tanh(x) if k % 3 == 0 else (x * 1.0001 if k % 3 == 1 else x + 0.001)
        return x

    return chain


def make_wide(n_ops: int):
    """n_ops/4 matmuls made at once, multiplied together, then the same again: a wide
    graph whose values die together and are reused together."""
    n = max(2, n_ops // 8)
    w = em.tensor(np.ones((4, 4), np.float32))

    def wide(x):
        ys = [x @ (w * float(i)) for i in range(n)]
        s = ys[0]
        for y in ys[1:]:
            s = s @ y
        zs = [s @ (w + float(i)) for i in range(n)]
        t = zs[0]
        for z in zs[1:]:
            t = t @ z
        return t

    return wide


SHAPES = {"chain": (make_chain, (256,)), "chain_tanh": (make_chain_tanh, (256,)),
          "wide": (make_wide, (4, 4))}
# Sizes per shape (full, quick). A tanh chain's kernels call the runtime library's tanh
# and stay under fuse.MAX_GROUP_OPS ops, so its compile grows with the ops (it took 21 s at
# 1000 ops when every tanh was inlined into one kernel); the wide ladder's C compile takes
# ~3 s at 1000 ops. --sizes asks for any.
SIZES = {"chain": ([100, 1000, 10000], [100, 1000]),
         "chain_tanh": ([100, 1000, 10000], [100, 1000]),
         "wide": ([100, 1000], [40, 400])}


def stages(n_ops: int, backend: str, shape: str) -> dict:
    """In a fresh process: seconds per stage for one jit of an n_ops graph of ``shape``."""
    make, x_shape = SHAPES[shape]
    fn = make(n_ops)
    x = em.tensor(np.full(x_shape, 0.1, np.float32))
    f = em.jit(fn, backend=backend)
    t0 = time.perf_counter()
    traced = f.trace(x)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    lowered.compile()
    t3 = time.perf_counter()
    passes = sum(r.wall_ns for r in lowered.record.results) / 1e9
    return {"trace": t1 - t0, "passes": passes, "verify+record": (t2 - t1) - passes,
            "compile": t3 - t2, "total": t3 - t0}


STAGES = ("trace", "passes", "verify+record", "compile", "total")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=None,
                    help="ops per graph, every shape (default: each shape's SIZES)")
    ap.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    ap.add_argument("--backend", choices=("c", "numpy"), default="c",
                    help="c (default): code generation and gcc in 'compile'; numpy: no "
                         "C compiler")
    ap.add_argument("--child", nargs=3, metavar=("SHAPE", "OPS", "BACKEND"),
                    help=argparse.SUPPRESS)
    timing.add_arguments(ap)
    args = ap.parse_args(argv)
    if args.child:
        shape, n_ops, backend = args.child
        timing.report_child_result(stages(int(n_ops), backend, shape))
        return 0
    rounds = timing.rounds_of(args)
    sizes = {shape: args.sizes or SIZES[shape][1 if args.quick else 0]
             for shape in args.shapes}
    report = timing.Report(args)
    commands = {(shape, n): timing.child_argv(__file__, "--child", shape, str(n), args.backend)
                for shape in args.shapes for n in sizes[shape]}
    found = timing.run_interleaved(
        {key: lambda argv=argv: timing.fresh_process_result(argv)
         for key, argv in commands.items()}, rounds=rounds)
    for shape in args.shapes:
        rows, previous = [], None
        for n in sizes[shape]:
            spreads = {stage: timing.Spread.of([r[stage] * 1e9 for r in found[(shape, n)]])
                       for stage in STAGES}
            growth = ["-", "-", "-"]
            if previous is not None:
                ops_ratio = n / previous[0]
                total, before = spreads["total"], previous[1]
                goal = GROWTH_GOAL * ops_ratio
                growth = [f"{ops_ratio:g}x", timing.ratio_cell(total, before, f"{n} ops",
                                                                f"{previous[0]} ops"),
                          f"{timing.goal_cell(timing.judge_ratio(total, before, goal))} "
                          f"(<= {goal:g}x)"]
            rows.append([f"{n:,}", *(timing.time_cell(spreads[s]) for s in STAGES), *growth])
            previous = (n, spreads["total"])
        report.table(["ops", *STAGES, "ops ratio", "time ratio", "goal"], rows,
                     title=f"{shape}, backend {args.backend}, a fresh process and an empty "
                           f"kernel cache per measurement: median (interquartile range) of "
                           f"{rounds} interleaved rounds")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
