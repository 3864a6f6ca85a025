"""Compile time against graph size: 100 -> 10,000 ops, in two shapes.

    python benchmarks/bench_compile_scaling.py            # 100, 1000, 10000 ops
    python benchmarks/bench_compile_scaling.py --sizes 100 1000 --c   # and the C compile
    python benchmarks/bench_compile_scaling.py --shapes wide          # one shape

Shapes: ``chain``, an elementwise chain (one fused kernel: what made fuse quadratic), and
``wide``, a ladder of small matmuls (values that die together and are reused together:
what made memory planning quadratic); a size counts the traced ops.

For each size it prints the time to trace, each pass of the pipeline (from the pass
record), the verification and bookkeeping between passes, and code generation + plan
building with the NumPy backend (no C compiler in the loop: gcc's own time is not
execmode's). The last column is the ratio of a size's total to the previous size's total,
next to the ratio of their op counts: a linear compile gives 10x ops -> ~10x time
(goal: <= 12x). ``--c`` adds a first call with the C backend on a cold kernel cache, whose
time includes gcc. Best of ``--repeat`` runs per size (the machine is shared and noisy).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time

os.environ.setdefault("EXECMODE_CACHE_DIR", tempfile.mkdtemp(prefix="execmode-bench-cache-"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import execmode as em  # noqa: E402


def make_chain(n_ops: int):
    """``x * 1.0001 + 0.5 ...``: n_ops elementwise ops, one fused kernel when optimized."""

    def chain(x):
        for k in range(n_ops):
            x = x * 1.0001 if k % 2 == 0 else x + 0.5
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


SHAPES = {"chain": (make_chain, (256,)), "wide": (make_wide, (4, 4))}


def measure(n_ops: int, backend: str, shape: str = "chain") -> dict:
    """Seconds per stage for one fresh jit of an n_ops graph of ``shape``."""
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
    passes = {r.name: r.wall_ns / 1e9 for r in lowered.record.results}
    out = {"trace": t1 - t0, **passes, "verify+record": (t2 - t1) - sum(passes.values()),
           "codegen+plan": t3 - t2}
    out["total"] = t3 - t0
    return out


def best_of(n_ops: int, backend: str, repeat: int, shape: str) -> dict:
    runs = [measure(n_ops, backend, shape) for _ in range(repeat)]
    return min(runs, key=lambda r: r["total"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--c", action="store_true", help="also time the C backend (gcc included)")
    ap.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["chain", "wide"])
    args = ap.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, {os.cpu_count()} CPUs")
    backends = ["numpy"] + (["c"] if args.c else [])
    for shape in args.shapes:
        for backend in backends:
            _table(shape, backend, args)
    print("\ngoal: 10x ops -> <= 12x time (a linear compile)")


def _table(shape: str, backend: str, args) -> None:
    """One table: per-stage ms for each size of ``shape`` with ``backend``."""
    measure(args.sizes[0], backend, shape)  # warm-up: imports and first-use caches
    rows = [(n, best_of(n, backend, args.repeat if backend == "numpy" else 1, shape))
            for n in args.sizes]
    stages = list(rows[0][1])
    print(f"\n{shape}, backend={backend} (ms; ratio = time / previous size's time)")
    print("| ops | " + " | ".join(stages) + " | ops ratio | time ratio |")
    print("|---" * (len(stages) + 3) + "|")
    prev = None
    for n, r in rows:
        cells = " | ".join(f"{r[s] * 1e3:.1f}" for s in stages)
        ratios = ("-", "-") if prev is None else (
            f"{n / prev[0]:.0f}x", f"{r['total'] / prev[1]['total']:.1f}x")
        print(f"| {n} | {cells} | {ratios[0]} | {ratios[1]} |")
        prev = (n, r)


if __name__ == "__main__":
    main()
