"""``default_collate``: a list of samples -> one batch, as PyTorch's
(``torch/utils/data/_utils/collate.py``): tensors are stacked along a new first axis,
NumPy arrays and numbers become tensors (Python floats float64, ints int64, bools bool,
as PyTorch), strings stay a list, and dicts, namedtuples, tuples and lists are collated
field by field (a tuple of fields gives a list, as in PyTorch).
"""

from __future__ import annotations

import collections.abc
import copy

import numpy as np

from .... import api as em
from ...._tensor import Tensor
from ....errors import ArgumentError


def _stack(tensors):
    first = tensors[0]
    if any(t.shape != first.shape for t in tensors):
        raise ArgumentError("default_collate: the samples' tensors differ in shape: "
                            + ", ".join(str(tuple(t.shape)) for t in tensors[:4])
                            + ("..." if len(tensors) > 4 else ""))
    plain = all(not t.requires_grad and not t.is_traced and not t.device.is_cuda
                for t in tensors)
    if plain:  # one copy of the rows, one tensor: no op per sample
        return em.tensor(np.stack([t.numpy() for t in tensors]), dtype=first.dtype)
    return em.stack(list(tensors))


def default_collate(batch):
    """Stack a list of samples into a batch (see the module's docstring)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack(batch)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OUS":
            raise ArgumentError(f"default_collate: NumPy arrays of {elem.dtype} cannot be "
                                "batched")
        return _stack([em.tensor(b) for b in batch])
    if isinstance(elem, np.generic):
        return em.tensor(np.array(batch))
    if isinstance(elem, bool):
        return em.tensor(batch, dtype=em.bool)
    if isinstance(elem, float):
        return em.tensor(batch, dtype=em.float64)
    if isinstance(elem, int):
        return em.tensor(batch, dtype=em.int64)
    if isinstance(elem, str | bytes):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        fields = {key: default_collate([d[key] for d in batch]) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            out = copy.copy(elem)
            out.update(fields)
            return out
        return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise ArgumentError("default_collate: every sample must have the same number "
                                "of fields")
        return [default_collate(list(samples)) for samples in zip(*batch)]
    raise ArgumentError(f"default_collate: a batch must hold tensors, NumPy arrays, numbers, "
                        f"strings, dicts or lists; found {type(elem).__name__}")


def default_convert(data):
    """One sample as the DataLoader gives it with ``batch_size=None``: NumPy arrays become
    tensors, containers are converted field by field, the rest stays as it is."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "OUS":
        return em.tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return {key: default_convert(value) for key, value in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, list):
        return [default_convert(d) for d in data]
    return data


__all__ = ["default_collate", "default_convert"]
