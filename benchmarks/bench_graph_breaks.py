"""What a graph break costs per call: issue 35's row "a graph break, per call".

    python benchmarks/bench_graph_breaks.py
    python benchmarks/bench_graph_breaks.py --quick

A function of ``N`` iterations of ``x = em.tanh(x) * 0.5`` followed by
``if float(x.sum().item()) > 1e9:`` (a graph break at every iteration, on 64 float32
elements) is timed in interleaved rounds (benchmarks/timing.py), for N = 10 and 30:
eagerly; through ``em.jit`` on the full path (every call infers each op's type, verifies
each segment and hashes it to find its plan: ``EXECMODE_SEGMENT_MATCH=0``); and through
``em.jit`` as it runs by default, where a call that traces the segments the call before
traced reuses their types, nodes and plans, each op taking the tracer's short path
(graph/segment_match.py, graph/binding.py's ``_bind_as_before``). The cost of a break is the
jitted call's time minus the eager call's, over N, round by round (the rounds are
interleaved, so round r of each shared the machine's state): what a break adds on top of
the ops the function runs. Goal: <= 20 us per break, judged on the median. What a break
still costs on the default path is Python work per object (docs/graph-mode.md, "What a
break costs"): per traced op (two here, and the sum) its check, its line and its traced
tensor; per break the segment ended, its plan run and values handed out, and the next
segment's captured input (most of it); and the call's own bookkeeping, which the N breaks
share (so 10 breaks cost more each than 30).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import timing  # noqa: E402

import execmode as em  # noqa: E402
from execmode.graph import segment_match  # noqa: E402

GOAL_US = 20.0
BREAKS = (10, 30)


def with_breaks(n_breaks: int):
    """``n_breaks`` segments, each an op pair, cut by a Python ``if`` on a value."""
    def fn(x):
        for _ in range(n_breaks):
            x = em.tanh(x) * 0.5
            if float(x.sum().item()) > 1e9:
                x = x * 0.0
        return x
    return fn


def _path_for(name: str) -> None:
    """The full path for the "full" rounds, the default one otherwise."""
    segment_match.MATCHING = name != "full"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    timing.add_arguments(parser)
    args = parser.parse_args(argv)
    rounds = timing.rounds_of(args)
    report = timing.Report(args)
    timing.steady_state_operators()
    # Slower than eager, as measured here: the JitWarning that says so is not news.
    warnings.simplefilter("ignore", em.JitWarning)
    x = em.tensor(np.linspace(-2, 2, 64, dtype=np.float32))
    rows = []
    for n in BREAKS:
        fn = with_breaks(n)
        jitted = em.jit(fn)
        for _ in range(8):  # past the first trace and the break-cost sample (cache_policy)
            jitted(x)
        assert len(jitted.concrete_functions[0].breaks) == n
        np.testing.assert_allclose(jitted(x).numpy(), fn(x).numpy(), rtol=1e-5, atol=1e-7)
        spreads = timing.measure(
            {"eager": lambda fn=fn: fn(x), "full": lambda jitted=jitted: jitted(x),
             "matched": lambda jitted=jitted: jitted(x)},
            rounds=rounds, round_s=0.01 if args.quick else 0.2, before_round=_path_for)
        eager = spreads["eager"]
        row = [f"{n} breaks, 64 elements", timing.time_cell(eager)]
        for path in ("full", "matched"):
            per_break = timing.scaled(timing.paired_difference(spreads[path], eager), 1.0 / n)
            row += [timing.time_cell(spreads[path]), timing.time_cell(per_break)]
        verdict = timing.judge_value(per_break, GOAL_US * 1e-6, name="a break's cost")
        rows.append(row + [timing.goal_cell(verdict)])
        segment_match.MATCHING = True
    report.table(["function", "eager", "jit, full path", "per break", "jit", "per break",
                  f"goal <= {GOAL_US:g} us"], rows,
                 title=f"Per call: median (interquartile range) of {rounds} interleaved "
                       "rounds")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
