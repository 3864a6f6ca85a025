"""Collectives and data-parallel training on MPI: execmode's against mpi4py's own.

    python benchmarks/bench_distributed.py [--quick] [--ranks 2]

``all_reduce`` of float32 buffers (4 KiB, 1 MiB, 16 MiB) through ``dist.all_reduce``
against mpi4py's ``Allreduce`` on the same buffers, in the same ranks, rounds interleaved
and rotated (benchmarks/scripts/distributed_ranks.py; every rank makes the same calls, so
the rounds are fixed-size, with a barrier before each). Goal (issue 37): execmode's
bandwidth at least 90% of mpi4py's, on the medians (time ratio <= 1.11x), where the
buffer is large enough for bandwidth to mean something (1 MiB and up). Then a DDP
training step (an MLP 256-256-10, batch 32 per rank, SGD) on N ranks against the same
step in one process (N=1 under the same launcher), per step: what the gradient
averaging adds. Then a DDP step of a larger MLP (several buckets) with the buckets'
all-reduces overlapping backward against all of them at the end of backward
(``EXECMODE_DDP_OVERLAP=0``), in the same ranks, rounds interleaved. Ranks run one thread each (OMP_NUM_THREADS=1, EXECMODE_NUM_THREADS=1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import timing
from execmode.profilers.measure import Spread

from execmode.distributed.launch_cli import find_mpiexec

HERE = Path(__file__).resolve().parent
RANKS = HERE / "scripts" / "distributed_ranks.py"
GOAL = 1 / 0.9


def run_ranks(n: int, rounds: int, calls: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="execmode-bench-dist-") as tmp:
        env = dict(os.environ, OMP_NUM_THREADS="1", EXECMODE_NUM_THREADS="1")
        done = subprocess.run([sys.executable, "-m", "execmode", "launch", "-n", str(n),
                               str(RANKS), tmp, str(rounds), str(calls)],
                              capture_output=True, text=True, timeout=900, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"{n} ranks failed: {done.stderr.strip()[-2000:]}")
        return json.loads((Path(tmp) / "rank0.json").read_text())["results"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    timing.add_arguments(p)
    args = p.parse_args(argv)
    if find_mpiexec() is None:
        print("no mpiexec: pip install 'execmode[distributed]'", file=sys.stderr)
        return 2
    rounds = timing.rounds_of(args)
    calls = 20 if args.quick else 200
    report = timing.Report(args)
    many = run_ranks(args.ranks, rounds, calls)
    one = run_ranks(1, rounds, calls)
    rows = []
    for name, r in many.items():
        if not name.startswith("all_reduce"):
            continue
        ours, theirs = Spread.of(r["execmode"], r["calls"]), Spread.of(r["mpi4py"], r["calls"])
        goal = timing.goal_cell(timing.judge_ratio(ours, theirs, GOAL, a_name="execmode",
                                                   b_name="mpi4py")) \
            if r["bytes"] >= 2**20 else "-"
        rows.append([name, timing.time_cell(ours), timing.time_cell(theirs),
                     f"{r['bytes'] / ours.median:.2f} GB/s", f"{r['bytes'] / theirs.median:.2f} GB/s",
                     timing.ratio_cell(ours, theirs, "execmode", "mpi4py"), goal])
    report.table(["buffer (float32)", "execmode dist.all_reduce", "mpi4py Allreduce",
                  "execmode (bytes/time)", "mpi4py (bytes/time)", "execmode / mpi4py",
                  "goal: bandwidth >= 90% (<= 1.11x)"], rows,
                 title=f"all_reduce on {args.ranks} ranks, per call: median (IQR) of "
                       f"{rounds} interleaved rounds in the same ranks")
    step_n = Spread.of(many["ddp step"]["ddp"], calls)
    step_1 = Spread.of(one["ddp step"]["ddp"], calls)
    report.table(["ranks", "DDP step", f"{args.ranks} ranks / 1"],
                 [[str(args.ranks), timing.time_cell(step_n),
                   timing.ratio_cell(step_n, step_1, f"{args.ranks} ranks", "1 rank")],
                  ["1", timing.time_cell(step_1), "-"]],
                 title="A DDP training step (MLP 256-256-10, batch 32 per rank, SGD), per "
                       f"step: median (IQR) of {rounds} rounds; {args.ranks} ranks and 1 "
                       "rank in separate launches")
    if args.ranks > 1:
        r = many["ddp overlap"]
        with_overlap = Spread.of(r["overlap"], r["calls"])
        without = Spread.of(r["no overlap"], r["calls"])
        report.table(["DDP step", "per step", "overlap / no overlap"],
                     [["buckets' all-reduces overlapping backward", timing.time_cell(with_overlap),
                       timing.ratio_cell(with_overlap, without, "overlap", "no overlap")],
                      ["all at the end of backward (EXECMODE_DDP_OVERLAP=0)",
                       timing.time_cell(without), "-"]],
                     title=f"A DDP training step on {args.ranks} ranks (MLP 1024x4-10, batch "
                           f"32 per rank, {r['buckets']} buckets of up to 4 MiB), per step: "
                           f"median (IQR) of {rounds} interleaved rounds in the same ranks")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
