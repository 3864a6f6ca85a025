"""What recording costs, and how fast a big session reads back.

    python benchmarks/bench_recording.py [--ops 1000000] [--per-op-rounds 20000]

Part 1 (printed second), per eager op (tiny float32 tensors, so the overheads show; best of 5 runs):
raw NumPy, execmode with no listener, with a listener that does nothing (dispatch building
the event), and with the recorder writing to a session file (memory tracking on/off,
value summaries on), amortised with the writer's time to commit the rows.

Part 2 (run first, so peak RSS starts clean): record a session of ``--ops`` real eager ops (default 1M), reporting the write
rate and how much the process grew, then time opening it and the aggregates a report
needs (summary, top ops, top lines), and the HTML report.

Not a test: numbers on shared machines drift. Run it alone.
"""

from __future__ import annotations

import argparse
import gc
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


def numpy_loop(rounds: int) -> int:
    a = np.ones(SIZE, np.float32)
    b = np.ones(SIZE, np.float32)
    start = time.perf_counter_ns()
    for _ in range(rounds):
        np.add(a, b)
        np.exp(a)
    return time.perf_counter_ns() - start


def execmode_loop(rounds: int) -> int:
    a = em.ones(SIZE)
    b = em.ones(SIZE)
    exp = em.exp
    start = time.perf_counter_ns()
    for _ in range(rounds):
        a + b
        exp(a)
    return time.perf_counter_ns() - start


class NullListener:
    def on_op(self, ev, output):
        pass


def per_op(loop, rounds: int, repeats: int = 5) -> float:
    loop(rounds // 10)  # warm up
    return min(loop(rounds) for _ in range(repeats)) / (2 * rounds)


def recorded_per_op(rounds: int, tmp: Path, **options) -> float:
    """ns per op with a recorder on, including the writer's commit time (best of 5)."""
    best = float("inf")
    for i in range(5):
        name = "-".join(f"{k}={v}" for k, v in options.items())
        rec = Recorder(tmp / f"per-op-{name}-{i}.emsession", calibrate=False, **options)
        rec.start()
        execmode_loop(rounds // 10)
        rec.flush()
        elapsed = execmode_loop(rounds)
        start = time.perf_counter_ns()
        rec.flush()
        elapsed += time.perf_counter_ns() - start
        rec.close()
        best = min(best, elapsed / (2 * rounds))
    return best


def part_one(rounds: int, tmp: Path) -> None:
    rows = [("raw NumPy (np.add, np.exp)", per_op(numpy_loop, rounds))]
    none = per_op(execmode_loop, rounds)
    rows.append(("execmode, no listener", none))
    with instrument.listening(NullListener()):
        rows.append(("execmode, null listener (dispatch builds events)",
                     per_op(execmode_loop, rounds)))
    with instrument.listening(MemoryTracker()):
        rows.append(("execmode, memory tracker only", per_op(execmode_loop, rounds)))
    rows.append(("recorder -> session, no memory tracking",
                 recorded_per_op(rounds, tmp, memory=False)))
    rows.append(("recorder -> session (default: memory on)", recorded_per_op(rounds, tmp)))
    rows.append(("recorder -> session, value summaries on",
                 recorded_per_op(rounds, tmp, summaries=True)))
    numpy_ns = rows[0][1]
    print(f"\nPer eager op ({SIZE}-element float32 tensors, best of 5, {2 * rounds:,} ops):")
    print(f"{'':52s} {'ns/op':>8s} {'vs no listener':>15s} {'vs NumPy':>9s}")
    for label, ns in rows:
        print(f"{label:52s} {ns:8.0f} {ns / none:14.2f}x {ns / numpy_ns:8.2f}x")


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
    p.add_argument("--ops", type=int, default=1_000_000, help="ops in the big session")
    p.add_argument("--per-op-rounds", type=int, default=20_000,
                   help="rounds of two ops per timing in part 1")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="execmode-bench-") as tmp:
        # The big session first: peak RSS is a high-water mark, so its growth is measured
        # before anything else has raised it.
        part_two(args.ops, Path(tmp))
        part_one(args.per_op_rounds, Path(tmp))


if __name__ == "__main__":
    main()
