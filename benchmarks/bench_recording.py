"""What recording costs, and how fast a big session reads back.

    python benchmarks/bench_recording.py [--ops 1000000] [--per-op-rounds 20000]
    python benchmarks/bench_recording.py --ops 0 --rounds 5   # part 1 only, best of 5 runs

Part 1 (printed second), per eager op (tiny float32 tensors, so the overheads show; best of 5 runs):
raw NumPy, execmode with no listener, with a listener that does nothing (dispatch building
the event), and with the recorder writing to a session file (memory tracking on/off,
value summaries on, the op ring turned off), amortised with the writer's time to commit
the rows. Besides wall time, each row's cost in CPU time: the process's (every thread, so
the session writer's inserts too) and the main thread's (what the script's own thread
pays); on a shared machine CPU time moves far less with other processes' load. ``--rounds N`` repeats part 1 N times, interleaving its rows, and keeps each
row's best: on a shared machine the load moves between rows otherwise.

Part 2 (run first, so peak RSS starts clean): record a session of ``--ops`` real eager ops (default 1M), reporting the write
rate and how much the process grew, then time opening it and the aggregates a report
needs (summary, top ops, top lines), and the HTML report.

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
from execmode.profilers.exporters import export
from execmode.profilers.memory import MemoryTracker
from execmode.profilers.recorder import Recorder
from execmode.profilers.session import open_session

import execmode as em
from execmode import instrument

SIZE = 16


# A cost is (wall, process CPU, main thread CPU) in ns: CPU time is what the work took on
# the cores whatever else ran there; the process's includes the session writer's thread.
def _clock() -> tuple:
    return time.perf_counter_ns(), time.process_time_ns(), time.thread_time_ns()


def _since(start: tuple) -> tuple:
    return tuple(now - then for now, then in zip(_clock(), start))


def _best(costs) -> tuple:
    return tuple(min(column) for column in zip(*costs))


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


def per_op(loop, rounds: int, repeats: int = 5) -> tuple:
    loop(rounds // 10)  # warm up
    return tuple(ns / (2 * rounds) for ns in _best(loop(rounds) for _ in range(repeats)))


def recorded_per_op(rounds: int, tmp: Path, **options) -> tuple:
    """ns per op with a recorder on, including the writer's commit time (best of 5)."""
    costs = []
    name = "-".join(f"{k}={v}" for k, v in options.items())
    options.pop("ring", None)
    for i in range(5):
        path = tmp / f"per-op-{name}-{i}.emsession"
        path.unlink(missing_ok=True)
        rec = Recorder(path, calibrate=False, **options)
        rec.start()
        execmode_loop(rounds // 10)
        rec.flush()
        start = _clock()
        execmode_loop(rounds)
        rec.flush()
        costs.append(_since(start))
        rec.close()
    return tuple(ns / (2 * rounds) for ns in _best(costs))


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


ROWS = [
    ("raw NumPy (np.add, np.exp)", lambda r, tmp: per_op(numpy_loop, r)),
    ("execmode, no listener", lambda r, tmp: per_op(execmode_loop, r)),
    ("execmode, null listener (dispatch builds events)", lambda r, tmp: null_listener_per_op(r)),
    ("execmode, memory tracker only", lambda r, tmp: tracker_per_op(r)),
    ("recorder -> session, no memory tracking",
     lambda r, tmp: recorded_per_op(r, tmp, memory=False)),
    ("recorder -> session (default: memory on)", lambda r, tmp: recorded_per_op(r, tmp)),
    ("recorder -> session, op ring off (Python path)", ring_off_per_op),
    ("recorder -> session, value summaries on",
     lambda r, tmp: recorded_per_op(r, tmp, summaries=True)),
]


def part_one(rounds: int, tmp: Path, repeats: int = 1) -> None:
    costs: list[list] = [[] for _ in ROWS]
    for _ in range(repeats):  # rows interleaved: a burst of load hits one round's row only
        for i, (_, measure) in enumerate(ROWS):
            costs[i].append(measure(rounds, tmp))
    best = [_best(c) for c in costs]
    numpy_ns, none = best[0][0], best[1]
    print(f"\nPer eager op ({SIZE}-element float32 tensors, best of 5 x {repeats}, "
          f"{2 * rounds:,} ops): wall ns/op, and what each adds to no listener's\n"
          "wall time, process CPU time (all threads, the session writer's too) and main "
          "thread CPU time:")
    print(f"{'':52s} {'ns/op':>7s} {'vs none':>8s} {'+wall':>7s} {'+CPU':>7s} "
          f"{'+main':>7s} {'vs NumPy':>9s}")
    for (label, _), (wall, cpu, main) in zip(ROWS, best):
        print(f"{label:52s} {wall:7.0f} {wall / none[0]:7.2f}x {wall - none[0]:7.0f} "
              f"{cpu - none[1]:7.0f} {main - none[2]:7.0f} {wall / numpy_ns:8.2f}x")


def part_two(n_ops: int, tmp: Path) -> None:
    path = tmp / "big.emsession"
    rounds = n_ops // 2
    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rec = Recorder(path, calibrate=False).start()
    start = time.perf_counter()
    a = em.ones(SIZE)
    b = em.ones(SIZE)
    for i in range(rounds):
        a + b
        em.exp(a)
        if i % 100_000 == 0 and i:
            print(f"\r  recorded {2 * i:,} ops", end="", file=sys.stderr, flush=True)
    rec.close()
    record_s = time.perf_counter() - start
    print(file=sys.stderr)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    size = path.stat().st_size / 2**20
    ops = rec.writer.ops_written

    timings = []

    def timed(label, fn):
        t = time.perf_counter()
        result = fn()
        timings.append((label, time.perf_counter() - t))
        return result

    session = timed("open (checks included)", lambda: open_session(path))
    timed("summary()", session.summary)
    timed("op_totals() by op", session.op_totals)
    timed("op_totals() by source line", lambda: session.op_totals(group_by="location"))
    timed("HTML report", lambda: export(session, tmp / "big.html"))
    session.close()

    print(f"\nA {ops:,}-op session: recorded in {record_s:.1f} s "
          f"({ops / record_s / 1000:.0f}k ops/s), file {size:.0f} MiB "
          f"({size * 2**20 / max(ops, 1):.0f} B/op), peak RSS grew {grown:.1f} MiB")
    print(f"{'':32s} {'seconds':>8s}")
    for label, seconds in timings:
        print(f"{label:32s} {seconds:8.3f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=1_000_000,
                   help="ops in the big session (0: part 1 only)")
    p.add_argument("--per-op-rounds", type=int, default=20_000,
                   help="rounds of two ops per timing in part 1")
    p.add_argument("--rounds", type=int, default=1,
                   help="repeat part 1, interleaving its rows, and keep each row's best")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="execmode-bench-") as tmp:
        # The big session first: peak RSS is a high-water mark, so its growth is measured
        # before anything else has raised it.
        if args.ops:
            part_two(args.ops, Path(tmp))
        part_one(args.per_op_rounds, Path(tmp), args.rounds)


if __name__ == "__main__":
    main()
