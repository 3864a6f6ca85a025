"""Grad mode: ``em.no_grad()``, ``em.enable_grad()``, ``em.is_grad_enabled()``.

The state itself is dispatch's (per thread, read on every op); these are the switches.
"""

from __future__ import annotations

import functools

from . import dispatch


class no_grad:  # noqa: N801 - used like PyTorch's
    """Context manager (and decorator) that turns autograd recording off."""

    def __enter__(self):
        self._previous = dispatch.set_grad_enabled(False)
        return self

    def __exit__(self, *exc):
        dispatch.set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)

        return wrapper


class enable_grad(no_grad):  # noqa: N801
    def __enter__(self):
        self._previous = dispatch.set_grad_enabled(True)
        return self


def is_grad_enabled() -> bool:
    return dispatch.grad_enabled()
