"""Per-op eager dispatch cost: raw NumPy vs execmode (no listener) vs execmode (a listener).

One run, side by side, for a 1-element add and a 100x100 add, printed as ns per op and
ratios. Targets (issue 2): no listener <= 2.0x raw NumPy on the 1-element add; a listener
adds <= 1 us per op.

    python benchmarks/bench_dispatch.py
"""

from __future__ import annotations

import platform
import timeit

import numpy as np

import execmode as em
from execmode import instrument


class _CountingListener:
    """The cheapest real listener: it receives every event and counts it."""

    def __init__(self):
        self.count = 0

    def on_op(self, event, output):
        self.count += 1


def _ns_per_call(fn, number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=7)) / number * 1e9


def measure(shape, number: int) -> dict:
    a = np.ones(shape, np.float32)
    b = np.ones(shape, np.float32)
    ta, tb = em.tensor(a), em.tensor(b)
    empty = _ns_per_call(lambda: None, number)  # the timing loop's own cost, subtracted
    raw = _ns_per_call(lambda: np.add(a, b), number) - empty
    plain = _ns_per_call(lambda: ta + tb, number) - empty
    listener = _CountingListener()
    with instrument.listening(listener):
        listening = _ns_per_call(lambda: ta + tb, number) - empty
    return {"raw": raw, "plain": plain, "listening": listening}


def main() -> None:
    print(f"machine: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, NumPy {np.__version__}")
    print(f"{'case':<16}{'NumPy ns':>10}{'execmode ns':>13}{'ratio':>8}"
          f"{'+listener ns':>14}{'listener cost':>15}")
    for name, shape, number in (("1-element add", (1,), 200_000),
                                ("100x100 add", (100, 100), 50_000)):
        r = measure(shape, number)
        ratio = r["plain"] / r["raw"]
        cost = r["listening"] - r["plain"]
        print(f"{name:<16}{r['raw']:>10.0f}{r['plain']:>13.0f}{ratio:>7.2f}x"
              f"{r['listening']:>14.0f}{cost:>12.0f} ns")
    print("targets: no listener <= 2.0x NumPy on the 1-element add; listener cost <= 1000 ns")


if __name__ == "__main__":
    main()
