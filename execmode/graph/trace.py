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
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from .. import dispatch, instrument
from .. import scope as _scope
from ..errors import GraphBreakError, op_error
from ..ops.registry import Aval, RuleError, infer_aval
from ..source import SourceLocation, user_location
from ..tensor import Tensor
from .ir import ASSIGN, INPUT, Graph, Literal, Node, make_attrs
from .verify import verify


class TracedValue:
    """What a tensor holds while traced: the node that will compute it."""

    __slots__ = ("tracer", "node_id", "shape", "dtype", "em_device", "__weakref__")

    def __init__(self, tracer, node_id, shape, dtype, device):
        self.tracer = tracer
        self.node_id = node_id
        self.shape = shape
        self.dtype = dtype
        self.em_device = device

    def materialize(self, tensor: Tensor, reason: str):
        return self.tracer.materialize(tensor, reason)

    def adopt(self, tensor: Tensor) -> None:
        self.tracer.adopt(tensor)

    def __repr__(self) -> str:
        return f"%{self.node_id}"


class LeakedValue:
    """A traced tensor that outlived its trace without being an output (JAX's
    UnexpectedTracerError): any use says so instead of failing obscurely."""

    __slots__ = ("shape", "dtype", "em_device", "where")

    def __init__(self, value: TracedValue, where: str):
        self.shape, self.dtype, self.em_device = value.shape, value.dtype, value.em_device
        self.where = where

    def materialize(self, tensor, reason):
        raise GraphBreakError(
            f"{reason} on a tensor created while tracing {self.where} that escaped the trace "
            "(stored in a global or attribute). Graph mode runs Python only while tracing; "
            "return the tensor from the jitted function instead."
        )

    def adopt(self, tensor) -> None:
        pass


@dataclass
class GraphBreak:
    """Why a graph broke, where in the user's code, and the segments on either side."""

    reason: str
    op: str
    filename: str
    lineno: int
    function: str
    segment_before: int
    segment_after: int

    def __str__(self) -> str:
        return (f"graph break in {self.function} at {self.filename}:{self.lineno}: {self.reason}"
                f" (op {self.op}; segment {self.segment_before} -> {self.segment_after})")

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class InputSource:
    """Where a graph input's value comes from at each call."""

    kind: str                   # "arg" | "capture" | "grad"
    label: str
    leaf_index: int = -1        # arg: position among the flattened argument leaves
    tensor: Tensor | None = None  # capture: the tensor read by reference; grad: its owner

    def read(self, leaves):
        if self.kind == "arg":
            return leaves[self.leaf_index]._data
        if self.kind == "capture":
            return self.tensor._data
        # "grad": of an argument (this call's tensor at that position) or of a capture.
        owner = leaves[self.leaf_index] if self.leaf_index >= 0 else self.tensor
        return owner._grad._data


@dataclass
class Segment:
    """One traced piece of a function: its graph and where its inputs come from."""

    index: int
    graph: Graph
    sources: list[InputSource]
    output_tensors: list = field(default_factory=list)
    compiled: object = None     # the CompiledSegment used to run it


class _Builder:
    """Accumulates the nodes of the current segment."""

    def __init__(self, name: str, first_id: int):
        self.graph = Graph(name)
        self.next_id = first_id
        self.sources: list[InputSource] = []
        self.captured: dict[int, tuple[Tensor, int, object]] = {}  # id -> (tensor, node, array)

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def add(self, node: Node) -> Node:
        self.graph.nodes.append(node)
        return node

    def add_input(self, aval: Aval, source: InputSource) -> int:
        node_id = self.new_id()
        kind = "capture" if source.kind != "arg" else "arg"
        self.add(Node(node_id, INPUT, (), make_attrs({"kind": kind}), tuple(aval.shape),
                      aval.dtype, str(aval.device), label=source.label))
        self.graph.inputs.append(node_id)
        self.sources.append(source)
        return node_id


