"""Define Python functions from source text execmode generated itself (replays, guard
checks, kernel calls; never text from a user or a file).

CPython 3.11's ``compile()`` is not thread-safe (a shared AST recursion counter raises
"SystemError: AST constructor recursion depth mismatch" when two threads compile at once,
gh-106905), and two threads may trace jitted functions at the same time: compiles here
take a lock.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()


def define(source: str, filename: str, namespace: dict) -> dict:
    """Run generated ``source`` in ``namespace`` (which receives its definitions)."""
    with _lock:
        code = compile(source, filename, "exec")
    exec(code, namespace)  # noqa: S102 - our own generated source
    return namespace
