"""How fast a script's stdout passes through execmode, and how much memory that takes.

    python benchmarks/bench_output.py [--mib 100] [--repeats 3]

One script prints ``--mib`` MiB of 100-byte lines to stdout (a file, as a shell
redirect would). Each way of running it (plain python, `execmode run` without and with a
session, `execmode profile`) runs ``--repeats`` times; printed are the best wall time,
the throughput over the time a script that prints nothing takes the same way (start-up
excluded), and the largest resident set of the processes involved. Goal (issue 17):
>= 100 MB/s with bounded memory. Sessions keep the first EXECMODE_OUTPUT_MAX_MB (8) MiB.

Not a test: numbers on shared machines drift. Run it alone.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mib", type=float, default=100.0)
    p.add_argument("--repeats", type=int, default=3)
    opts = p.parse_args()
    print(f"| way | {opts.mib:g} MiB best | empty script | MB/s | peak RSS |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        n = 0
        for name, way in WAYS.items():
            full, empty, peak = [], [], 0
            for _ in range(opts.repeats):
                n += 1
                seconds, kib = measure(way, opts.mib, folder, n)
                full.append(seconds)
                peak = max(peak, kib)
                n += 1
                empty.append(measure(way, 0, folder, n)[0])
            net = max(min(full) - min(empty), 1e-9)
            rate = opts.mib * 2**20 / net / 1e6
            print(f"| {name} | {min(full):.2f} s | {min(empty):.2f} s | {rate:,.0f} | "
                  f"{peak / 1024:.0f} MiB |", flush=True)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - t0:.0f} s; {os.cpu_count()} CPUs)")
