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
    """Seconds per call of fn(): the best of a few rounds of ``repeat`` calls (the best,
    because other processes on a shared machine only ever add time)."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - t0) / repeat)
    return best
