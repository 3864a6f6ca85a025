"""Helpers shared by the examples: quick mode, and timing by execmode's own protocol.

``EXECMODE_QUICK=1`` shrinks every example to a few seconds (the tests run them that way).

Every time an example prints is measured by ``execmode.profilers.measure``, the protocol
that em.compare and the benchmarks use: warm-up calls, interleaved rounds in a rotated
order, the median of the rounds with their interquartile range (IQR), and a ratio only
when ``decide`` finds the rounds can carry one. This module only picks the examples'
round sizes and adds :func:`single_calls`, for what the first call changes.
"""

from __future__ import annotations

import gc
import os
import time

from execmode.profilers.measure import Spread, measure, run_interleaved, runnable_tasks

QUICK = os.environ.get("EXECMODE_QUICK", "") not in ("", "0")


def size(full, quick):
    return quick if QUICK else full


# Quick mode keeps the protocol's minimum of 5 rounds (a verdict needs them) and makes
# each round shorter: fewer calls per round, never fewer rounds.
ROUNDS = size(7, 5)
ROUND_S = size(0.05, 0.01)


def compare_times(candidates: dict, *, calls: int | None = None) -> dict:
    """``{name: Spread}``: the per-call time of each ``candidates[name]()``, the candidates
    measured in the same interleaved rounds (``calls`` per round, or as many as fill about
    ``ROUND_S``). Call a jitted function once before: its first call (trace, compile) would
    otherwise be one of the warm-up calls that size the rounds."""
    return measure(candidates, rounds=ROUNDS, round_s=ROUND_S, calls=calls)


def single_calls(candidates: dict) -> dict:
    """``{name: Spread}`` of one call per round, for calls that change what they measure:
    each round, ``candidates[name]()`` prepares a callable (not timed; a new em.jit
    function, say) and its one call is timed. Rounds are interleaved and rotated as
    ``measure`` does, and the tasks ready to run are read after each call, as ``measure``
    does too, so that ``decide`` sees a busy machine."""

    def one_round(prepare):
        def timed():
            call = prepare()
            gc.collect()  # every round starts with the same garbage: none
            t0 = time.perf_counter_ns()
            call()
            return time.perf_counter_ns() - t0, runnable_tasks()
        return timed

    rounds = run_interleaved({name: one_round(p) for name, p in candidates.items()},
                             rounds=ROUNDS)
    return {name: Spread.of([ns for ns, _ in results], 1,
                            [ready for _, ready in results if ready is not None])
            for name, results in rounds.items()}


def per_item(spread: Spread, items: int) -> Spread:
    """The same rounds, per item of a batch of ``items``."""
    return Spread.of([s / items for s in spread.samples], spread.calls, spread.runnable)
