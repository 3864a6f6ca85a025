"""``torch.utils.data``: datasets, samplers and the DataLoader, with PyTorch's shapes.

A dataset is ``__getitem__`` + ``__len__`` (``Dataset``) or ``__iter__``
(``IterableDataset``); a sampler yields indices (``SequentialSampler``,
``RandomSampler``, ``SubsetRandomSampler``, ``WeightedRandomSampler``,
``DistributedSampler``: each rank's share, ``distributed.py``) and a batch sampler
lists of them (``BatchSampler``); the ``DataLoader`` fetches each batch's samples and
``collate_fn`` (``default_collate``) stacks them into execmode tensors. Shuffles draw from
execmode's generator (``torch.manual_seed``) or the loader's ``generator=``, so an epoch's
order is reproducible; it is not PyTorch's order for the same seed (the generators differ).

Loading runs in the main process: ``num_workers > 0`` is accepted, warned about once,
and loads there too (workers would pickle samples between processes; execmode keeps
pickle away from data). See docs/pytorch.md, "Data loading".
"""

from __future__ import annotations

from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
           "default_collate", "default_convert", "get_worker_info", "random_split"]


def __getattr__(name: str):
    from ....aliases import missing_attribute

    raise missing_attribute(__name__, name)
