"""The door from the function API to dispatch: ``apply`` (an OpDef and its inputs) and
``apply_op`` (an op by its name, as the vjp rules in ``ops/`` call it)."""

from __future__ import annotations

import numpy as np

from ..dispatch import apply, plain_arrays, plain_tensor
from ..ops import OPS

# Views a backward pass makes for nearly every node (a reshape, a transpose, a broadcast of
# a gradient): with nobody watching (dispatch.plain_arrays) their impl runs on the array at
# once, the NumPy call apply would make, without apply's general path.
_PLAIN_VIEWS = frozenset(("reshape", "permute_dims", "broadcast_to"))
_RESHAPE_IMPL = OPS["reshape"].impl  # the registered one (a test may put another in place)


def apply_op(name: str, *inputs, **attrs):
    """Dispatch a primitive by name (used by vjp rules)."""
    op = OPS[name]
    if name in _PLAIN_VIEWS and len(inputs) == 1:
        arrays = plain_arrays(inputs[0])
        if arrays is not None:
            try:
                if op.impl is _RESHAPE_IMPL:  # np.reshape's own call, without its wrapper
                    return plain_tensor(arrays[0].reshape(attrs["shape"]))
                return plain_tensor(op.impl(np, arrays[0], **attrs))
            except Exception:  # noqa: BLE001 - the op runs again and explains it
                pass
    return apply(op, *inputs, **attrs)
