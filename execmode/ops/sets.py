"""The distinct values of a tensor and what goes with them (the Array API's ``unique_*``).

Each part is one op over the flattened input, NumPy's (CuPy's) ``unique`` with NaNs kept
apart as the standard asks: ``values``, ``indices`` (each value's first position),
``counts``, and ``inverse`` (each element's position among the values). The first three
have as many elements as there are distinct values, so under jit they are graph breaks
(``data_dependent_shape``), as nonzero is; ``inverse`` has the input's shape but comes
from the same call, and breaks with them. None has a gradient.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError
from .movement import _data_dependent_rule
from .registry import OPAQUE, OpDef, RuleError, register

PARTS = ("values", "indices", "inverse", "counts")


def _unique_impl(xp, a, *, part):
    flat = a.reshape(-1)
    values, index, inverse, counts = xp.unique(flat, return_index=True, return_inverse=True,
                                               return_counts=True, equal_nan=False)
    if part == "values":
        return values
    if part == "inverse":
        return inverse.reshape(a.shape).astype(np.int64, copy=False)
    return (index if part == "indices" else counts).astype(np.int64, copy=False)


def _unique_dtype(dtypes, attrs):
    if dtypes[0].kind not in "biuf":
        raise RuleError(f"cannot find the distinct values of {dtypes[0]}", DTypeError)
    return dtypes[0] if attrs["part"] == "values" else np.dtype(np.int64)


register(OpDef(
    name="unique", kind=OPAQUE, impl=_unique_impl, shape_rule=_data_dependent_rule,
    dtype_rule=_unique_dtype, data_dependent_shape=True, nondiff_inputs=(0,),
    doc="One part of the distinct values of x (part: values, indices, inverse, counts).",
))
