"""The C kernels of the sliding-window ops (max pooling, im2col, col2im), when there are
any: codegen/eager_windows.py builds them from native/windows.c and, at import, hands its
loader to ``NATIVE`` (native_kernels.py: the ops cannot import codegen). The NumPy
versions in pooling.py and conv.py stay the reference: the C gives their bits, and runs
only on float32/float64 NumPy arrays.
"""

from __future__ import annotations

import numpy as np

from .native_kernels import NativeKernels

NATIVE = NativeKernels()  # from the first call


def kernels_for(xp, dtype):
    """The kernels for arrays of ``xp`` and ``dtype``, or None (then NumPy or CuPy)."""
    if xp is not np or (dtype != np.float32 and dtype != np.float64):
        return None
    return NATIVE.get()


def dims(planes, h, w, out_size, kernel, stride, padding, dilation) -> np.ndarray:
    """native/windows.c's dims array."""
    return np.array((planes, h, w, *out_size, *kernel, *stride, *padding, *dilation),
                    dtype=np.int64)
