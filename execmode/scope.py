"""Named scopes: group ops by the part of the model that ran them ("mlp/fc1/relu").

Like PyTorch's module hierarchy in its profiler or ``jax.named_scope``: every op event and
graph node carries the scope path that was open when it was created.
"""

from __future__ import annotations

import functools

# The current path, kept as a single string so dispatch reads it with one global lookup.
_current = ""


def current_scope() -> str:
    return _current


class named_scope:  # noqa: N801 - a context manager used like a function, as in JAX
    """``with em.named_scope("encoder"): ...`` or ``@em.named_scope("encoder")``."""

    def __init__(self, name: str):
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"scope name must be a non-empty string without '/', got {name!r}")
        self.name = name
        self._saved: list[str] = []

    def __enter__(self):
        global _current
        self._saved.append(_current)
        _current = f"{_current}/{self.name}" if _current else self.name
        return self

    def __exit__(self, *exc):
        global _current
        _current = self._saved.pop()
        return False

    def __call__(self, fn):
        name = self.name

        @functools.wraps(fn)
        def scoped(*args, **kwargs):
            with named_scope(name):
                return fn(*args, **kwargs)

        return scoped
