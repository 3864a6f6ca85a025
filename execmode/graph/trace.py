"""The tracer: turns the ops a Python function runs into graph segments.

While a :class:`Tracer` is installed in dispatch, every op becomes a node instead of
running. Tensors created during the trace hold a :class:`TracedValue`. Tensors from outside
(weights, module parameters, an optimizer's state) become *captured* inputs, read by
reference at every call. In-place updates of inputs become assign nodes; writes to a
captured tensor's ``.grad`` are tracked as graph state.

When Python needs a concrete value (``bool``, ``item``, ``numpy``, ``print``, iteration, an
op whose output shape depends on values) the pending segment is compiled and run, every
live traced tensor receives its value, a :class:`GraphBreak` is recorded, and tracing goes
on in a new segment.

The Tracer's parts, one concept each: binding.py (inputs and ops become nodes),
functionalization.py (in-place writes and ``.grad`` as graph state), segments.py (segments,
graph breaks, the end of a trace); the values it hands out are in traced_value.py.
"""

from __future__ import annotations

import weakref

from .. import dispatch
from .._tensor import Tensor
from .binding import Binding
from .functionalization import Functionalization
from .segments import GraphBreak, Segment, SegmentBuilder, Segmenting


class Tracer(Binding, Functionalization, Segmenting):
    """Traces one call of a function. ``run_segment(segment, arrays)`` compiles
    (with caching) and runs a finished segment; the jit object provides it.

    State follows eager mode exactly (docs/graph-mode.md, "Semantics"): every tensor is a
    :class:`Storage` plus a view chain; an in-place write becomes a functional update of
    its storage (scattered back through the view chain), later reads of any view of that
    storage are recomputed from the new value, and a written argument or capture is
    written back into its array at the end of the segment (an assign node)."""

    def __init__(self, name: str, run_segment, capture_labels=None, fullgraph=False,
                 execute=True, signature: str = "", graph_prefix: str = "",
                 previous_segments=()):
        self.name = name
        self.signature = signature
        self.prefix = graph_prefix or name
        self.run_segment = run_segment
        self.capture_labels = capture_labels or {}
        self.fullgraph = fullgraph
        self.execute = execute
        self.segments: list[Segment] = []
        self.breaks: list[GraphBreak] = []
        self.baked: list[GraphBreak] = []    # on_break="bake": values frozen into the graph
        self.live: list[weakref.ref] = []
        # Tensors of ``live`` made concrete by a graph break, set apart so that breaks
        # walk only the traced ones (the backward's rebinding walks both).
        self.settled: list[weakref.ref] = []
        # Real (untraced) tensors written in place: traced until the segment ends.
        self.assigned: dict[int, tuple[Tensor, object]] = {}  # target -> original array
        self.stand_in_of: dict[int, Tensor] = {}             # arg stand-in -> user's tensor
        self.grad_state: dict[int, list] = {}                # id(owner) -> [owner, grad]
        # owner -> (owner, grad was None?, (array type, shape, dtype) of a tensor grad)
        self.grad_guards: dict[int, tuple] = {}
        self.grad_owner_of: dict[int, Tensor] = {}           # id(grad tensor) -> owner
        self.grad_read: dict[int, object] = {}               # owner -> the grad first read
        self.stand_in_index: dict[int, int] = {}             # stand-in -> its leaf index
        self.user_stand_in: dict[int, Tensor] = {}           # user's arg tensor -> stand-in
        self.layout_args: set[int] = set()                   # leaves whose strides mattered
        # Arrays a graph break handed out as views of another: (root, steps, the view).
        self.break_views: dict[int, tuple[object, tuple]] = {}
        # Captures that were an argument's memory in this call, and those that were not:
        # replays must see the same pattern (guards), since writes go through one input.
        self.arg_aliases: dict[int, tuple[Tensor, int]] = {}
        self.captures_seen: dict[int, Tensor] = {}
        self.wrote_inputs = False
        self.non_leaf_args: list[int] = []   # arguments with a history (a guard keeps it)
        # Captures about to be written, with their autograd flags before (assign can make
        # them take a history): the replays set the flags the trace left.
        self.flags_before: dict[int, tuple[Tensor, bool, bool]] = {}
        self.dynamic_reads: set = set()      # (id(holder), name) read as symbolic numbers
        self.scalar_guards: list = []        # (read, expected, label) of concrete uses
        self.scalar_sources: list = []
        # Dynamic dimensions traced as symbolic sizes (symbolic_sizes.py): leaf index ->
        # {dim: SymInt}, and the environment recording their comparisons' answers.
        self.symbolic_dims: dict = {}
        self.size_env = None
        # The segments the previous call of this signature traced: while this call traces
        # the same nodes, their types and compiled plans serve (graph/segment_match.py).
        self.previous_segments = list(previous_segments)
        self._builder = SegmentBuilder(f"{self.prefix}:0", 0, self.previous_segment(0))
        self._previous = None
        self.finished = False

    # --- installation ------------------------------------------------------------------
    def __enter__(self):
        self._previous = dispatch.set_tracer(self)
        return self

    def __exit__(self, *exc):
        dispatch.set_tracer(self._previous)
        return False


__all__ = ["Tracer"]
