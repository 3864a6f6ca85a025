"""What every rank's checks share (ranks_worker.py runs them): the process group, started
when this module loads, the list of checks in the order they run, and helpers.

The data of rank r is drawn from a generator seeded with r, so every rank can compute
what a collective must give with NumPy alone.
"""

from __future__ import annotations

import sys

import numpy as np

import execmode.torch as torch
import execmode.torch.distributed as dist

# Before init_process_group nothing has imported mpi4py (is_available only looks for it).
MPI_IMPORTED_EARLY = dist.is_available() and "mpi4py" in sys.modules

dist.init_process_group("mpi")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def value(rank: int, shape, dtype) -> np.ndarray:
    rng = np.random.default_rng(rank)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-5, 6, shape).astype(dtype)


def every_rank(shape, dtype) -> np.ndarray:
    return np.stack([value(r, shape, dtype) for r in range(WORLD)])


def raises(cls, fn) -> str:
    try:
        fn()
    except cls as e:
        return str(e)
    raise AssertionError(f"{fn} did not raise {cls.__name__}")


def same_on_every_rank(array: np.ndarray) -> bool:
    t = torch.tensor(np.ascontiguousarray(array, dtype=np.float64))
    gathered = [torch.zeros_like(t) for _ in range(WORLD)]
    dist.all_gather(gathered, t)
    return all(np.array_equal(g.numpy(), gathered[0].numpy()) for g in gathered)



def lowered_ops(jitted) -> list[str]:
    """The ops of the (only) graph of ``jitted``'s newest signature, after the passes."""
    (segment,) = jitted.concrete_functions[-1].segments
    return [n.op for n in segment.compiled.lowered.nodes]
