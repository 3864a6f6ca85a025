"""profilers/measure.py's goal verdicts, self-timed rounds and round hooks: the rules on
fixed samples (nothing here is timed; the numbers live in benchmarks/)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from execmode.profilers import measure as measure_module
from execmode.profilers.measure import (
    Spread,
    decide,
    judge_ratio,
    judge_value,
    measure,
    paired,
    run_interleaved,
)

STEADY = Spread.of([100, 101, 99, 100, 102])
TWICE = Spread.of([200, 202, 198, 200, 204])
NOISY = Spread.of([100, 300, 90, 250, 120])


def test_a_goal_is_judged_on_the_medians():
    met = judge_ratio(STEADY, TWICE, 0.6)
    assert (met.state, met.met) == ("met", True) and abs(met.value - 0.5) < 1e-9
    assert judge_ratio(STEADY, TWICE, 0.4).state == "missed"
    assert str(judge_ratio(STEADY, TWICE, 0.4)) == "missed"


def test_overlapping_spreads_still_meet_a_threshold():
    # decide says the two cannot be told apart; a goal of <= 1.2x is still met.
    assert decide(STEADY, STEADY).kind == "overlap"
    assert judge_ratio(STEADY, STEADY, 1.2).state == "met"


def test_disagreeing_rounds_or_too_few_are_undecided():
    verdict = judge_ratio(NOISY, TWICE, 10.0, a_name="eager")
    assert verdict.state == "undecided" and verdict.value is None
    assert "eager's rounds disagree" in verdict.reason
    few = judge_value(Spread.of([1, 1, 1]), 2)
    assert few.state == "undecided" and "3 rounds" in few.reason
    assert judge_value(STEADY, 100).state == "met"   # the median is 100
    assert judge_value(STEADY, 99.5).state == "missed"


def test_verdict_cells_name_the_reason_in_a_word():
    assert decide(STEADY, TWICE).cell() == "0.50x"
    assert decide(NOISY, TWICE).cell() == "undecided (rounds disagree)"
    assert decide(Spread.of([1, 2]), Spread.of([3, 4])).cell() == "undecided (few rounds)"


def test_run_interleaved_rotates_the_order_each_round():
    order = []
    results = run_interleaved({name: (lambda name=name: order.append(name) or len(order))
                               for name in "abc"}, rounds=4)
    assert order == list("abc" "bca" "cab" "abc")
    assert results["a"] == [1, 6, 8, 10]


def test_measure_runs_the_hooks_around_each_round():
    events = []
    spreads = measure({"x": lambda: events.append("call x"), "y": lambda: events.append("call y")},
                      rounds=2, calls=1, warmup=1, round_s=0,
                      before_round=lambda name: events.append(f"before {name}"),
                      sync=lambda: events.append("sync"))
    # warm-up: warmup + 1 calls (the first, which may compile, does not size the rounds)
    assert events == ["before x", "call x", "sync", "call x", "sync",
                      "before y", "call y", "sync", "call y", "sync",
                      "before x", "call x", "sync", "before y", "call y", "sync",   # round 0
                      "before y", "call y", "sync", "before x", "call x", "sync"]   # round 1
    assert spreads["x"].rounds == 2


def test_rounds_on_a_machine_busier_than_its_cpus_give_no_ratio():
    crowded = Spread.of(STEADY.samples, 1, waited=[0.45] * 5)  # steady, on half a core
    calm = Spread.of(TWICE.samples, 1, waited=[0.0] * 5)
    verdict = decide(crowded, calm, a_name="eager")
    assert verdict.ratio is None and verdict.kind == "busy machine"
    assert "eager's rounds" in verdict.reason and "waited for 45%" in verdict.reason
    assert judge_ratio(crowded, calm, 10.0).state == "undecided"
    assert decide(Spread.of(STEADY.samples, 1, waited=[0.02] * 5), calm).decided


def test_without_the_schedulers_account_the_ready_tasks_decide():
    from execmode.profilers.measure import machine_cpus

    cpus = machine_cpus()
    assert decide(Spread.of(STEADY.samples, 1, [cpus + 2] * 5), TWICE).kind == "busy machine"
    assert decide(Spread.of(STEADY.samples, 1, [cpus] * 5), TWICE).decided  # full, not over


def test_measure_reads_how_busy_the_machine_was_after_each_round():
    spreads = measure({"a": lambda: sum(range(2000))}, rounds=5, calls=10)
    runnable, waited = spreads["a"].runnable, spreads["a"].waited
    assert len(runnable) in (0, 5) and all(n >= 1 for n in runnable)  # this process runs
    assert len(waited) in (0, 5) and all(0 <= w <= 64 for w in waited)  # shares of a round


def test_only_waits_behind_other_processes_make_a_machine_busy():
    from execmode.profilers.measure import others_share, usable_cpus

    cpus, round_ns = usable_cpus(), 1_000_000
    # our threads kept every CPU we may use busy: their waits were behind each other
    assert others_share((0, 0), (cpus * round_ns, 3 * round_ns), round_ns) == 0.0
    # one thread ran a quarter of the round on one CPU and waited the rest: someone else
    assert others_share((0, 0), (round_ns // 4, 3 * round_ns // 4), round_ns) \
        == pytest.approx(min(0.75, 1 - 0.25 / cpus))


PINNED = """
import os, threading, time
from execmode.profilers.measure import measure, threads_cpu_ns
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one CPU, for both threads
stop = []
def spin():
    while not stop:
        pass
