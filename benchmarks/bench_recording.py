"""What recording costs, and how fast a big session reads back.

    python benchmarks/bench_recording.py                  # both parts
    python benchmarks/bench_recording.py --ops 0          # part 1 only
    python benchmarks/bench_recording.py --quick          # fewer ops, 5 rounds

Part 1 (printed second), per eager op (tiny float32 tensors, so the overheads show): raw
NumPy, execmode with no listener, with a listener that does nothing (dispatch building the
event), and with the recorder writing to a session file (memory tracking on/off, value
summaries on, the op ring turned off), amortised with the writer's time to commit the
rows. Each row runs once per round, rows interleaved and rotated per round
(benchmarks/timing.py); printed are the medians and interquartile ranges of the rounds.
Besides wall time, each row's cost in CPU time: the process's (every thread, so the
session writer's inserts too) and the main thread's (what the script's own thread pays);
on a shared machine CPU time moves far less with other processes' load. What a row adds
is taken over "no listener" round by round. Goals (issue 16), on the medians: a null
listener <= +0.3 us per op, recording <= +1.0 us per op (wall).

Part 2 (run first, so peak RSS starts clean): record sessions of ``--ops`` real eager ops
(default 1M), reporting the write rate and how much the process grew (peak RSS, a
high-water mark: the largest of the rounds), then time opening the last one and the
aggregates a report needs (summary, top ops, top lines), and the HTML report.

Not a test: numbers on shared machines drift. Run it alone.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import timing  # noqa: E402
from execmode.profilers.exporters import export  # noqa: E402
from execmode.profilers.memory import MemoryTracker  # noqa: E402
from execmode.profilers.recorder import Recorder  # noqa: E402
from execmode.profilers.session import open_session  # noqa: E402

import execmode as em  # noqa: E402
from execmode import instrument  # noqa: E402

SIZE = 16


# A cost is (wall, process CPU, main thread CPU) in ns: CPU time is what the work took on
# the cores whatever else ran there; the process's includes the session writer's thread.
def _clock() -> tuple:
    return time.perf_counter_ns(), time.process_time_ns(), time.thread_time_ns()


def _since(start: tuple) -> tuple:
    return tuple(now - then for now, then in zip(_clock(), start))


def numpy_loop(rounds: int) -> tuple:
    a = np.ones(SIZE, np.float32)
    b = np.ones(SIZE, np.float32)
    start = _clock()
    for _ in range(rounds):
        np.add(a, b)
        np.exp(a)
    return _since(start)


def execmode_loop(rounds: int) -> tuple:
    a = em.ones(SIZE)
    b = em.ones(SIZE)
    exp = em.exp
    start = _clock()
    for _ in range(rounds):
        a + b
        exp(a)
    return _since(start)


class NullListener:
    def on_op(self, ev, output):
        pass


def per_op(loop, rounds: int) -> tuple:
    """ns per op of one timed run of ``loop`` (after a short warm-up)."""
    loop(rounds // 10)
    return tuple(ns / (2 * rounds) for ns in loop(rounds))


def recorded_per_op(rounds: int, tmp: Path, **options) -> tuple:
    """ns per op with a recorder on, including the writer's commit time."""
    name = "-".join(f"{k}={v}" for k, v in options.items())
    options.pop("ring", None)
    path = tmp / f"per-op-{name}.emsession"
    path.unlink(missing_ok=True)
    rec = Recorder(path, calibrate=False, **options)
    rec.start()
    execmode_loop(rounds // 10)
    rec.flush()
    start = _clock()
    execmode_loop(rounds)
    rec.flush()
    cost = _since(start)
    rec.close()
    return tuple(ns / (2 * rounds) for ns in cost)


def ring_off_per_op(rounds: int, tmp: Path) -> tuple:
    """The recorder with its op ring turned off: every op takes the Python path."""
    saved = os.environ.get("EXECMODE_NATIVE_RECORDER")
    os.environ["EXECMODE_NATIVE_RECORDER"] = "0"
    try:
        return recorded_per_op(rounds, tmp, memory=True, ring="off")
    finally:
        if saved is None:
            del os.environ["EXECMODE_NATIVE_RECORDER"]
        else:
            os.environ["EXECMODE_NATIVE_RECORDER"] = saved


def null_listener_per_op(rounds: int) -> tuple:
    with instrument.listening(NullListener()):
        return per_op(execmode_loop, rounds)


def tracker_per_op(rounds: int) -> tuple:
    with instrument.listening(MemoryTracker()):
        return per_op(execmode_loop, rounds)


NUMPY, NONE, NULL, RECORDED = ("raw NumPy (np.add, np.exp)", "execmode, no listener",
                               "execmode, null listener (dispatch builds events)",
                               "recorder -> session (default: memory on)")
ROWS = {
    NUMPY: lambda r, tmp: per_op(numpy_loop, r),
    NONE: lambda r, tmp: per_op(execmode_loop, r),
    NULL: lambda r, tmp: null_listener_per_op(r),
    "execmode, memory tracker only": lambda r, tmp: tracker_per_op(r),
    "recorder -> session, no memory tracking":
        lambda r, tmp: recorded_per_op(r, tmp, memory=False),
    RECORDED: lambda r, tmp: recorded_per_op(r, tmp),
    "recorder -> session, op ring off (Python path)": ring_off_per_op,
    "recorder -> session, value summaries on":
        lambda r, tmp: recorded_per_op(r, tmp, summaries=True),
}
CLOCKS = ("wall", "process CPU", "main thread CPU")
GOALS_NS = {NULL: 300, RECORDED: 1000}  # what a row may add per op, wall time


def part_one(report, ops_per_round: int, tmp: Path, rounds: int) -> None:
    found = timing.run_interleaved({label: (lambda fn=fn: fn(ops_per_round, tmp))
                                    for label, fn in ROWS.items()}, rounds=rounds)
    spreads = {label: [timing.column(samples, k) for k in range(len(CLOCKS))]
               for label, samples in found.items()}
    none = spreads[NONE]
    rows = []
    for label, (wall, cpu, main) in spreads.items():
        added = [timing.paired_difference(now, before) for now, before in zip((wall, cpu, main),
                                                                            none)]
        goal = "-"
        if label in GOALS_NS:
            goal = (f"<= +{GOALS_NS[label]} ns: " + timing.goal_cell(
                timing.judge_value(added[0], GOALS_NS[label], name=f"{label} (+wall)")))
        rows.append([label, timing.time_cell(wall),
                     *(timing.time_cell(a) if label not in (NONE, NUMPY) else "-"
                       for a in added),
                     timing.ratio_cell(wall, spreads[NUMPY][0], label, "NumPy"), goal])
    report.table(["per op", "wall", "+wall", "+process CPU", "+main thread CPU", "vs NumPy",
                  "goal (+wall)"], rows,
                 title=f"Per eager op ({SIZE}-element float32 tensors, {2 * ops_per_round:,} "
                       f"ops a round): median (interquartile range) of {rounds} interleaved "
                       "rounds; + columns: over no listener, round by round")


def record_session(path: Path, n_ops: int) -> tuple:
    """(seconds to record ``n_ops`` ops and close, ops written)."""
    path.unlink(missing_ok=True)
    rec = Recorder(path, calibrate=False).start()
    start = time.perf_counter()
    a = em.ones(SIZE)
    b = em.ones(SIZE)
    for i in range(n_ops // 2):
        a + b
        em.exp(a)
        if i % 100_000 == 0 and i:
            print(f"\r  recorded {2 * i:,} ops", end="", file=sys.stderr, flush=True)
    rec.close()
    return time.perf_counter() - start, rec.writer.ops_written


def read_back(path: Path, tmp: Path) -> dict:
    """ns of each step a report takes on a recorded session."""
    steps = {}

    def timed(label, fn):
        t = time.perf_counter()
        result = fn()
        steps[label] = (time.perf_counter() - t) * 1e9
        return result

    session = timed("open (checks included)", lambda: open_session(path))
    timed("summary()", session.summary)
    timed("op_totals() by op", session.op_totals)
    timed("op_totals() by source line", lambda: session.op_totals(group_by="location"))
    timed("HTML report", lambda: export(session, tmp / "big.html"))
    session.close()
    return steps


def part_two(report, n_ops: int, tmp: Path, rounds: int) -> None:
    path = tmp / "big.emsession"
    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    recorded = timing.run_interleaved({"record": lambda: record_session(path, n_ops)},
                                      rounds=rounds)["record"]
    print(file=sys.stderr)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    ops = recorded[-1][1]
    size = path.stat().st_size / 2**20
    per_op = timing.Spread.of([seconds * 1e9 / max(written, 1) for seconds, written in recorded])
    report.note(f"A {ops:,}-op session, {rounds} recordings: {1e6 / per_op.median:.0f}k ops/s "
                f"(median; {timing.time_cell(per_op)} per op), file {size:.0f} MiB "
                f"({size * 2**20 / max(ops, 1):.0f} B/op), peak RSS grew {grown:.1f} MiB.")
    steps = timing.run_interleaved({"read back": lambda: read_back(path, tmp)},
                                   rounds=rounds)["read back"]
    report.table(["reading it back", "time"],
                 [[label, timing.time_cell(timing.column(steps, label))] for label in steps[0]],
                 title=f"Median (interquartile range) of {rounds} rounds")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=None,
                   help="ops in the big session (default 1M, quick 20k; 0: part 1 only)")
    p.add_argument("--per-op-rounds", type=int, default=None,
                   help="rounds of two ops per timing in part 1 (default 20000, quick 2000)")
    timing.add_arguments(p)
    args = p.parse_args()
    rounds = timing.rounds_of(args)
    n_ops = args.ops if args.ops is not None else (20_000 if args.quick else 1_000_000)
    per_op_rounds = args.per_op_rounds or (2_000 if args.quick else 20_000)
    report = timing.Report(args)
    timing.steady_state_operators()
    with tempfile.TemporaryDirectory(prefix="execmode-bench-") as tmp:
        # The big session first: peak RSS is a high-water mark, so its growth is measured
        # before anything else has raised it.
        if n_ops:
            part_two(report, n_ops, Path(tmp), rounds)
        part_one(report, per_op_rounds, Path(tmp), rounds)
    report.finish()


if __name__ == "__main__":
    main()
