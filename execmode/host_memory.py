"""How the C library's allocator treats the arrays eager ops make (glibc only).

Every eager op returns a fresh NumPy array, and most of a training step's arrays are
freed again within the step. With glibc's defaults an array above the mmap threshold
(128 KiB at start, raised to the largest freed mapping, at most 32 MiB) is a fresh mapping,
and free memory at the top of the heap beyond the trim threshold (twice that) goes back to
the system at once: every step touches fresh pages again. A page fault costs a few
microseconds on these virtual machines, more than writing the page does: a small GPT's
eager training step took ~12,000 faults (~46 MB of fresh pages) and spent most of its time
in them, where PyTorch's step took none.

:func:`configure` (dispatch.py calls it once, at import) keeps arrays up to
``MMAP_THRESHOLD`` on the heap and keeps up to ``TRIM_THRESHOLD`` of free heap instead of
returning it, so the next step reuses warm pages. The price: a process may hold up to
``TRIM_THRESHOLD`` more resident memory than it uses (PyTorch's GPU caching allocator
makes the same trade on the GPU). ``EXECMODE_HOST_MALLOC=system`` leaves the allocator
alone; values and events are the same either way.
"""

from __future__ import annotations

import ctypes
import os
import sys

MMAP_THRESHOLD = 32 << 20   # arrays up to 32 MiB (glibc's own largest) from the heap
TRIM_THRESHOLD = 256 << 20  # free heap kept up to 256 MiB before it goes back
_M_TRIM_THRESHOLD = -1      # glibc's malloc.h
_M_MMAP_THRESHOLD = -3

# None before configure(); then "tuned", "system" (asked for) or why it was left alone.
state = None


def configure() -> str:
    """Set glibc's thresholds once per process (see the module's docstring); returns the
    state: "tuned", "system" or the reason nothing was changed."""
    global state
    if state is not None:
        return state
    if os.environ.get("EXECMODE_HOST_MALLOC", "").strip().lower() == "system":
        state = "system"
    elif not sys.platform.startswith("linux"):
        state = f"not glibc ({sys.platform})"
    else:
        state = _tune()
    return state


def _tune() -> str:
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        # glibc's, and so its mallopt's parameter numbers
        getattr(libc, "gnu_get_libc_version")  # noqa: B009
    except (OSError, AttributeError):
        return "not glibc"
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    if not (mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
            and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        return "mallopt refused"
    return "tuned"


__all__ = ["configure", "state"]
