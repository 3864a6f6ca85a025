"""Datasets: ``Dataset`` (indexed), ``IterableDataset`` (a stream), ``TensorDataset``
(rows of tensors), ``Subset``, ``ConcatDataset``, ``ChainDataset``, ``StackDataset`` and
``random_split``, as PyTorch's ``torch/utils/data/dataset.py`` shapes them."""

from __future__ import annotations

import bisect
import math
import warnings

from ...._tensor import Tensor
from ....errors import ArgumentError, ShapeError
from ..._random import default_generator, randperm


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(index)`` and usually
    ``__len__()``. ``a + b`` concatenates two datasets."""

    def __getitem__(self, index):
        raise NotImplementedError("a Dataset subclass must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__``. The DataLoader batches what it
    yields, in order (no sampler, no shuffle)."""

    def __iter__(self):
        raise NotImplementedError("an IterableDataset subclass must define __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Rows of tensors of the same length: item ``i`` is ``(t[i] for t in tensors)``.
    The DataLoader's default collate reads a whole batch with one index per tensor."""

    def __init__(self, *tensors):
        if not tensors:
            raise ArgumentError("TensorDataset needs at least one tensor")
        if not all(isinstance(t, Tensor) for t in tensors):
            raise ArgumentError("TensorDataset takes tensors (wrap data with torch.tensor)")
        if any(t.shape[:1] != tensors[0].shape[:1] for t in tensors):
            raise ShapeError("TensorDataset: tensors must have the same first dimension, got "
                             + ", ".join(str(tuple(t.shape)) for t in tensors))
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Samples of several datasets side by side: ``StackDataset(a, b)[i] == (a[i], b[i])``,
    ``StackDataset(x=a, y=b)[i] == {"x": a[i], "y": b[i]}``."""

    def __init__(self, *args, **kwargs):
        if bool(args) == bool(kwargs):
            raise ArgumentError("StackDataset takes datasets as positional or as keyword "
                                "arguments, not both")
        self.datasets = args or kwargs
        lengths = {len(d) for d in (args or kwargs.values())}
        if len(lengths) != 1:
            raise ShapeError(f"StackDataset: datasets of different lengths {sorted(lengths)}")
        self._length = lengths.pop()

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """The datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ArgumentError("ConcatDataset needs at least one dataset")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise ArgumentError("ConcatDataset does not take an IterableDataset "
                                    "(use ChainDataset)")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise IndexError(f"index {index} is out of range for {len(self)} samples")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which >= len(self.datasets):
            raise IndexError(f"index {index} is out of range for {len(self)} samples")
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = list(indices)

    def __getitem__(self, index):
        if isinstance(index, list):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices):
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths, generator=default_generator):
    """Split ``dataset`` into non-overlapping ``Subset``s of the given lengths (or fractions
    that add up to 1: each gets floor(fraction * n), the remainder goes round-robin), in a
    random order drawn from ``generator``."""
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ArgumentError(f"random_split: fraction {fraction} at {i} is not in [0, 1]")
            sizes.append(math.floor(n * fraction))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"random_split: the split at index {i} is empty", stacklevel=2)
        lengths = sizes
    if sum(lengths) != n:
        raise ArgumentError(f"random_split: the lengths add up to {sum(lengths)}, not to the "
                            f"dataset's {n} samples")
    order = randperm(n, generator=generator).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out


__all__ = ["ChainDataset", "ConcatDataset", "Dataset", "IterableDataset", "StackDataset",
           "Subset", "TensorDataset", "random_split"]
