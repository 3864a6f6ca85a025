"""Named scopes: group ops by the part of the model that ran them ("mlp/fc1/relu").

Like PyTorch's module hierarchy in its profiler or ``jax.named_scope``: every op event and
graph node carries the scope path that was open when it was created.
"""

from __future__ import annotations

import functools
import threading


class _ScopeState(threading.local):
    # The current path of this thread, one string, so dispatch reads it in one lookup.
    # Per thread: two threads opening scopes (backward in both) must not see each other's.
    current = ""


_state = _ScopeState()


def current_scope() -> str:
    return _state.current


class named_scope:  # noqa: N801 - a context manager used like a function, as in JAX
    """``with em.named_scope("encoder"): ...`` or ``@em.named_scope("encoder")``."""

    def __init__(self, name: str):
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"scope name must be a non-empty string without '/', got {name!r}")
        self.name = name
        self._saved: list[str] = []

    def __enter__(self):
        current = _state.current
        self._saved.append(current)
        _state.current = f"{current}/{self.name}" if current else self.name
        return self

    def __exit__(self, *exc):
        _state.current = self._saved.pop()
        return False

    def __call__(self, fn):
        name = self.name
        state = _state

        @functools.wraps(fn)
        def scoped(*args, **kwargs):
            # What ``with named_scope(name)`` does, without building a context manager per
            # call: composites (linear, relu, softmax) run this on every call, and the
            # object, its checks and two method calls were a fifth of an eager MLP forward.
            saved = state.current
            state.current = f"{saved}/{name}" if saved else name
            try:
                return fn(*args, **kwargs)
            finally:
                state.current = saved

        return scoped