threading.Thread(target=spin, daemon=True).start()
before, t0 = threads_cpu_ns(), time.perf_counter_ns()
spreads = measure({"busy": lambda: sum(range(20000))}, rounds=5, round_s=0.02)
raw = (threads_cpu_ns()[1] - before[1]) / (time.perf_counter_ns() - t0)
stop.append(1)
print(raw, sorted(spreads["busy"].waited)[2])
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or not os.path.exists("/proc/self/task"),
                    reason="needs Linux's CPU affinity and per-thread scheduler statistics")
def test_a_program_whose_own_threads_share_a_pinned_cpu_is_not_a_busy_machine():
    # Another process that lands on the pinned CPU (the suite's other worker, say) really
    # is one to wait behind, and only adds to "others": the classification holds if one of
    # a few tries shows the waits mostly behind the program's own threads.
    tries = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", PINNED], capture_output=True,
                              text=True, timeout=120, check=True)
        raw, others = map(float, done.stdout.split())
        tries.append((raw, others))
        assert raw >= 0.3  # the two threads queued for the one CPU
        if others <= raw / 2:  # but mostly behind each other, not behind another process
            return
    pytest.fail(f"waits behind other processes in every try (raw, others): {tries}")


def test_paired_runs_each_pair_side_by_side_in_alternating_order(monkeypatch):
    """measure.paired: the two runs of a pair are adjacent, which goes first alternates
    round by round, the pairs' order rotates, before_round precedes every run, and each
    round gives one difference (second - first), on a clock the runs themselves move."""
    clock = [0]
    monkeypatch.setattr(measure_module, "_perf_ns", lambda: clock[0])
    ran = []

    def run(name, ns):
        def fn():
            ran.append(name)
            clock[0] += ns
        return fn

    candidates = {"a plain": run("a plain", 100), "a recorded": run("a recorded", 130),
                  "b plain": run("b plain", 50), "b recorded": run("b recorded", 45)}
    before = []
    spreads = paired(candidates, {"a": ("a plain", "a recorded"),
                                  "b": ("b plain", "b recorded")},
                     rounds=4, before_round=before.append)
    assert before == ran and len(ran) == 16
    pairs = [tuple(ran[i:i + 2]) for i in range(0, 16, 2)]
    assert pairs == [("a recorded", "a plain"), ("b recorded", "b plain"),
                     ("b plain", "b recorded"), ("a plain", "a recorded"),
                     ("a recorded", "a plain"), ("b recorded", "b plain"),
                     ("b plain", "b recorded"), ("a plain", "a recorded")]
    assert spreads["a"].samples == (30.0,) * 4 and spreads["b"].samples == (-5.0,) * 4
    assert spreads["a"].median == 30 and spreads["b"].median == -5
