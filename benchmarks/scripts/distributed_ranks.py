"""The ranks of benchmarks/bench_distributed.py (run under ``execmode launch -n N``).

Every rank makes the same calls in the same order (fixed warm-up and calls per round:
a collective sized by time on one rank would wait forever for the others), in
interleaved rounds with a barrier before each round. Rank 0 writes the per-call times
(ns) of every round to ``OUT/rank0.json``:

* ``all_reduce``: execmode's ``dist.all_reduce`` against mpi4py's own ``Allreduce``
  (``IN_PLACE``, SUM) on the same float32 buffer, for each size;
* ``ddp``: one training step of a small MLP under ``DistributedDataParallel`` (forward,
  loss, backward with its gradient averaging, SGD), each rank on its own batch;
* ``ddp overlap``: a training step of a larger MLP (several buckets) with the buckets'
  all-reduces overlapping backward, against all of them at the end of backward.
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

# Overlap against none: a model of several buckets (4 MiB each), each bucket's all-reduce
# started as backward produces its gradients, against all of them at the end of backward
# (EXECMODE_DDP_OVERLAP=0, read at each backward: every rank switches alike), rounds
# interleaved and rotated in the same ranks.
em.random.seed(1)
layers = []
for _ in range(4):
    layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
deep = torch.nn.parallel.DistributedDataParallel(
    torch.nn.Sequential(*layers, torch.nn.Linear(1024, 10)), bucket_cap_mb=4)
deep_opt = torch.optim.SGD(deep.parameters(), lr=0.01)
deep_x = em.randn(32, 1024)


def deep_step():
    deep_opt.zero_grad()
    loss_fn(deep(deep_x), y).backward()
    deep_opt.step()


switch = {"overlap": "1", "no overlap": "0"}
deep_calls = max(2, calls // 10)
overlap = {name: [] for name in switch}
for r in range(rounds + 1):  # the first round warms up
    names = list(switch)
    for name in names[r % 2:] + names[:r % 2]:
        os.environ["EXECMODE_DDP_OVERLAP"] = switch[name]
        took = timed(deep_step, deep_calls)
        if r:
            overlap[name].append(took)
os.environ.pop("EXECMODE_DDP_OVERLAP")
results["ddp overlap"] = {"calls": deep_calls, "buckets": deep.buckets_reduced, **overlap}
if rank == 0:
    with open(os.path.join(out, "rank0.json"), "w", encoding="utf-8") as f:
        json.dump({"world": world, "results": results}, f)