class Tracer:
    """Traces one call of a function. ``run_segment(graph, sources, arrays)`` compiles
    (with caching) and runs a finished segment; the jit object provides it."""

    def __init__(self, name: str, run_segment, capture_labels=None, fullgraph=False,
                 execute=True, signature: str = "", graph_prefix: str = ""):
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
        self.origin: dict[int, tuple[Tensor, int]] = {}     # in-place targets -> input node
        self.assigned: dict[int, tuple[Tensor, object]] = {}  # target -> original array
        self.stand_in_of: dict[int, Tensor] = {}             # arg stand-in -> user's tensor
        self.grad_state: dict[int, list] = {}                # id(owner) -> [owner, grad]
        self.grad_guards: dict[int, tuple[Tensor, bool]] = {}  # owner -> grad was None?
        self.grad_owner_of: dict[int, Tensor] = {}           # id(grad tensor) -> owner
        self.grad_read: dict[int, object] = {}               # owner -> the grad first read
        self.stand_in_index: dict[int, int] = {}             # stand-in -> its leaf index
        self.user_stand_in: dict[int, Tensor] = {}           # user's arg tensor -> stand-in
        self.assigned_ever: set[int] = set()                 # every tensor an assign wrote
        self.ran_backward = False                            # backward ran inside the trace
        self._builder = _Builder(f"{self.prefix}:0", 0)
        self._previous = None
        self.finished = False

    # --- installation ------------------------------------------------------------------
    def __enter__(self):
        self._previous = dispatch.set_tracer(self)
        return self

    def __exit__(self, *exc):
        dispatch.set_tracer(self._previous)
        return False

    # --- inputs ------------------------------------------------------------------------
    def stand_in(self, tensor: Tensor, leaf_index: int, label: str) -> Tensor:
        """A traced stand-in for an argument leaf (the function sees it instead)."""
        aval = Aval(tensor.shape, tensor.dtype, tensor.device)
        node_id = self._builder.add_input(aval, InputSource("arg", label, leaf_index=leaf_index))
        t = self._new_tensor(node_id, aval)
        t.requires_grad = tensor.requires_grad
        self.origin[id(t)] = (t, node_id)
        self.stand_in_of[id(t)] = tensor
        self.stand_in_index[id(t)] = leaf_index
        self.user_stand_in[id(tensor)] = t
        self._builder.captured[id(t)] = (t, node_id, tensor._data)
        return t

    def owner_ref(self, owner: Tensor):
        """How a replay finds ``owner`` again: ("arg", leaf index) for an argument's
        stand-in (this call's tensor at that position), else the tensor itself."""
        index = self.stand_in_index.get(id(owner))
        return ("arg", index) if index is not None else owner

    def _capture(self, tensor: Tensor) -> int:
        b = self._builder
        hit = b.captured.get(id(tensor))
        if hit is not None:
            return hit[1]
        stand_in = self.user_stand_in.get(id(tensor))
        if stand_in is not None and _traced_by(stand_in, self):
            # The function also reads, as a global, a tensor it got as an argument: one
            # value, so that an in-place update through either name is seen by both.
            return stand_in._data.node_id
        owner = self.grad_owner_of.get(id(tensor))
        if owner is not None:
            user = self.stand_in_of.get(id(owner), owner)
            source = InputSource("grad", f"{self._label(user)}.grad", tensor=user,
                                 leaf_index=self.stand_in_index.get(id(owner), -1))
        else:
            source = InputSource("capture", self._label(tensor), tensor=tensor)
        aval = Aval(tensor.shape, tensor.dtype, tensor.device)
        node_id = b.add_input(aval, source)
        b.captured[id(tensor)] = (tensor, node_id, tensor._data)
        self.origin[id(tensor)] = (tensor, node_id)
        return node_id

    def _label(self, tensor: Tensor) -> str:
        name = self.capture_labels.get(id(tensor))
        if name:
            return name
        return f"capture {len(self._builder.sources)}"

    def _ref(self, x):
        """The graph operand for a dispatch input."""
        if isinstance(x, Tensor):
            d = x._data
            if d.__class__ is TracedValue and d.tracer is self:
                return d.node_id
            if d.__class__ is LeakedValue:
                d.materialize(x, "use")
            return self._capture(x)
        if isinstance(x, np.generic):
            return Literal(x.item())
        return Literal(x)

    def _new_tensor(self, node_id: int, aval: Aval) -> Tensor:
        t = object.__new__(Tensor)
        t._data = TracedValue(self, node_id, tuple(aval.shape), aval.dtype, aval.device)
        t.requires_grad = False
        self.live.append(weakref.ref(t))
        return t

    def adopt(self, tensor: Tensor) -> None:
        """A tensor sharing a traced value (detach, saved outputs) is live too."""
        self.live.append(weakref.ref(tensor))

    # --- ops ---------------------------------------------------------------------------
    def bind(self, op, inputs, attrs):
        dispatch.check_inputs(op, inputs)
        if op.data_dependent_shape:
            return self._run_between_segments(op, inputs, attrs)
        if op.name == ASSIGN:
            return self._assign(*inputs)
        operands = []
        for x in inputs:
            operands.append(Aval(x.shape, x.dtype, x.device) if isinstance(x, Tensor)
                            else (x.item() if isinstance(x, np.generic) else x))
        device = None if any(isinstance(x, Tensor) for x in inputs) else _attr_device(attrs)
        try:
            aval = infer_aval(op, operands, attrs, device)
        except RuleError as exc:
            raise op_error(exc.cls, op.name, inputs, exc.problem) from None
        if instrument._before_op:
            instrument.op_started(op, inputs, attrs)
        refs = tuple(self._ref(x) for x in inputs)
        node_id = self._builder.new_id()
        self._builder.add(Node(node_id, op.name, refs, make_attrs(attrs), tuple(aval.shape),
                               aval.dtype, str(aval.device), _scope._current, user_location()))
        t = self._new_tensor(node_id, aval)
        if dispatch._grad_enabled and op.vjp is not None:
            for x in inputs:
                if isinstance(x, Tensor) and x.requires_grad:
                    from ..autograd import GradNode

                    saved = None
                    if op.saves_output:
                        saved = object.__new__(Tensor)
                        saved._data = t._data
                        saved.requires_grad = False
                        self.adopt(saved)
                    t._grad_fn = GradNode(op, inputs, attrs, saved)
                    t.requires_grad = True
                    break
        return t

    def _assign(self, target: Tensor, value):
        """``target[...] = value``: an assign node if target is an input, else a rebinding."""
        if not isinstance(value, Tensor):
            from .. import functional as F

            value = F.full(target.shape, value, dtype=target.dtype, device=target.device)
        elif value.dtype != target.dtype:
            from .. import functional as F

            value = F.astype(value, target.dtype)
        value_ref = self._ref(value)
        d = target._data
        traced_here = d.__class__ is TracedValue and d.tracer is self
        entry = self.origin.get(id(target))
        if entry is None and not traced_here:
            self._capture(target)
            entry = self.origin[id(target)]
        self.assigned_ever.add(id(target))
        if entry is not None:
            b = self._builder
            if id(target) not in self.assigned:
                original = b.captured[id(target)][2]
                self.assigned[id(target)] = (target, original)
            node_id = b.new_id()
            b.add(Node(node_id, ASSIGN, (entry[1], value_ref), (), tuple(target.shape),
                       target.dtype, str(target.device), _scope._current, user_location()))
        # Later reads of target inside the trace see the new value.
        target._data = TracedValue(self, value_ref, tuple(target.shape), target.dtype,
                                   target.device) if isinstance(value_ref, int) else target._data
        self.adopt(target)
        return target

    # --- .grad as graph state ----------------------------------------------------------
    def read_grad(self, owner: Tensor):
        state = self.grad_state.get(id(owner))
        if state is None:
            user = self.stand_in_of.get(id(owner), owner)
            grad = user._grad
            # Read before any write: the trace assumed this grad's None-ness (a guard).
            self.grad_guards[id(owner)] = (owner, grad is None)
            self.grad_state[id(owner)] = state = [owner, grad]
            self.grad_read[id(owner)] = grad
            if grad is not None:
                self.grad_owner_of[id(grad)] = owner
        return state[1]

    def write_grad(self, owner: Tensor, value) -> None:
        state = self.grad_state.get(id(owner))
        if state is None:
            self.grad_state[id(owner)] = [owner, value]
        else:
            state[1] = value

    # --- graph breaks --------------------------------------------------------------------
    def materialize(self, tensor: Tensor, reason: str):
        d = tensor._data
        if d.__class__ is not TracedValue or d.tracer is not self:
            return d.materialize(tensor, reason) if hasattr(d, "materialize") else d
        op = self._builder.graph.node(d.node_id).op if d.node_id is not None else "?"
        if self.fullgraph == "bake":
            return self._bake(tensor, f"{reason} needs a concrete value", op)
        self._graph_break(f"{reason} needs a concrete value", op)
        return tensor._data

    def _bake(self, tensor: Tensor, reason: str, op: str):
        """A plain tracer's answer (torch.jit.trace's): compute the value from this call's
        inputs, hand it to Python, and keep tracing as if it were a constant. The graph then
        holds only the branch this call took; replays with other inputs follow it silently.
        Kept only to show that pitfall next to graph breaks; every bake is recorded."""
        from .interpret import interpret

        b = self._builder
        arrays = [arr for _, _, arr in _ordered_captures(b)]
        node_id = tensor._data.node_id
        value = interpret(b.graph.copy(outputs=[node_id]), arrays, stop_at=node_id)[node_id]
        loc = user_location() or SourceLocation("?", 0, "?")
        self.baked.append(GraphBreak(f"{reason} (baked at trace time)", op, loc.filename,
                                     loc.lineno, loc.function, len(self.segments),
                                     len(self.segments)))
        return value

    def _graph_break(self, reason: str, op: str) -> None:
        loc = user_location() or SourceLocation("?", 0, "?")
        if self.fullgraph is True or self.fullgraph == "error":
            raise GraphBreakError(
                f"graph break in {self.name} (fullgraph=True): {reason} (op {op})\n  at {loc}"
            )
        if not self.execute:
            # .trace() without running: a concrete value is needed, so segments must run.
            self.execute = True
        before = len(self.segments)
        self._end_segment(final_outputs=None)
        brk = GraphBreak(reason, op, loc.filename, loc.lineno, loc.function, before, before + 1)
        self.breaks.append(brk)
        if instrument._on_event:
            instrument.emit(instrument.Event("graph_break", {
                "function": self.name, "graph_id": f"{self.prefix}:{before}", "reason": reason,
                "op": op, "location": loc, "segment_before": before,
                "segment_after": before + 1,
            }, time.perf_counter_ns(), time.perf_counter_ns()))

    def _run_between_segments(self, op, inputs, attrs):
        """An op whose output shape depends on values: break, run it eagerly, go on."""
        if any(isinstance(x, Tensor) and x._data.__class__ is TracedValue for x in inputs):
            self._graph_break(f"{op.name} has a data-dependent output shape", op.name)
        previous = dispatch.set_tracer(None)
        try:
            return dispatch.run_eager(op, inputs, attrs)
        finally:
            dispatch.set_tracer(previous)

    # --- segments ----------------------------------------------------------------------
    def _live_tensors(self) -> list[Tensor]:
        out, seen = [], set()
        for ref in self.live:
            t = ref()
            if t is None or id(t) in seen:
                continue
            d = t._data
            if d.__class__ is TracedValue and d.tracer is self:
                seen.add(id(t))
                out.append(t)
        return out

    def _end_segment(self, final_outputs) -> Segment:
        """Close the current segment. Breaks output every live tensor; the final segment
        outputs what the function returns plus grad state."""
        b = self._builder
        if final_outputs is None:
            out_tensors = self._live_tensors()
        else:
            out_tensors, seen = [], set()
            for t in final_outputs:  # one tensor may be returned and also be a .grad
                if _traced_by(t, self) and id(t) not in seen:
                    seen.add(id(t))
                    out_tensors.append(t)
        node_ids: list[int] = []
        for t in out_tensors:
            if t._data.node_id not in node_ids:
                node_ids.append(t._data.node_id)
        b.graph.outputs = node_ids
        verify(b.graph, "tracing")
        segment = Segment(len(self.segments), b.graph, b.sources, out_tensors)
        self.segments.append(segment)
        if instrument._on_event:
            instrument.emit(instrument.Event("trace", {
                "function": self.name, "graph_id": b.graph.name, "segment": segment.index,
                "signature": self.signature, "node_count": len(b.graph.op_nodes),
                "location": _first_location(b.graph),
            }, time.perf_counter_ns(), time.perf_counter_ns()))
        if self.execute:
            arrays = [src_array for _, _, src_array in _ordered_captures(b)]
            outputs = self.run_segment(segment, arrays)
            values = dict(zip(node_ids, outputs))
            for t in out_tensors:
                t._data = values[t._data.node_id]
        for target, original in self.assigned.values():
            # Executed: the plan's assigns updated the original buffer in place.
            # Only traced: the target is left exactly as it was.
            target._data = original
        self.assigned.clear()
        # The next segment starts with fresh inputs; ids keep counting so they stay unique.
        self._builder = _Builder(f"{self.prefix}:{len(self.segments)}", b.next_id)
        self.origin.clear()
        return segment

    def abort(self) -> None:
        """The traced function raised: leave every tensor as the user had it."""
        for target, original in self.assigned.values():
            target._data = original
        self.assigned.clear()
        for t in self._live_tensors():
            t._data = LeakedValue(t._data, self.name)
        self.finished = True

    def finish(self, outputs: list[Tensor], grad_outputs: list[Tensor]) -> Segment:
        """End the trace: the last segment outputs ``outputs`` and the traced grads."""
        segment = self._end_segment(final_outputs=outputs + grad_outputs)
        # Anything else still traced escaped the function: poison it with a clear error.
        for t in self._live_tensors():
            t._data = LeakedValue(t._data, self.name)
        self.finished = True
        return segment


def _first_location(graph: Graph):
    return next((n.loc for n in graph.nodes if n.loc is not None), None)


def _traced_by(t, tracer) -> bool:
    return isinstance(t, Tensor) and t._data.__class__ is TracedValue and t._data.tracer is tracer


def _ordered_captures(builder: _Builder):
    by_node = {node_id: (t, node_id, arr) for t, node_id, arr in builder.captured.values()}
    return [by_node[i] for i in builder.graph.inputs]


def _attr_device(attrs):
    from ..backend import as_device

    return as_device(attrs.get("device"))




__all__ = ["GraphBreak", "InputSource", "LeakedValue", "Segment", "TracedValue", "Tracer"]
