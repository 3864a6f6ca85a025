"""Every jitted function of the process, for ``execmode explain SCRIPT``, the recorder and
the path switches (paths.py rebuilds their replays).

Held weakly, except inside ``keep_jit_functions``: while ``execmode explain`` runs a
script it holds every jitted function made, since a step jitted inside a loop body or a
helper is garbage before the report (issue 38).
"""

from __future__ import annotations

import itertools
import weakref

_registry: weakref.WeakSet = weakref.WeakSet()
_kept: list | None = None
_creation_order = itertools.count()


def register(jitted) -> int:
    """Note a new jitted function; returns its place in creation order."""
    _registry.add(jitted)
    if _kept is not None:
        _kept.append(jitted)
    return next(_creation_order)


def all_jit_functions() -> list:
    """Every live jitted function, in creation order (with ``keep_jit_functions``
    active, every one made meanwhile, live or not)."""
    found = set(_registry) | set(_kept or ())
    return sorted(found, key=lambda f: f._created)


class keep_jit_functions:  # noqa: N801 - a context manager
    """Hold every jitted function created inside the block, so that a report made after
    it (``execmode explain SCRIPT``) lists those the script no longer references."""

    def __enter__(self):
        global _kept
        self._previous, _kept = _kept, []
        return self

    def __exit__(self, *exc):
        global _kept
        _kept = self._previous
        return False


def forget(jitted) -> None:
    """Leave ``jitted`` out of the reports (em.explain's throwaway copies)."""
    _registry.discard(jitted)
    if _kept is not None and jitted in _kept:
        _kept.remove(jitted)
