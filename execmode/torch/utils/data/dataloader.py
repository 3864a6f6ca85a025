"""``DataLoader``: batches of a dataset, as PyTorch's (``torch/utils/data/dataloader.py``).

A map-style dataset is read in the order of a sampler (``shuffle=True``:
``RandomSampler(dataset, generator=generator)``, else ``SequentialSampler``), grouped by a
``BatchSampler(sampler, batch_size, drop_last)`` (or the ``batch_sampler`` given), each
batch's samples fetched (``dataset.__getitems__(indices)`` where the dataset has it) and
passed to ``collate_fn`` (``default_collate``). An ``IterableDataset`` is read in its own
order and grouped by ``batch_size``. ``batch_size=None`` yields samples one by one
(``default_convert``). The argument checks are PyTorch's, with its messages' meaning.

A ``TensorDataset`` with the default collate is read one index per tensor and batch
(``t[indices]``) instead of one per sample: the same batches, with one op each.

Everything runs in the main process. ``num_workers > 0`` gives one warning and loads
there as well: worker processes would pass samples between processes with pickle, which
execmode keeps away from data. ``pin_memory``, ``timeout``, ``prefetch_factor``,
``persistent_workers``, ``worker_init_fn`` and ``multiprocessing_context`` are accepted.
"""

from __future__ import annotations

import warnings

import numpy as np

from .... import api as em
from ....errors import ArgumentError
from .collate import default_collate, default_convert
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

_warned_workers = [False]


def get_worker_info():
    """None: every DataLoader here loads in the main process (as PyTorch's answer there)."""
    return None


class DataLoader:
    """Batches of ``dataset``; iterate it once per epoch (see the module's docstring)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False,
                 timeout=0, worker_init_fn=None, multiprocessing_context=None, generator=None,
                 *, prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ArgumentError(f"DataLoader: num_workers must be an int >= 0, got "
                                f"{num_workers!r}")
        if num_workers > 0 and not _warned_workers[0]:
            _warned_workers[0] = True
            warnings.warn(f"DataLoader(num_workers={num_workers}): execmode loads batches in "
                          "the main process (worker processes would pickle samples); the "
                          "batches are the same", stacklevel=2)
        if timeout < 0:
            raise ArgumentError("DataLoader: timeout must be >= 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)

        if self._iterable:
            if shuffle not in (None, False):
                raise ArgumentError("DataLoader with an IterableDataset: shuffle must not be "
                                    f"set, got shuffle={shuffle!r}")
            if sampler is not None or batch_sampler is not None:
                raise ArgumentError("DataLoader with an IterableDataset: sampler and "
                                    "batch_sampler must not be set (the dataset's own order "
                                    "is read)")
        if sampler is not None and shuffle:
            raise ArgumentError("DataLoader: sampler and shuffle are mutually exclusive")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ArgumentError("DataLoader: batch_sampler is mutually exclusive with "
                                    "batch_size, shuffle, sampler and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ArgumentError("DataLoader: batch_size=None (no batching) is mutually "
                                "exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self._default_collate = collate_fn is None
        if collate_fn is None:
            collate_fn = default_collate if batch_size is not None or batch_sampler is not None \
                else default_convert
        self.collate_fn = collate_fn

    # --- what the loop sees ---------------------------------------------------------------
    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)

    def __iter__(self):
        if self._iterable:
            return self._iter_stream()
        if self.batch_sampler is None:  # batch_size=None: one sample at a time
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        return (self._fetch(indices) for indices in self.batch_sampler)

    def _iter_stream(self):
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def _fetch(self, indices):
        dataset = self.dataset
        if self._default_collate and type(dataset) is TensorDataset:
            index = em.tensor(np.asarray(indices, dtype=np.int64))
            return [t[index] for t in dataset.tensors]
        getitems = getattr(dataset, "__getitems__", None)
        samples = getitems(list(indices)) if getitems is not None else [dataset[i]
                                                                      for i in indices]
        return self.collate_fn(samples)


__all__ = ["DataLoader", "get_worker_info"]
