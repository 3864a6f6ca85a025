"""How fast a script's stdout passes through execmode, and how much memory that takes.

    python benchmarks/bench_output.py [--mib 100] [--rounds 7]
    python benchmarks/bench_output.py --quick      # 5 MiB, 5 rounds

One script prints ``--mib`` MiB of 100-byte lines to stdout (a file, as a shell
redirect would). Each way of running it (plain python, `execmode run` without and with a
session, `execmode profile`), and the same way with a script that prints nothing, runs
once per round, rounds interleaved (benchmarks/timing.py). Printed: the median wall time
and its interquartile range, the throughput over the empty script's time taken off round
by round (start-up excluded; judged on the median), and the largest resident set of the
processes involved. Goal (issue 17): >= 100 MB/s with bounded memory. Sessions keep the
first EXECMODE_OUTPUT_MAX_MB (8) MiB.

Not a test: numbers on shared machines drift. Run it alone.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import timing  # noqa: E402

SPEW = Path(__file__).resolve().parent.parent / "tests" / "profilers" / "scripts" / "spew.py"
WAYS = {
    "python": [],
    "execmode run --no-session": ["-m", "execmode", "run", "--no-session"],
    "execmode run": ["-m", "execmode", "run", "--session", "{session}"],
    "execmode profile": ["-m", "execmode", "profile", "--session", "{session}"],
}
# Peak RSS of one child tree, measured in a fresh interpreter (RUSAGE_CHILDREN is the
# largest of all children this process ever waited for).
_MEASURE = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "subprocess.run(sys.argv[1:], stdout=open(__import__('os').devnull, 'w'), "
            "stderr=subprocess.DEVNULL, check=True); "
            "print(time.perf_counter() - t, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def measure(way: list[str], mib: float, folder: str, n: int) -> tuple[float, int]:
    """(seconds, peak KiB) of one run."""
    session = os.path.join(folder, f"s{n}.emsession")
    argv = [sys.executable, *[a.format(session=session) for a in way], str(SPEW), str(mib)]
    out = subprocess.run([sys.executable, "-c", _MEASURE, *argv], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0]), int(out[1])


GOAL_MB_S = 100


def _rate(per_mb) -> str:
    if per_mb.median <= 0:
        return "unresolved (no slower than the empty script)"
    return f"{1e9 / per_mb.median:,.0f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mib", type=float, default=None, help="MiB printed (default 100, quick 5)")
    timing.add_arguments(p)
    opts = p.parse_args()
    rounds = timing.rounds_of(opts)
    mib = opts.mib or (5.0 if opts.quick else 100.0)
    report = timing.Report(opts)
    with tempfile.TemporaryDirectory() as folder:
        runs = itertools.count()
        candidates = {}
        for name, way in WAYS.items():
            candidates[(name, "full")] = lambda way=way: measure(way, mib, folder, next(runs))
            candidates[(name, "empty")] = lambda way=way: measure(way, 0, folder, next(runs))
        found = timing.run_interleaved(candidates, rounds=rounds)
    rows = []
    for name in WAYS:
        full = timing.Spread.of([seconds * 1e9 for seconds, _ in found[(name, "full")]])
        empty = timing.Spread.of([seconds * 1e9 for seconds, _ in found[(name, "empty")]])
        net = timing.paired_difference(full, empty)
        # Time per MB (ns/MB) is what the rounds measure; a goal of >= 100 MB/s is a time
        # per MB of at most 1e9 / 100 ns, judged on the median.
        per_mb = timing.scaled(net, 1e6 / (mib * 2**20))
        verdict = timing.judge_value(per_mb, 1e9 / GOAL_MB_S, name="time per MB")
        peak = max(kib for _, kib in found[(name, "full")])
        rows.append([name, timing.time_cell(full), timing.time_cell(empty),
                     _rate(per_mb), timing.goal_cell(verdict),
                     f"{peak / 1024:.0f} MiB"])
    report.table(["way", f"{mib:g} MiB", "empty script", "MB/s (median)",
                  f">= {GOAL_MB_S} MB/s", "peak RSS"], rows,
                 title=f"Wall time: median (interquartile range) of {rounds} interleaved "
                       "rounds")
    report.finish()


if __name__ == "__main__":
    main()
