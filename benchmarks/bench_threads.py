"""Kernel threads: the same compiled kernels at 1 and N threads, side by side in one run.

    python benchmarks/bench_threads.py              # 1 thread against 2
    python benchmarks/bench_threads.py --threads 4  # 1 thread against 4
    python benchmarks/bench_threads.py --sweep      # where the parallel threshold belongs

Each workload is jitted once; its kernel library then runs at 1 thread and at N threads
(``execmode.codegen.threads.set_num_threads``) in interleaved rounds, best round kept, and
the two results must be the same bytes. The memory-traffic floor of a kernel is the bytes
it must move divided by the copy bandwidth measured in the same run (``np.copyto`` of 16M
float32, one thread, as benchmarks/bench_seeds.py measures it).

``--sweep`` compiles small-to-large kernels with the parallel threshold forced to zero
(every kernel gets its parallel loop) and prints time(N threads) / time(1 thread) per size:
the threshold (``CRenderer.parallel_min_work``, points x estimated cost per point) belongs
where that ratio drops below 1. Timing only; tests never time anything.
"""

from __future__ import annotations

import argparse
import os
import platform

import numpy as np
from timing import N_LARGE, best_per_call, copy_seconds, fmt_time

import execmode as em
from execmode.codegen import backend_status
from execmode.codegen.threads import set_num_threads, usable_cpus


def copy_bandwidth() -> float:
    """Bytes per second of one-thread ``np.copyto`` of 16M float32 (read + write)."""
    return 2 * N_LARGE * 4 / copy_seconds(N_LARGE)


def side_by_side(fn, args, threads: int, calls: int, rounds: int) -> tuple:
    """(seconds at 1 thread, seconds at ``threads``): interleaved rounds, best kept. The
    results of the two counts must be the same bytes."""
    outputs = {}
    for n in (1, threads):
        set_num_threads(n)
        outputs[n] = np.array(fn(*args).numpy(), copy=True)
    if outputs[1].tobytes() != outputs[threads].tobytes():
        raise AssertionError(f"{fn}: results differ between 1 and {threads} threads")
    best = {1: float("inf"), threads: float("inf")}
    for _ in range(rounds):
        for n in (1, threads):
            set_num_threads(n)
            best[n] = min(best[n], best_per_call(lambda: fn(*args), calls, 1))
    set_num_threads(None)
    return best[1], best[threads]


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


def run_table(threads: int, quick: bool) -> None:
    bandwidth = copy_bandwidth()
    print(f"copy bandwidth (np.copyto, 16M float32, one thread): {bandwidth / 1e9:.1f} GB/s\n")
    calls, rounds = (2, 2) if quick else (3, 15)
    print(f"| kernel (16M elements) | 1 thread | {threads} threads | speed-up | "
          f"floor | 1 thread / floor | {threads} threads / floor |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    timed = []
    for name, fn, args, nbytes in workloads(N_LARGE):
        one, many = side_by_side(fn, args, threads, calls, rounds)
        timed.append((name, nbytes, one, many))
        floor = nbytes / bandwidth
        print(f"| {name} | {fmt_time(one)} | {fmt_time(many)} | {one / many:.2f}x | "
              f"{fmt_time(floor)} | {one / floor:.2f}x | {many / floor:.2f}x |", flush=True)
    # One thread's copy may not saturate memory: the memory-bound kernel's own bandwidth
    # at N threads gives a second, stricter floor.
    _, nbytes, _, many = timed[1]
    stream = nbytes / many
    name, chain_bytes, _, chain_many = timed[0]
    print(f"\n{threads}-thread bandwidth of the memory-bound kernel: {stream / 1e9:.1f} GB/s; "
          f"ew chain at {threads} threads / that floor "
          f"({fmt_time(chain_bytes / stream)}): {chain_many / (chain_bytes / stream):.2f}x")


def run_sweep(threads: int, quick: bool) -> None:
    """Every kernel parallel (threshold 0): where do threads start to pay?"""
    from execmode.codegen import lower
    from execmode.codegen.render_c import CRenderer

    saved = CRenderer.parallel_min_work, lower.SPLIT_MIN_ELEMENTS
    CRenderer.parallel_min_work, lower.SPLIT_MIN_ELEMENTS = 0, 0
    try:
        sizes = [1 << k for k in range(12, 23, 1 if not quick else 2)]
        print(f"time at {threads} threads / time at 1 thread, every kernel parallel "
              "(< 1: threads pay)\n")
        print("| points | ew chain (tanh) | (x+a)*0.5 | sum(abs(x)) |")
        print("|---:|---:|---:|---:|")
        for n in sizes:
            calls = max(3, (1 << 22) // n // (8 if quick else 1))
            ratios = []
            for _, fn, args, _ in workloads(n)[:3]:
                one, many = side_by_side(fn, args, threads, calls, 3 if quick else 15)
                ratios.append(f"{many / one:.2f} ({fmt_time(one)} -> {fmt_time(many)})")
            print(f"| {n:,} | " + " | ".join(ratios) + " |", flush=True)
    finally:
        CRenderer.parallel_min_work, lower.SPLIT_MIN_ELEMENTS = saved


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2,
                        help="the thread count compared with 1 (default 2)")
    parser.add_argument("--sweep", action="store_true", help="the threshold sweep")
    parser.add_argument("--quick", action="store_true", help="fewer rounds (smoke test)")
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be a positive integer")

    print(f"# execmode kernel threads - {platform.node()}, {platform.processor() or ''} "
          f"{os.cpu_count()} CPUs ({usable_cpus()} usable), Python "
          f"{platform.python_version()}, NumPy {np.__version__}")
    print("# " + str(backend_status(check_gpu=False)).replace("\n", "\n# "))
    print(f"# load average at start: {os.getloadavg()[0]:.2f} (> 0.5 on 2 cores: the run "
          "shared its CPUs, and a second thread may have found no free core)\n")
    if args.sweep:
        run_sweep(args.threads, args.quick)
    else:
        run_table(args.threads, args.quick)
    print(f"\n# load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
