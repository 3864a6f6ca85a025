"""The programs' own float32 matrix product (codegen/em_gemm.h) against NumPy's BLAS, one
product at a time, in one run: bits and time per call, and what gemm_kernel.choice picks.

    python benchmarks/bench_gemm.py            # one thread (the process is pinned to a CPU)
    python benchmarks/bench_gemm.py --quick    # fewer calls

Each row: the product's layout (x @ w.T is "nt", g.T @ x "tn", g @ w "nn"), whether the
kernel's bits equal NumPy's on random operands (the check the programs rely on), the median
and interquartile range of interleaved rounds for each (benchmarks/timing.py), their ratio
(< 1: the kernel is faster; undecided when the rounds cannot carry one), and the choice a
program makes for that shape (None: the BLAS). docs/performance.md keeps the latest table.
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

from execmode.codegen import gemm_kernel  # noqa: E402
from execmode.matmul_bits import operands  # noqa: E402

# (name, m, n, p, form): (m x n) @ (n x p)
ROWS = [
    ("mlp_forward w=256 layer", 64, 256, 256, "nt"),
    ("train step layer 1", 64, 512, 256, "nt"),
    ("train step layer 2", 64, 256, 128, "nt"),
    ("mlp_forward w=1024 layer", 64, 1024, 1024, "nt"),
    ("mlp_forward w=2048 layer", 64, 2048, 2048, "nt"),
    ("weight gradient g.T @ x", 256, 64, 512, "tn"),
    ("input gradient g @ w", 64, 128, 256, "nn"),
    ("relu_chain 100x100x100", 100, 100, 100, "nn"),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    timing.add_arguments(parser)
    args = parser.parse_args(argv)
    rounds = timing.rounds_of(args)
    report = timing.Report(args)
    if gemm_kernel.probe() is None:
        report.note("em_gemm.h cannot run here (no AVX-512F or no -march=native compiler): "
                    "programs keep the BLAS.")
        report.finish()
        return 0
    rows = []
    for name, m, n, p, form in ROWS:
        a, b = operands("<f4", m, n, p, form == "tn", form == "nt")
        want = a @ b
        decided = gemm_kernel._decided(m, n, p, form, True)
        q = decided[1] if decided else 448
        out = np.empty((m, p), np.float32)
        mine = gemm_kernel.runner(form, a, b, out, q)
        mine()
        same = bool(np.array_equal(out, want))
        blas_out = np.empty((m, p), np.float32)

        def theirs(a=a, b=b, blas_out=blas_out):
            np.matmul(a, b, out=blas_out)

        calls = max(3, int((3e7 if args.quick else 3e8) / (m * n * p)))
        spreads = timing.measure({"em_gemm": mine, "numpy": theirs}, rounds=rounds,
                                 calls=calls)
        chosen = gemm_kernel.choice(np.float32, m, n, p, form == "tn", form == "nt")
        rows.append([f"{name} ({m}x{n} @ {n}x{p})", form, "yes" if same else "no",
                     timing.time_cell(spreads["em_gemm"]), timing.time_cell(spreads["numpy"]),
                     timing.ratio_cell(spreads["em_gemm"], spreads["numpy"], "em_gemm",
                                       "NumPy"), str(chosen)])
    report.table(["product", "layout", "bits = NumPy's", "em_gemm", "NumPy", "ratio",
                  "program's choice"], rows,
                 title=f"One thread, per call: median (interquartile range) of {rounds} "
                       "interleaved rounds")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
