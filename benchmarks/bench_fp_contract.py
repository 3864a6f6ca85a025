"""What NumPy-exact floating point costs the fused C kernels: FMA contraction on and off.

    python benchmarks/bench_fp_contract.py            # 7 interleaved rounds
    python benchmarks/bench_fp_contract.py --quick    # 5 rounds, fewer calls

Kernels compile with ``-ffp-contract=off`` (codegen/toolchain.py): GCC must not fuse a
multiply and an add of the user's program, or ``x - exp(x)`` at inf gives inf where NumPy
gives nan. The float32 approximations' Horner steps use an explicit FMA instead
(``em_horner_f32`` in em_dialect_c.h), where the CPU has one. Three builds, each in its own
process (the toolchain's flags are fixed per process), rounds interleaved:

* ``exact``: what execmode ships (contraction off, FMA in the polynomials);
* ``no-fma``: contraction off and ``-mno-fma`` (the polynomials as two roundings: the
  kernels as they were before em_horner_f32);
* ``contract``: GCC's default ``-ffp-contract=fast`` (fast, but not NumPy's answers).

A round runs one child process per build, in an order rotated per round
(benchmarks/timing.py); each child times 20 calls (5 with --quick) of each function after a
warm-up call. Each row is a jitted float32 function of 2^20 elements: the median and
interquartile range of the rounds, per call, and the ratio to ``exact`` (undecided when
the rounds cannot carry one). One thread (``EXECMODE_NUM_THREADS=1``): the flags are
compared, not how a second core happened to be shared.
"""

from __future__ import annotations

import argparse
import ast
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import timing  # noqa: E402

BUILDS = ("exact", "no-fma", "contract")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUNCTIONS = ("gelu_tanh", "softplus_exp", "erf_log")


def child(build: str, calls: int) -> dict:
    """Run in a child: patch the flags for ``build``; seconds per call of each function."""
    import time

    import numpy as np

    import execmode.codegen.toolchain as toolchain

    flags = list(toolchain.BASE_FLAGS)
    if build == "no-fma":
        flags.append("-mno-fma")
    elif build == "contract":
        flags[flags.index("-ffp-contract=off")] = "-ffp-contract=fast"
    toolchain.BASE_FLAGS = tuple(flags)
    import execmode as em

    def gelu_tanh(x):
        return 0.5 * x * (1.0 + em.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    def softplus_exp(x):
        return em.log1p(em.exp(-em.abs(x))) + em.maximum(x, 0.0) - em.exp(x) * 0.01

    def erf_log(x):
        return em.erf(x) * em.log(em.abs(x) + 1.0)

    x = em.tensor(np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32))
    times = {}
    for fn in (gelu_tanh, softplus_exp, erf_log):
        jitted = em.jit(fn)
        jitted(x)
        t0 = time.perf_counter()
        for _ in range(calls):
            jitted(x)
        times[fn.__name__] = (time.perf_counter() - t0) / calls
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=BUILDS, help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=20, help=argparse.SUPPRESS)
    timing.add_arguments(parser)
    args = parser.parse_args()
    if args.child:
        print(repr(child(args.child, args.calls)))
        return
    rounds = timing.rounds_of(args)
    report = timing.Report(args)
    calls = 5 if args.quick else 20
    # One cache for every child: the builds' kernels differ in their flags, so each build
    # compiles once (in its first round) and later rounds load it.
    env = dict(os.environ, EXECMODE_CACHE_DIR=tempfile.mkdtemp(prefix="execmode-fpc-"),
               OPENBLAS_NUM_THREADS="1", EXECMODE_NUM_THREADS="1")

    def run_build(build):
        out = subprocess.run([sys.executable, __file__, "--child", build, "--calls",
                              str(calls)], env=env, cwd=ROOT, capture_output=True, text=True,
                             check=True)
        # The child's own output: a dict of floats, read as a literal (never eval'd).
        return ast.literal_eval(out.stdout.strip().splitlines()[-1])

    report.note("Each build in its own processes, one kernel thread and one BLAS thread "
                "(EXECMODE_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1).")
    found = timing.run_interleaved({build: lambda b=build: run_build(b) for build in BUILDS},
                                   rounds=rounds)
    rows = []
    for name in FUNCTIONS:
        spreads = {b: timing.Spread.of([r[name] * 1e9 for r in found[b]]) for b in BUILDS}
        rows.append([name, *(timing.time_cell(spreads[b]) for b in BUILDS),
                     timing.ratio_cell(spreads["no-fma"], spreads["exact"], "no-fma", "exact"),
                     timing.ratio_cell(spreads["contract"], spreads["exact"], "contract",
                                       "exact")])
    report.table(["function", *BUILDS, "no-fma / exact", "contract / exact"], rows,
                 title=f"2^20 float32 elements, per call: median (interquartile range) of "
                       f"{rounds} interleaved rounds")
    report.finish()


if __name__ == "__main__":
    main()
