"""``default_collate``: a list of samples -> one batch, as PyTorch's
(``torch/utils/data/_utils/collate.py``): tensors are stacked along a new first axis,
NumPy arrays and numbers become tensors (Python floats float64, ints int64, bools bool,
as PyTorch), strings stay a list, and dicts, namedtuples, tuples and lists are collated
field by field (a tuple of fields gives a list, as in PyTorch). NumPy dtypes execmode lacks
are widened as ``em.tensor`` widens them (uint8 images -> int64, float16 -> float32), where
PyTorch keeps them.
"""

from __future__ import annotations

import collections.abc
import copy

import numpy as np

from .... import api as em
from ...._tensor import Tensor
from ....dtypes import SUPPORTED
from ....errors import ArgumentError
from ..._tensor_type import from_numpy


def _stack(tensors):
    first = tensors[0]
    shape, arrays = first.shape, []
    for t in tensors:  # one pass: plain CPU arrays of one shape, none requiring grad
        data = t._data
        if data.__class__ is not np.ndarray or t.requires_grad or data.shape != shape:
            break
        arrays.append(data)
    else:  # one copy of the rows into one new tensor: no op per sample
        return from_numpy(np.stack(arrays))
    if any(t.shape != shape for t in tensors):
        raise ArgumentError("default_collate: the samples' tensors differ in shape: "
                            + ", ".join(str(tuple(t.shape)) for t in tensors[:4])
                            + ("..." if len(tensors) > 4 else ""))
    return em.stack(list(tensors))  # gradients, GPU arrays, traced values carry through


def _array(array: np.ndarray):
    """A new tensor holding ``array`` (a fresh one, so no copy): dtypes execmode lacks are
    widened as ``em.tensor`` widens them (float16 -> float32)."""
    if array.dtype in SUPPORTED:
        return from_numpy(array)
    return em.tensor(array)


def default_collate(batch):
    """Stack a list of samples into a batch (see the module's docstring)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack(batch)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in "OUS":
            raise ArgumentError(f"default_collate: NumPy arrays of {elem.dtype} cannot be "
                                "batched")
        if any(b.shape != elem.shape for b in batch):
            raise ArgumentError("default_collate: the samples' arrays differ in shape")
        return _array(np.stack(batch))
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
        return em.tensor(data)  # a copy (the sample may be the dataset's own memory)
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
