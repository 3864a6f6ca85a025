"""C kernels an op may use, loaded when first needed.

The ops cannot import codegen (the layers: docs/architecture.md), which builds the C: at
import, codegen/eager_operators.py hands each holder its loader. A holder asks the loader
once (optionally only after a few calls that could use the kernels, so that a script
calling an op once pays no compile) and keeps what it gave: the kernels, or "none" for the
rest of the process, when there is no compiler or the build failed; the NumPy version
always runs then, and the C gives its bits.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager


class NativeKernels:
    """One op family's C kernels: ``get()`` is the kernels or None."""

    __slots__ = ("loader", "after_calls", "_kernels", "_calls_left", "_lock",
                 "_looked_for_built")

    def __init__(self, after_calls: int = 1):
        # Set by codegen at import: ``loader()`` gives the kernels or None, compiling them
        # where needed; ``loader(build=False)`` (asked by built()) only a build already there.
        self.loader = None
        self.after_calls = after_calls
        self._kernels = None         # the kernels, or False once the loader gave none
        self._calls_left = after_calls
        self._lock = threading.Lock()  # one thread builds them; the others wait for it
        self._looked_for_built = False  # built() asked the loader for a build already there

    def get(self):
        kernels = self._kernels
        if kernels is None:
            if self.loader is None:
                return None
            with self._lock:
                kernels = self._kernels
                if kernels is None:
                    self._calls_left -= 1
                    if self._calls_left > 0:
                        return None
                    try:
                        kernels = self._kernels = self.loader() or False
                    except Exception:  # noqa: BLE001 - the NumPy version is always there
                        kernels = self._kernels = False
        return kernels or None

    def built(self):
        """The kernels where they need no compile: loaded already, or built on this
        machine before (the loader asked once with ``build=False``); else None. A call too
        small to be worth a compile may still use kernels that are there."""
        kernels = self._kernels
        if kernels is None and self.loader is not None and not self._looked_for_built:
            with self._lock:
                if self._kernels is None and not self._looked_for_built:
                    self._looked_for_built = True
                    try:
                        self._kernels = self.loader(build=False) or None
                    except Exception:  # noqa: BLE001 - the NumPy version is always there
                        pass
            kernels = self._kernels
        return kernels or None

    @property
    def gave_none(self) -> bool:
        """Did the loader give no kernels (asked once, for the whole process)?"""
        return self._kernels is False

    @contextmanager
    def withheld(self):
        """The NumPy versions only, inside the block (tests compare the two)."""
        saved = self._kernels
        self._kernels = False
        try:
            yield
        finally:
            self._kernels = saved
