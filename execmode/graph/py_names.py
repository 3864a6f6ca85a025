"""Which Python name held which traced value: the debugger's Variables pane inside em.jit.

A stop inside a jitted function (a kernel, a NaN after one) has no Python frame of the
function to show: the function ran once, at trace time, and the graph runs now. So while
a debugger listens (a listener before ops: ``instrument._before_op``), every op the tracer
binds also notes which names of the user's frames hold this trace's tensors at that
moment, as ``graph.meta["py_names"]``: ``"function:name" -> node id``, the last binding
of a name winning. A name is seen at the op after its assignment, so one bound by the
last statement before ``return`` is not (the function's result is the graph's output).
The debugger recomputes each name's node from the segment's saved inputs (inspection.py).
"""

from __future__ import annotations

import sys

from .._tensor import Tensor
from ..source import is_internal_file

KEY = "py_names"
_MAX_FRAMES = 32   # user frames walked out from an op (the function and its helpers)


def note_names(tracer, graph) -> None:
    """Record, in ``graph.meta``, the user's names that hold ``tracer``'s tensors now."""
    names = graph.meta.setdefault(KEY, {})
    f = sys._getframe(2)
    walked = 0
    while f is not None and walked < _MAX_FRAMES:
        code = f.f_code
        if not is_internal_file(code.co_filename):
            walked += 1
            for name, value in f.f_locals.items():
                if isinstance(value, Tensor):
                    data = value._data
                    if getattr(data, "tracer", None) is tracer:
                        names[f"{code.co_name}:{name}"] = data.node_id
        f = f.f_back


def names_of(graph) -> dict[str, int]:
    """``"function:name" -> node id`` of a traced graph (empty when nobody debugged)."""
    return dict(graph.meta.get(KEY) or {})
