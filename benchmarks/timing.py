"""What the benchmark scripts share: the best-of-rounds timer, time formatting and the
memory-copy measurement their bandwidth floors divide by. Imported as ``timing`` (a script
run as ``python benchmarks/X.py`` has this folder first on ``sys.path``)."""

from __future__ import annotations

import time

import numpy as np

N_LARGE = 16 * 1024 * 1024


def best_per_call(fn, calls: int, rounds: int = 3) -> float:
    """Seconds per call of ``fn()``: the best of ``rounds`` rounds of ``calls`` calls."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def fmt_time(seconds: float) -> str:
    if seconds >= 1e-1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def copy_seconds(n: int = N_LARGE) -> float:
    """Seconds to copy ``n`` float32 with one-thread ``np.copyto`` (one read, one write)."""
    src = np.random.default_rng(5).standard_normal(n, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    return best_per_call(lambda: np.copyto(dst, src), 5, rounds=3)
