"""What NumPy-exact floating point costs the fused C kernels: FMA contraction on and off.

    python benchmarks/bench_fp_contract.py            # 3 interleaved rounds
    python benchmarks/bench_fp_contract.py --rounds 5

Kernels compile with ``-ffp-contract=off`` (codegen/toolchain.py): GCC must not fuse a
multiply and an add of the user's program, or ``x - exp(x)`` at inf gives inf where NumPy
gives nan. The float32 approximations' Horner steps use an explicit FMA instead
(``em_horner_f32`` in em_dialect_c.h), where the CPU has one. Three builds, each in its own
process (the toolchain's flags are fixed per process), rounds interleaved:

* ``exact``: what execmode ships (contraction off, FMA in the polynomials);
* ``no-fma``: contraction off and ``-mno-fma`` (the polynomials as two roundings: the
  kernels as they were before em_horner_f32);
* ``contract``: GCC's default ``-ffp-contract=fast`` (fast, but not NumPy's answers).

Each row is a jitted float32 function of 2^20 elements, ms per call (best of 7x20 calls in
a round, best round), and the ratio to ``exact``.
"""

from __future__ import annotations

import argparse
import ast
import os
import platform
import subprocess
import sys
import tempfile

BUILDS = ("exact", "no-fma", "contract")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(build: str) -> dict:
    """Run in a child: patch the flags for ``build``, time each function."""
    import timeit

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
        times[fn.__name__] = min(timeit.repeat(lambda f=jitted: f(x), number=20, repeat=7)) / 20
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=BUILDS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(repr(measure(args.child)))
        return
    env = dict(os.environ, EXECMODE_CACHE_DIR=tempfile.mkdtemp(prefix="execmode-fpc-"),
               OPENBLAS_NUM_THREADS="1")
    best: dict = {}
    for _ in range(args.rounds):
        for build in BUILDS:
            out = subprocess.run([sys.executable, __file__, "--child", build], env=env,
                                 cwd=ROOT, capture_output=True, text=True, check=True)
            # The child's own output: a dict of floats, read as a literal (never eval'd).
            for name, seconds in ast.literal_eval(out.stdout.strip()).items():
                key = (name, build)
                best[key] = min(best.get(key, float("inf")), seconds)
    print(f"machine: {platform.processor() or platform.machine()}, load "
          f"{os.getloadavg()[0]:.1f}, best of {args.rounds} interleaved rounds, ms per call")
    print("| function | " + " | ".join(BUILDS) + " | no-fma / exact | contract / exact |")
    print("|---|" + "---|" * (len(BUILDS) + 2))
    for name in dict.fromkeys(n for n, _ in best):
        ms = [best[(name, b)] * 1e3 for b in BUILDS]
        print(f"| {name} | " + " | ".join(f"{t:.3f}" for t in ms)
              + f" | {ms[1] / ms[0]:.2f}x | {ms[2] / ms[0]:.2f}x |")


if __name__ == "__main__":
    main()
