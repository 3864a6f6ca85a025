"""A jitted function of one op against the same op eagerly: the fixed cost of a jitted call.

    python benchmarks/bench_single_op.py
    python benchmarks/bench_single_op.py --quick

Each row times ``f(*args)`` eagerly and through ``em.jit(f)`` (after its first call) in
interleaved rounds (benchmarks/timing.py), and prints the median ns per call with its
interquartile range, jit / eager, and the goal's verdict on the medians (goal: <= 1.2x).
Small tensors, so that the per-call overhead is what is measured.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import timing  # noqa: E402

import execmode as em  # noqa: E402

GOAL = 1.2


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    timing.add_arguments(parser)
    args = parser.parse_args(argv)
    rounds = timing.rounds_of(args)
    report = timing.Report(args)
    timing.steady_state_operators()
    rows = []
    for name, fn, fn_args in cases():
        jitted = em.jit(fn)
        np.testing.assert_allclose(jitted(*fn_args).numpy(), fn(*fn_args).numpy(), rtol=1e-6)
        spreads = timing.measure({"eager": lambda fn=fn, a=fn_args: fn(*a),
                                  "jit": lambda jitted=jitted, a=fn_args: jitted(*a)},
                                 rounds=rounds, round_s=0.003 if args.quick else 0.05)
        eager, jit = spreads["eager"], spreads["jit"]
        rows.append([name, timing.time_cell(eager), timing.time_cell(jit),
                     timing.ratio_cell(jit, eager, "jit", "eager"),
                     timing.goal_cell(timing.judge_ratio(jit, eager, GOAL, a_name="jit",
                                                         b_name="eager"))])
    report.table(["function", "eager", "jit", "jit / eager", f"goal <= {GOAL}x"], rows,
                 title=f"Per call: median (interquartile range) of {rounds} interleaved "
                       "rounds")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
