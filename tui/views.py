"""The views: their names (the app's modes), keys and titles, in one table. Ranks is
there for a run folder of ranks only (``only_ranks``): the view bar leaves it out
elsewhere, and its key says what it is for."""

from __future__ import annotations

from typing import NamedTuple


class View(NamedTuple):
    name: str        # the app mode
    key: str         # the key that opens it
    title: str
    about: str       # one line for the help screen and the command palette
    only_ranks: bool = False  # shown in the view bar for a run folder of ranks only


VIEWS = (
    View("ops", "1", "Ops", "executed ops and kernels, the source line, the paused op, stack"),
    View("tensor", "2", "Tensor", "inspect a tensor: stats, NaN/Inf, histogram, a value slice"),
    View("graph", "3", "Graph", "jitted functions, signatures, segments, IR, retraces"),
    View("breaks", "4", "Breaks", "graph breaks with reason and line; eager ops between"),
    View("passes", "5", "Passes", "each pass's graph, coloured diff, rewrites one by one"),
    View("kernels", "6", "Kernels", "fused kernels, member ops, generated source"),
    View("profile", "7", "Profile", "eager vs graph, top ops, memory, timing, py-spy"),
    View("breakpoints", "8", "Breakpoints", "add, enable, disable, delete; hit counts"),
    View("output", "9", "Output", "the script's stdout and stderr"),
    View("ranks", "0", "Ranks", "a run folder's ranks side by side: one timeline, op times, "
         "who they waited for", only_ranks=True),
)
VIEW_BY_NAME = {v.name: v for v in VIEWS}
