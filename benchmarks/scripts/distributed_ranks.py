"""The ranks of benchmarks/bench_distributed.py (run under ``execmode launch -n N``).

Every rank makes the same calls in the same order (fixed warm-up and calls per round:
a collective sized by time on one rank would wait forever for the others), in
interleaved rounds with a barrier before each round. Rank 0 writes the per-call times
(ns) of every round to ``OUT/rank0.json``:

* ``all_reduce``: execmode's ``dist.all_reduce`` against mpi4py's own ``Allreduce``
  (``IN_PLACE``, SUM) on the same float32 buffer, for each size;
* ``ddp``: one training step of a small MLP under ``DistributedDataParallel`` (forward,
  loss, backward with its gradient averaging, SGD), each rank on its own batch.
"""

import json
import os
import sys
import time

import numpy as np

import execmode as em
import execmode.torch as torch
import execmode.torch.distributed as dist
from execmode.distributed import _mpi

out, rounds, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dist.init_process_group()
rank, world = dist.get_rank(), dist.get_world_size()
comm = _mpi.load().COMM_WORLD
MPI = _mpi.load()
SIZES = {"4 KiB": 1024, "1 MiB": 256 * 1024, "16 MiB": 4 * 1024 * 1024}


def timed(fn, n):
    comm.Barrier()
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t0) / n


results = {}
for label, n in SIZES.items():
    t = em.tensor(np.ones(n, np.float32))
    raw = np.ones(n, np.float32)
    reps = max(2, calls * 1024 // n) if n < 65536 else calls
    cases = {"execmode": lambda t=t: dist.all_reduce(t),
             "mpi4py": lambda raw=raw: comm.Allreduce(MPI.IN_PLACE, raw, op=MPI.SUM)}
    for fn in cases.values():
        timed(fn, 2)  # warm-up, the same on every rank
    samples = {name: [] for name in cases}
    names = list(cases)
    for r in range(rounds):
        for name in names[r % 2:] + names[:r % 2]:  # rotated, as measure() does
            samples[name].append(timed(cases[name], reps))
    results[f"all_reduce {label}"] = {"bytes": n * 4, "calls": reps, **samples}

em.random.seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
x, y = em.randn(32, 256), em.tensor(np.arange(32) % 10)
loss_fn = torch.nn.CrossEntropyLoss()


def step():
    opt.zero_grad()
    loss_fn(ddp(x), y).backward()
    opt.step()


timed(step, 3)
results["ddp step"] = {"calls": calls, "ddp": [timed(step, calls) for _ in range(rounds)]}
if rank == 0:
    with open(os.path.join(out, "rank0.json"), "w", encoding="utf-8") as f:
        json.dump({"world": world, "results": results}, f)
