"""Define Python functions from source text execmode generated itself (replays, guard
checks, kernel calls; never text from a user or a file).

CPython 3.11's ``compile()`` is not thread-safe (a shared AST recursion counter raises
"SystemError: AST constructor recursion depth mismatch" when two threads compile at once,
gh-106905; ``ast.parse`` and 3.11's traceback formatting, which parses the failing line
for its carets, share that counter), and two threads may trace jitted functions at the
same time: compiles here take ``ast_lock``, which other AST builders can hold too.
"""

from __future__ import annotations

import threading

ast_lock = threading.RLock()


def define(source: str, filename: str, namespace: dict) -> dict:
    """Run generated ``source`` in ``namespace`` (which receives its definitions)."""
    # Warnings raised in generated code (NumPy's float warnings) are execmode's, silenced
    # as eager ops' are (dispatch.py's filter matches the module name).
    namespace.setdefault("__name__", "execmode.generated")
    with ast_lock:
        code = compile(source, filename, "exec")
    exec(code, namespace)  # noqa: S102 - our own generated source
    return namespace
