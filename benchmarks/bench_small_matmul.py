"""Small matmuls under jit: the kernels' generated loops against the BLAS call, per call.

    python benchmarks/bench_small_matmul.py            # one thread (pinned to a CPU)
    python benchmarks/bench_small_matmul.py --quick    # fewer calls

Each row jits ``(x @ b) * 2.0`` in this process: as matmul_policy.py and matmul_overflow.py
decide (the "policy" column says which: the kernel's generated loops, NumPy's BLAS call
made from the kernel with the epilogue after it, or the BLAS call outside any kernel);
with every matmul left outside a kernel (the BLAS call NumPy makes, from the plan or the
program); and, where the policy does not take them, with the generated loops forced (for a
B that arrives transposed, ``x @ w.T``, the dot-product loops). The loops include their
overflow bound (one pass over each operand). Interleaved rounds (benchmarks/timing.py),
median and interquartile range. This is what the policy's thresholds rest on;
docs/performance.md keeps the latest table.
"""

from __future__ import annotations

import argparse
import os
import sys

if __name__ == "__main__":
    usable = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, usable[-1:])
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import timing  # noqa: E402

import execmode as em  # noqa: E402
from execmode.codegen import matmul_overflow, matmul_policy  # noqa: E402

# (m, k, n, B transposed): (m x k) @ (k x n)
SHAPES = [
    (8, 8, 8, False), (16, 16, 16, False), (8, 32, 32, False), (32, 16, 32, False),
    (4, 64, 64, False), (2, 128, 64, False), (1, 64, 64, False), (1, 256, 128, False),
    (16, 16, 16, True), (1, 64, 64, True), (1, 128, 2, True), (1, 256, 32, True),
    (1, 256, 128, True), (4, 64, 64, True),
]
NEVER = 1 << 62


def _jitted(m: int, k: int, n: int, transposed: bool, rule, blas_from: int):
    """``(x @ b) * 2.0`` jitted and run once under ``rule`` (matmul_policy.inline_on_cpu's
    stand-in while it compiles) and ``blas_from`` (matmul_overflow.BLAS_FROM_MACS's), with
    its operands."""
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    x = em.tensor(rng.standard_normal((m, k)).astype(np.float32))
    if transposed:
        w = em.tensor(rng.standard_normal((n, k)).astype(np.float32))
        fn = em.jit(lambda x, w: (x @ w.T) * 2.0)
    else:
        w = em.tensor(rng.standard_normal((k, n)).astype(np.float32))
        fn = em.jit(lambda x, w: (x @ w) * 2.0)
    policy, threshold = matmul_policy.inline_on_cpu, matmul_overflow.BLAS_FROM_MACS
    matmul_policy.inline_on_cpu, matmul_overflow.BLAS_FROM_MACS = rule, blas_from
    try:
        fn(x, w)
    finally:
        matmul_policy.inline_on_cpu, matmul_overflow.BLAS_FROM_MACS = policy, threshold
    return lambda: fn(x, w)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    timing.add_arguments(parser)
    args = parser.parse_args(argv)
    rounds = timing.rounds_of(args)
    report = timing.Report(args)
    policy, blas_from = matmul_policy.inline_on_cpu, matmul_overflow.BLAS_FROM_MACS

    def never(*a, **kw):
        return False

    def ignoring_layout(m, n, k, dtype, b_strides=None):
        return policy(m, n, k, dtype)

    rows = []
    for m, k, n, transposed in SHAPES:
        generated = policy(m, n, k, np.float32, (1, k) if transposed else None)
        in_kernel = generated and matmul_overflow.blas_always(m, n, k)
        loops_possible = generated or (transposed and ignoring_layout(m, n, k, np.float32))
        runs = {"policy": _jitted(m, k, n, transposed, policy, blas_from),
                "outside": _jitted(m, k, n, transposed, never, blas_from)}
        if loops_possible and (in_kernel or not generated):
            runs["loops"] = _jitted(m, k, n, transposed, ignoring_layout, NEVER)
        calls = 300 if args.quick else 3000
        spreads = timing.measure(runs, rounds=rounds, calls=calls)
        loops = spreads["policy"] if generated and not in_kernel else spreads.get("loops")
        b = f"({n}x{k})^T" if transposed else f"{k}x{n}"
        chosen = "BLAS in the kernel" if in_kernel else "loops" if generated else "BLAS"
        rows.append([f"{m}x{k} @ {b}", chosen, timing.time_cell(spreads["policy"]),
                     timing.time_cell(loops), timing.time_cell(spreads["outside"]),
                     timing.ratio_cell(spreads["policy"], loops, "policy", "loops")
                     if loops is not None and loops is not spreads["policy"] else "-"])
    report.table(["(x @ b) * 2.0", "policy", "policy's step", "generated loops",
                  "BLAS outside a kernel", "policy / loops"],
                 rows, title=f"One thread, per jitted call: median (interquartile range) of "
                             f"{rounds} interleaved rounds")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
