"""The Array API's set functions: ``unique_values``, ``unique_counts``, ``unique_inverse``
and ``unique_all``, over the flattened tensor, sorted, with each NaN a value of its own (the
standard's rule; ``Tensor.unique``, PyTorch's, is another function). One op per part
(``ops/sets.py``): their sizes depend on the values, so under jit each is a graph break."""

from __future__ import annotations

from typing import NamedTuple

from ..dispatch import apply
from ..ops import OPS
from .arguments import _tensor_arg


class UniqueAllResult(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class UniqueCountsResult(NamedTuple):
    values: object
    counts: object


class UniqueInverseResult(NamedTuple):
    values: object
    inverse_indices: object


def _parts(op, x, *parts):
    x = _tensor_arg(op, x)
    return [apply(OPS["unique"], x, part=part) for part in parts]


def unique_values(x, /):
    """The distinct values of ``x``, sorted, as a 1-D tensor."""
    return _parts("unique_values", x, "values")[0]


def unique_counts(x, /) -> UniqueCountsResult:
    """The distinct values and how often each occurs (int64)."""
    return UniqueCountsResult(*_parts("unique_counts", x, "values", "counts"))


def unique_inverse(x, /) -> UniqueInverseResult:
    """The distinct values, and for each element of ``x`` the index of its value (``x``'s
    shape): ``values[inverse_indices]`` is ``x``."""
    return UniqueInverseResult(*_parts("unique_inverse", x, "values", "inverse"))


def unique_all(x, /) -> UniqueAllResult:
    """The distinct values, the first (flat) index of each, each element's index among the
    values, and the counts."""
    return UniqueAllResult(*_parts("unique_all", x, "values", "indices", "inverse", "counts"))
