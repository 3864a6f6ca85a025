"""A jitted function of one op against the same op eagerly: the fixed cost of a jitted call.

    python benchmarks/bench_single_op.py

Each row times ``f(*args)`` eagerly and through ``em.jit(f)`` (after its first call), best
of 9 interleaved rounds, and prints ns per call and jit / eager (goal: <= 1.2x). Small
tensors, so that the per-call overhead is what is measured.
"""

from __future__ import annotations

import os
import platform
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import execmode as em  # noqa: E402


def _ns_pair(first, second, number: int, rounds: int = 9) -> tuple:
    """ns per call of two callables, rounds interleaved (machine drift hits both alike),
    the best round of each."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for k, fn in enumerate((first, second)):
            best[k] = min(best[k], timeit.timeit(fn, number=number) / number * 1e9)
    return best[0], best[1]


def cases():
    one = em.tensor(np.ones(1, np.float32))
    other = em.tensor(np.ones(1, np.float32))
    small = em.tensor(np.ones((16, 16), np.float32))
    return [
        ("a + b, 1 element", lambda a, b: a + b, (one, other)),
        ("x + x (one tensor twice)", lambda a, b: a + b, (one, one)),
        ("x * 2.0, 16x16", lambda a: a * 2.0, (small,)),
        ("em.jit(em.exp), 16x16", em.exp, (small,)),
        ("em.sum, 16x16", lambda a: em.sum(a), (small,)),
    ]


def main() -> None:
    print(f"machine: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, NumPy {np.__version__}")
    print("| function | eager ns | jit ns | jit / eager |")
    print("|---|---|---|---|")
    for name, fn, args in cases():
        jitted = em.jit(fn)
        np.testing.assert_allclose(jitted(*args).numpy(), fn(*args).numpy(), rtol=1e-6)
        eager, jit = _ns_pair(lambda fn=fn, args=args: fn(*args),
                              lambda jitted=jitted, args=args: jitted(*args), 10_000)
        print(f"| {name} | {eager:.0f} | {jit:.0f} | {jit / eager:.2f}x |")
    print("goal: jit / eager <= 1.2x")


if __name__ == "__main__":
    main()
