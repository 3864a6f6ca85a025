"""Kernel threads: the same compiled kernels at 1 and N threads, side by side in one run.

    python benchmarks/bench_threads.py              # 1 thread against 2
    python benchmarks/bench_threads.py --threads 4  # 1 thread against 4
    python benchmarks/bench_threads.py --sweep      # where the parallel threshold belongs

Each workload is jitted once; its kernel library then runs at 1 thread and at N threads
(``execmode.codegen.threads.set_num_threads``) in interleaved rounds (benchmarks/timing.py:
medians and interquartile ranges; a speed-up only when the rounds carry one), and the two
results must be the same bytes. The memory-traffic floor of a kernel is the bytes it must
move divided by the copy bandwidth (``np.copyto`` of 16M float32, one thread, timed in the
same rounds as the kernel).

``--sweep`` compiles small-to-large kernels with the parallel threshold forced to zero
(every kernel gets its parallel loop) and prints time(N threads) / time(1 thread) per size:
the threshold (``CRenderer.parallel_min_work``, points x estimated cost per point) belongs
where that ratio drops below 1. Timing only; tests never time anything.
"""

from __future__ import annotations

import argparse

import numpy as np
import timing
from timing import N_LARGE

import execmode as em
from execmode.codegen.threads import set_num_threads


def side_by_side(fn, args, threads: int, calls: int, rounds: int, extra=None) -> dict:
    """``{1: Spread, threads: Spread, **extra}``: the kernel at 1 thread and at ``threads``
    (and any ``extra`` candidates, at the default count) in interleaved rounds. The results
    of the two counts must be the same bytes."""
    outputs = {}
    for n in (1, threads):
        set_num_threads(n)
        outputs[n] = np.array(fn(*args).numpy(), copy=True)
    if outputs[1].tobytes() != outputs[threads].tobytes():
        raise AssertionError(f"{fn}: results differ between 1 and {threads} threads")
    candidates = {1: lambda: fn(*args), threads: lambda: fn(*args), **(extra or {})}
    try:
        return timing.measure(candidates, rounds=rounds, calls=calls,
                              before_round=lambda n: set_num_threads(n if n in (1, threads)
                                                                     else None))
    finally:
        set_num_threads(None)


# --- workloads: (name, function, arguments, bytes that must move) --------------------------

def workloads(n: int) -> list:
    rng = np.random.default_rng(3)
    x, a, b = (em.tensor(rng.standard_normal(n, dtype=np.float32)) for _ in range(3))
    side = int(np.sqrt(n))
    m = em.tensor(rng.standard_normal((side, side), dtype=np.float32))
    f32 = 4
    return [
        # bench_seeds' ew_chain_large: three inputs read, one output written.
        ("ew chain tanh(x*a+b)*0.5+relu(x)", em.jit(lambda x, a, b: em.tanh(x * a + b) * 0.5
                                                     + em.relu(x)), (x, a, b), 4 * n * f32),
        # Two ops each: a single jitted op runs NumPy's ufunc, not a kernel.
        ("(x+a)*0.5 (memory-bound)", em.jit(lambda x, a: (x + a) * 0.5), (x, a), 3 * n * f32),
        ("sum(abs(x)) (64 chunks)", em.jit(lambda x: em.sum(em.abs(x))), (x,), n * f32),
        ("sum(x*x) (64 chunks)", em.jit(lambda x: em.sum(x * x)), (x,), n * f32),
        (f"row sum(exp(m), axis=1) {side}x{side}", em.jit(lambda m: em.sum(em.exp(m), axis=1)),
         (m,), side * side * f32),
    ]


def run_table(report, threads: int, quick: bool, rounds: int) -> None:
    calls = 1 if quick else 3
    rows, timed = [], []
    copy = timing.copy_candidate(N_LARGE)
    for name, fn, args, nbytes in workloads(N_LARGE):
        spreads = side_by_side(fn, args, threads, calls, rounds, {"copy": copy})
        one, many = spreads[1], spreads[threads]
        # The floor in this row's rounds: the bytes the kernel moves at the copy's speed.
        floor = timing.scaled(spreads["copy"], nbytes / timing.copy_bytes(N_LARGE))
        timed.append((nbytes, many))
        rows.append([name, timing.time_cell(one), timing.time_cell(many),
                     timing.ratio_cell(one, many, "1 thread", f"{threads} threads"),
                     timing.time_cell(floor), timing.ratio_cell(one, floor, "1 thread", "floor"),
                     timing.ratio_cell(many, floor, f"{threads} threads", "floor")])
    report.table([f"kernel ({N_LARGE >> 20}M elements)", "1 thread", f"{threads} threads",
                  "speed-up", "floor (copy bandwidth)", "1 thread / floor",
                  f"{threads} threads / floor"], rows,
                 title=f"Per call: median (interquartile range) of {rounds} interleaved rounds")
    # One thread's copy may not saturate memory: the memory-bound kernel's own bandwidth
    # at N threads gives a second, stricter floor.
    stream = timed[1][0] / (timed[1][1].median / 1e9)
    chain_bytes, chain_many = timed[0]
    report.note(f"{threads}-thread bandwidth of the memory-bound kernel (median): "
                f"{stream / 1e9:.1f} GB/s; the ew chain at {threads} threads over that floor "
                f"({timing.fmt_time(chain_bytes / stream)}): "
                f"{chain_many.median / 1e9 / (chain_bytes / stream):.2f}x (medians).")


def run_sweep(report, threads: int, quick: bool, rounds: int) -> None:
    """Every kernel parallel (threshold 0): where do threads start to pay?"""
    from execmode.codegen import lower
    from execmode.codegen.render_c import CRenderer

    saved = CRenderer.parallel_min_work, lower.SPLIT_MIN_ELEMENTS
    CRenderer.parallel_min_work, lower.SPLIT_MIN_ELEMENTS = 0, 0
    try:
        sizes = [1 << k for k in range(12, 23, 1 if not quick else 4)]
        rows = []
        for n in sizes:
            calls = max(3, (1 << 22) // n // (8 if quick else 1))
            cells = []
            for _, fn, args, _ in workloads(n)[:3]:
                spreads = side_by_side(fn, args, threads, calls, rounds)
                one, many = spreads[1], spreads[threads]
                cells.append(f"{timing.ratio_cell(many, one, f'{threads} threads', '1 thread')}"
                             f" ({timing.fmt_time(one.median / 1e9)} -> "
                             f"{timing.fmt_time(many.median / 1e9)})")
            rows.append([f"{n:,}", *cells])
        report.table(["points", "ew chain (tanh)", "(x+a)*0.5", "sum(abs(x))"], rows,
                     title=f"Time at {threads} threads / time at 1 thread, every kernel "
                           f"parallel (< 1: threads pay); medians of {rounds} interleaved "
                           "rounds")
    finally:
        CRenderer.parallel_min_work, lower.SPLIT_MIN_ELEMENTS = saved


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2,
                        help="the thread count compared with 1 (default 2)")
    parser.add_argument("--sweep", action="store_true", help="the threshold sweep")
    timing.add_arguments(parser, rounds=15)
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be a positive integer")
    rounds = timing.rounds_of(args, default=15)
    report = timing.Report(args)
    if args.sweep:
        run_sweep(report, args.threads, args.quick, rounds)
    else:
        run_table(report, args.threads, args.quick, rounds)
    report.finish()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
