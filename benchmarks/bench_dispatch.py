"""Per-op eager dispatch cost: raw NumPy vs execmode's operators vs execmode with a listener.

    python benchmarks/bench_dispatch.py
    python benchmarks/bench_dispatch.py --quick

For an add and an exp of 1 element and of 100x100 (``a + b`` against ``np.add``,
``em.exp`` against ``np.exp``), in interleaved rounds (benchmarks/timing.py), ns per op
(median and interquartile range) and ratios to NumPy:

* ``Python op``: the Python operator (dispatch.make_operator) or unary function
  (dispatch.make_unary_function), what every call took before the C versions and what a
  script gets until they are installed;
* ``C op``: the C operator or function (codegen/eager_operators.py), installed after
  ``dispatch.HOT_CALLS`` plain calls; it calls NumPy's own loop;
* ``+listener``: what a listener that counts events adds to the C op (the C side builds an
  OpEvent), round by round.

The timing loop's own cost (an empty lambda, in the same rounds) is taken off every
column round by round. Targets (issue 16): the 1-element add <= 1.5x NumPy; a null
listener <= +0.3 us; both judged on the median.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import timing  # noqa: E402

import execmode as em  # noqa: E402
from execmode import instrument  # noqa: E402
from execmode._tensor import Tensor  # noqa: E402
from execmode.codegen import eager_operators  # noqa: E402

ADD_GOAL = 1.5          # the 1-element add over np.add
LISTENER_GOAL_NS = 300  # what a null listener may add


class _CountingListener:
    """The cheapest real listener: it receives every event and counts it."""

    def __init__(self):
        self.count = 0

    def on_op(self, event, output):
        self.count += 1


def _operators(native: bool) -> None:
    if eager_operators.install(Tensor, native=native) != native:
        raise SystemExit(f"no C operators: {eager_operators.extension_status()['reason']}")


class _Listening:
    """The listener is on only while its candidate's round runs."""

    def __init__(self):
        self.listener = _CountingListener()
        self.context = None

    def switch(self, name: str) -> None:
        if self.context is not None:
            self.context.__exit__(None, None, None)
            self.context = None
        _operators(native=name != "python")
        if name == "listening":
            self.context = instrument.listening(self.listener)
            self.context.__enter__()


def measure(op: str, shape, rounds: int, round_s: float) -> dict:
    a = np.ones(shape, np.float32)
    b = np.ones(shape, np.float32)
    ta, tb = em.tensor(a), em.tensor(b)
    exp = em.exp
    if op == "add":
        raw, ours = (lambda: np.add(a, b)), (lambda: ta + tb)
    else:
        raw, ours = (lambda: np.exp(a)), (lambda: exp(ta))
    listening = _Listening()
    try:
        spreads = timing.measure({"empty": lambda: None, "raw": raw, "python": ours, "c": ours,
                                  "listening": ours},
                                 rounds=rounds, round_s=round_s, before_round=listening.switch)
    finally:
        listening.switch("c")
    empty = spreads.pop("empty")
    return {key: timing.paired_difference(s, empty) for key, s in spreads.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    timing.add_arguments(parser)
    args = parser.parse_args(argv)
    rounds = timing.rounds_of(args)
    round_s = 0.003 if args.quick else 0.03
    report = timing.Report(args)
    rows = []
    for name, op, shape in (("1-element add", "add", (1,)), ("100x100 add", "add", (100, 100)),
                            ("1-element exp", "exp", (1,)), ("100x100 exp", "exp", (100, 100))):
        r = measure(op, shape, rounds, round_s)
        added = timing.paired_difference(r["listening"], r["c"])
        add_goal = listener_goal = "-"
        if name == "1-element add":
            add_goal = timing.goal_cell(timing.judge_ratio(r["c"], r["raw"], ADD_GOAL,
                                                           a_name="C op", b_name="NumPy"))
        listener_goal = timing.goal_cell(timing.judge_value(added, LISTENER_GOAL_NS,
                                                            name="+listener"))
        rows.append([name, timing.time_cell(r["raw"]), timing.time_cell(r["python"]),
                     timing.ratio_cell(r["python"], r["raw"], "Python op", "NumPy"),
                     timing.time_cell(r["c"]), timing.ratio_cell(r["c"], r["raw"], "C op",
                                                                 "NumPy"),
                     add_goal, timing.time_cell(added), listener_goal])
    report.table(["case", "NumPy", "Python op", "/ NumPy", "C op", "/ NumPy",
                  f"C op <= {ADD_GOAL}x NumPy", "+listener", f"+listener <= {LISTENER_GOAL_NS} ns"],
                 rows, title=f"Per op: median (interquartile range) of {rounds} interleaved "
                             "rounds, the timing loop's own cost taken off")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
