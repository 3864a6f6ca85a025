"""Helpers shared by the examples: quick mode and timing.

``EXECMODE_QUICK=1`` shrinks every example to a few seconds (the tests run them that way).
"""

from __future__ import annotations

import os
import time

QUICK = os.environ.get("EXECMODE_QUICK", "") not in ("", "0")


def size(full: int, quick: int) -> int:
    return quick if QUICK else full


def timeit(fn, repeat: int = 1, rounds: int = 5) -> float:
    """Seconds per call of fn(): the median of ``rounds`` rounds of ``repeat`` calls. The
    median, not the best: a best round hides the contention a reader's own run meets
    (execmode.profilers.measure and the benchmarks take numbers the same way)."""
    per_call = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        per_call.append((time.perf_counter() - t0) / repeat)
    return _quantile(sorted(per_call), 0.5)


class Spread:
    """Repeated measurements of one ratio: min, median and the interquartile range (IQR),
    so a verdict can tell a real difference from the noise of a shared machine."""

    def __init__(self, samples):
        s = sorted(samples)
        self.samples = s
        self.min, self.median = s[0], _quantile(s, 0.5)
        self.q1, self.q3 = _quantile(s, 0.25), _quantile(s, 0.75)

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    def __str__(self) -> str:
        return (f"{self.median:.2f}x (min {self.min:.2f}, IQR {self.q1:.2f}-{self.q3:.2f}, "
                f"n={len(self.samples)})")


def _quantile(sorted_samples, q: float) -> float:
    """Linear interpolation between the closest ranks (NumPy's default)."""
    pos = q * (len(sorted_samples) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_samples) - 1)
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (pos - lo)


def ratios(fn_a, fn_b, calls: int, repeats: int, rounds: int = 3) -> Spread:
    """``repeats`` ratios of time(fn_a) / time(fn_b), each side the median of ``rounds``
    rounds of ``calls`` calls, measured back to back so that both sides of one ratio share
    the machine's mood. One warm-up call each first (caches, lazy imports)."""
    fn_a(), fn_b()
    samples = []
    for _ in range(repeats):
        a = timeit(fn_a, calls, rounds)
        b = timeit(fn_b, calls, rounds)
        samples.append(a / b)
    return Spread(samples)


def above(spread: Spread, threshold: float) -> bool | None:
    """True when the whole IQR lies above ``threshold``, False when it lies below, None when
    the threshold falls inside it: the spread does not allow a call."""
    if spread.q1 > threshold:
        return True
    if spread.q3 < threshold:
        return False
    return None
