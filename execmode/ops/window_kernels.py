"""The C kernels of the sliding-window ops (max pooling, im2col, col2im), when there are
any: codegen/eager_windows.py builds them from native/windows.c and, at import, hands its
loader here (the ops cannot import codegen). The NumPy versions in pooling.py and conv.py
stay the reference: the C gives their bits, and runs only on float32/float64 NumPy arrays.
"""

from __future__ import annotations

import numpy as np

native_loader = None
_native = None           # the kernels, or False once the loader gave none


def kernels_for(xp, dtype):
    """The kernels for arrays of ``xp`` and ``dtype``, or None (then NumPy or CuPy)."""
    if xp is not np or (dtype != np.float32 and dtype != np.float64):
        return None
    return loaded()


def loaded():
    global _native
    if _native is None:
        if native_loader is None:
            return None
        try:
            _native = native_loader() or False
        except Exception:  # noqa: BLE001 - the NumPy version is always there
            _native = False
    return _native or None


def dims(planes, h, w, out_size, kernel, stride, padding, dilation) -> np.ndarray:
    """native/windows.c's dims array."""
    return np.array((planes, h, w, *out_size, *kernel, *stride, *padding, *dilation),
                    dtype=np.int64)
