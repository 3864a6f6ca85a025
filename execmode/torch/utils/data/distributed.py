"""``torch.utils.data.distributed.DistributedSampler``: each rank reads its own share of a
dataset, PyTorch's way (``torch/utils/data/distributed.py``): the indices (shuffled from
``seed + epoch``, the same order on every rank) are padded by repeating the first ones to
a multiple of the world size (or cut to one with ``drop_last=True``), and rank r takes
every ``num_replicas``-th index from r. ``set_epoch(e)`` before each epoch changes the
shuffle. The order is NumPy's permutation for that seed, not PyTorch's (the generators
differ), as everywhere in execmode's data loading.
"""

from __future__ import annotations

import math

import numpy as np

from ....errors import ArgumentError
from .sampler import Sampler


class DistributedSampler(Sampler):
    """The indices of ``dataset`` that rank ``rank`` of ``num_replicas`` reads (both
    default to the process group's)."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):
        if num_replicas is None or rank is None:
            from ....distributed import get_rank, get_world_size

            num_replicas = get_world_size() if num_replicas is None else num_replicas
            rank = get_rank() if rank is None else rank
        if isinstance(num_replicas, bool) or not isinstance(num_replicas, int) \
                or num_replicas < 1:
            raise ArgumentError(f"DistributedSampler: num_replicas must be a positive int, "
                                f"got {num_replicas!r}")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ArgumentError(f"DistributedSampler: invalid rank {rank!r}, rank should be "
                                f"in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        self.shuffle = shuffle
        self.seed = seed
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose shuffle the next pass uses (call it before each epoch)."""
        self.epoch = epoch


__all__ = ["DistributedSampler"]
