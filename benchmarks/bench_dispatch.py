"""Per-op eager dispatch cost: raw NumPy vs execmode's operators vs execmode with a listener.

One run, side by side, rounds interleaved, for an add and an exp of 1 element and of
100x100 (``a + b`` against ``np.add``, ``em.exp`` against ``np.exp``), printed as ns per
op and ratios to NumPy:

* ``Python op``: the Python operator (dispatch.make_operator) or unary function
  (dispatch.make_unary_function), what every call took before the C versions and what a
  script gets until they are installed;
* ``C op``: the C operator or function (codegen/eager_operators.py), installed after
  ``dispatch.HOT_CALLS`` plain calls; it calls NumPy's own loop;
* ``+listener``: what a listener that counts events adds (the C side builds an OpEvent).

Targets (issue 16): the 1-element add <= 1.5x NumPy; a null listener <= +0.3 us.

    python benchmarks/bench_dispatch.py
"""

from __future__ import annotations

import platform
import timeit

import numpy as np

import execmode as em
from execmode import instrument
from execmode._tensor import Tensor
from execmode.codegen import eager_operators


class _CountingListener:
    """The cheapest real listener: it receives every event and counts it."""

    def __init__(self):
        self.count = 0

    def on_op(self, event, output):
        self.count += 1


def _operators(native: bool) -> None:
    if eager_operators.install(Tensor, native=native) != native:
        raise SystemExit(f"no C operators: {eager_operators.extension_status()['reason']}")


def measure(op: str, shape, number: int, rounds: int = 7) -> dict:
    a = np.ones(shape, np.float32)
    b = np.ones(shape, np.float32)
    ta, tb = em.tensor(a), em.tensor(b)
    exp = em.exp
    if op == "add":
        raw, ours = (lambda: np.add(a, b)), (lambda: ta + tb)
    else:
        raw, ours = (lambda: np.exp(a)), (lambda: exp(ta))
    listener = _CountingListener()
    best = dict.fromkeys(("empty", "raw", "python", "c", "listening"), float("inf"))

    def run(key, fn):
        best[key] = min(best[key], timeit.timeit(fn, number=number) / number * 1e9)

    for _ in range(rounds):  # interleaved: a load change hits every column alike
        run("empty", lambda: None)  # the timing loop's own cost, subtracted
        run("raw", raw)
        _operators(native=False)
        run("python", ours)
        _operators(native=True)
        run("c", ours)
        with instrument.listening(listener):
            run("listening", ours)
    return {key: value - best["empty"] for key, value in best.items() if key != "empty"}


def main() -> None:
    print(f"machine: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, NumPy {np.__version__}")
    print(f"{'case':<16}{'NumPy ns':>10}{'Python op':>11}{'ratio':>7}{'C op':>8}{'ratio':>7}"
          f"{'+listener':>11}")
    for name, op, shape, number in (("1-element add", "add", (1,), 100_000),
                                    ("100x100 add", "add", (100, 100), 20_000),
                                    ("1-element exp", "exp", (1,), 100_000),
                                    ("100x100 exp", "exp", (100, 100), 5_000)):
        r = measure(op, shape, number)
        print(f"{name:<16}{r['raw']:>10.0f}{r['python']:>11.0f}{r['python'] / r['raw']:>6.2f}x"
              f"{r['c']:>8.0f}{r['c'] / r['raw']:>6.2f}x{r['listening'] - r['c']:>8.0f} ns")
    print("targets (issue 16): the 1-element add <= 1.5x NumPy; a null listener <= +300 ns")


if __name__ == "__main__":
    main()
