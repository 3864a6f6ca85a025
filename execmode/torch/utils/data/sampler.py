"""Samplers: what order a DataLoader reads a map-style dataset in. A sampler yields
indices; a batch sampler yields lists of them (PyTorch's ``torch/utils/data/sampler.py``).

Random orders draw from a NumPy generator seeded, at each pass, from the sampler's
``generator`` (a ``torch.Generator``) or, without one, from execmode's generator, so
``torch.manual_seed(n)`` before the loop fixes every epoch's order.
"""

from __future__ import annotations

import numpy as np

from ...._tensor import Tensor
from ....errors import ArgumentError
from ..._random import Generator, default_generator


def _numpy_generator(generator) -> np.random.Generator:
    """A NumPy generator for one pass: seeded from ``generator`` (or execmode's)."""
    if generator is not None and not isinstance(generator, Generator):
        raise ArgumentError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    source = (generator or default_generator)._numpy_generator()
    return np.random.default_rng(int(source.integers(0, 2**63 - 1)))


class Sampler:
    """The base of samplers: ``__iter__`` yields indices (or lists of them for a batch
    sampler); ``__len__`` says how many."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError("a Sampler subclass must define __iter__")


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices (a new one each pass), or with
    ``replacement=True`` ``num_samples`` independent draws."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise ArgumentError(f"RandomSampler: replacement must be True or False, got "
                                f"{replacement!r}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ArgumentError(f"RandomSampler: num_samples must be a positive int, got "
                                f"{self.num_samples!r}")

    @property
    def num_samples(self) -> int:
        """How many indices a pass yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        rng = _numpy_generator(self.generator)
        if self.replacement:  # drawn in chunks: num_samples may be huge (minGPT: 1e10)
            for start in range(0, self.num_samples, 1024):
                size = min(1024, self.num_samples - start)
                yield from rng.integers(0, n, size=size).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[: self.num_samples % n].tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a new one each pass)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        rng = _numpy_generator(self.generator)
        for i in rng.permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn in proportion to ``weights`` (with or without
    replacement)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or num_samples <= 0:
            raise ArgumentError(f"WeightedRandomSampler: num_samples must be a positive int, "
                                f"got {num_samples!r}")
        values = weights.numpy() if isinstance(weights, Tensor) else np.asarray(weights)
        self.weights = np.asarray(values, dtype=np.float64).reshape(-1)
        if (self.weights < 0).any() or not np.isfinite(self.weights).all() \
                or self.weights.sum() <= 0:
            raise ArgumentError("WeightedRandomSampler: weights must be finite, non-negative "
                                "and not all zero")
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        rng = _numpy_generator(self.generator)
        p = self.weights / self.weights.sum()
        yield from rng.choice(len(p), size=self.num_samples, replace=self.replacement,
                              p=p).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last one shorter, or dropped
    with ``drop_last=True``)."""

    def __init__(self, sampler, batch_size, drop_last):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ArgumentError(f"drop_last must be True or False, got {drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]
