"""A NumPy ufunc's own 1-d loop called directly: a jitted single op at eager's cost.

A jitted function of one elementwise op (``em.jit(lambda a, b: a + b)``) replays through
the C fast entry (fast_entry.py), whose step was the ufunc itself: ``np.add(a, b)``, with
NumPy's argument parsing, type resolution and error-state handling at every call. The
eager operator skips all of that (eager_operators.c calls the ufunc's loop for the dtype),
so after it a jitted ``a + b`` cost 3.4x the eager one (654 against 191 ns).
``Loop`` (in ``eager_operators.c``, beside the operators whose way it shares) does for the
fast entry what the eager operator does: for operands that are exact C-contiguous arrays
of one float dtype and one shape, or Python numbers, it allocates the output and runs the
loop from the ufunc's own table (NumPy's bits); any other call goes to the ufunc. The
extension is the eager operators' (built on first use, the kernel cache's ``extensions``
folder); without a compiler the step stays the ufunc.
"""

from __future__ import annotations

import numpy as np

from .eager_operators import load_extension


def direct_loop(ufunc, dtype):
    """``ufunc`` with its loop for ``dtype`` (float32/float64) called directly, or None
    (another dtype, a ufunc without such a loop, no extension)."""
    dtype = np.dtype(dtype)
    if not isinstance(ufunc, np.ufunc) or dtype not in (np.float32, np.float64) \
            or ufunc.nout != 1:
        return None
    ext = load_extension()
    if ext is None:
        return None
    try:
        return ext.Loop(ufunc, dtype)
    except ValueError:  # no loop whose every operand is this dtype (a comparison, ...)
        return None
