"""Segments and graph breaks: the pieces a trace is cut into, and the cutting.

A :class:`Segment` is a traced graph and where its inputs come from at each call
(:class:`InputSource`). When Python needs a concrete value of a traced tensor, the tracer
ends the pending segment (:class:`Segmenting`), runs it, hands every live traced tensor its
value as the same NumPy view eager would hold, records a :class:`GraphBreak`, and goes on
in a new segment. ``finish`` ends the last one and says how a call rebuilds each result.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .. import dispatch, instrument
from .. import scope as _scope
from .._tensor import Tensor
from ..backend import CPU
from ..errors import GraphBreakError
from ..ops.registry import OPS, Aval
from ..source import SourceLocation, user_location
from .ir import ASSIGN, INPUT, Graph, Node, make_attrs
from .segment_match import matched_segment, same_node
from .traced_value import LeakedValue, Storage, TracedValue, traced_by
from .verify import VERIFIED, verify
from .views import replay


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

    kind: str                   # "arg" | "capture" | "grad" | "scalar"
    label: str
    leaf_index: int = -1        # arg: position among the flattened argument leaves
    tensor: Tensor | None = None  # capture: the tensor read by reference; grad: its owner
    scalar: object = None       # scalar: the SymbolicScalar (its read() gives the number)
    dtype: object = None        # scalar: the dtype eager casts the number to

    def read(self, leaves):
        if self.kind == "arg":
            return leaves[self.leaf_index]._data
        if self.kind == "capture":
            return self.tensor._data
        if self.kind == "scalar":
            return np.asarray(self.scalar.read(), dtype=self.dtype)
        # "grad": of an argument (this call's tensor at that position) or of a capture.
        owner = leaves[self.leaf_index] if self.leaf_index >= 0 else self.tensor
        return owner._grad._data


@dataclass
class Segment:
    """One traced piece of a function: its graph and where its inputs come from."""

    index: int
    graph: Graph
    sources: list[InputSource]
    compiled: object = None     # the CompiledSegment used to run it
    backend: object = None      # the kernel backend it was compiled for
    avals: dict = field(default_factory=dict)  # op node id -> its result's Aval
    # The previous call's segment, when this one is node for node the same (its compiled
    # plan serves); cleared once run, so that calls do not chain their segments.
    same_as: Segment | None = None


_ARG_ATTRS = make_attrs({"kind": "arg"})
_CAPTURE_ATTRS = make_attrs({"kind": "capture"})


class SegmentBuilder:
    """Accumulates the nodes of the current segment."""

    def __init__(self, name: str, first_id: int, expected: Segment | None = None):
        self.graph = Graph(name)
        # The previous call's segment at this index, while every node added matched its
        # node at the same position (graph/segment_match.py); None after a difference.
        self.expected = expected
        self.avals: dict[int, Aval] = {}
        self.next_id = first_id
        self.sources: list[InputSource] = []
        # id(array) -> (storage, view chain): one graph input per array this segment reads.
        self.storages: dict[int, tuple] = {}
        self.captured_arrays: list = []       # the input arrays, in graph.inputs order
        self.roots: dict[int, list] = {}      # id(base array) -> storages (overlap check)
        self.scalars: dict[tuple, int] = {}   # (id(symbolic number), dtype) -> input node

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def add(self, node: Node) -> Node:
        nodes = self.graph.nodes
        expected = self.expected
        if expected is not None:
            theirs = expected.graph.nodes
            k = len(nodes)
            if k >= len(theirs) or not same_node(node, theirs[k]):
                self.expected = None
        nodes.append(node)
        return node

    def add_input(self, aval: Aval, source: InputSource) -> int:
        return self.add_input_of(aval.shape, aval.dtype, aval.device, source)

    def add_input_of(self, shape, dtype, device, source: InputSource) -> int:
        """``add_input`` of an Aval's three parts (a capture need not make the Aval)."""
        node_id = self.next_id
        self.next_id = node_id + 1
        attrs = _ARG_ATTRS if source.kind == "arg" else _CAPTURE_ATTRS
        device = "cpu" if device is CPU else str(device)  # (Device.__str__'s answer)
        if shape.__class__ is not tuple:
            shape = tuple(shape)
        nodes = self.graph.nodes
        before = None
        if self.expected is not None:  # the previous call's input here, if equal
            theirs = self.expected.graph.nodes
            k = len(nodes)
            before = theirs[k] if k < len(theirs) else None
        if before is not None and before.op == INPUT and before.id == node_id and \
                before.attrs == attrs and before.shape == shape and \
                before.dtype == dtype and before.device == device and \
                before.label == source.label:
            nodes.append(before)
        else:
            self.add(Node(node_id, INPUT, (), attrs, shape, dtype, device,
                          label=source.label))
        self.graph.inputs.append(node_id)
        self.sources.append(source)
        return node_id


class Segmenting:
    """The Tracer's segments and graph breaks (a part of :class:`~.trace.Tracer`, on its
    state: ``_builder``, ``segments``, ``breaks``, ``live``, ``assigned`` ...)."""

    # --- graph breaks --------------------------------------------------------------------
    def materialize(self, tensor: Tensor, reason: str):
        d = tensor._data
        if d.__class__ is not TracedValue or d.tracer is not self:
            return d.materialize(tensor, reason) if hasattr(d, "materialize") else d
        node_id = d.node_id if d.version == d.storage.version else self._ref(tensor)
        op = self._builder.graph.node(node_id).op
        if self.fullgraph == "bake":
            return self._bake(tensor, f"{reason} needs a concrete value", op)
        self._graph_break(f"{reason} needs a concrete value", op)
        return tensor._data

    def break_graph(self, reason: str, op: str) -> None:
        """End the segment here although Python reads no value: an effect that graph mode
        cannot hold runs between the segments (a collective with async_op=True)."""
        self._graph_break(reason, op)

    def flush_written(self, reason: str) -> None:
        """Python reads an array that this segment wrote (through another tensor): end the
        segment so the write lands in the array first."""
        self._graph_break(f"{reason} needs the values of a tensor written in place", ASSIGN)

    def _bake(self, tensor: Tensor, reason: str, op: str):
        """A plain tracer's answer (torch.jit.trace's): compute the value from this call's
        inputs, hand it to Python, and keep tracing as if it were a constant. The graph then
        holds only the branch this call took; replays with other inputs follow it silently.
        Kept only to show that pitfall next to graph breaks; every bake is recorded."""
        from .interpret import interpret

        b = self._builder
        node_id = self._ref(tensor)
        value = interpret(b.graph.copy(outputs=[node_id]), list(b.captured_arrays),
                          stop_at=node_id)[node_id]
        loc = user_location() or SourceLocation("?", 0, "?")
        self.baked.append(GraphBreak(f"{reason} (baked at trace time)", op, loc.filename,
                                     loc.lineno, loc.function, len(self.segments),
                                     len(self.segments)))
        return value

    def _graph_break(self, reason: str, op: str) -> None:
        # (from past this frame's caller, a method of this class: no frame object is made
        # for it)
        loc = user_location(sys._getframe(2)) or SourceLocation("?", 0, "?")
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
        """An op whose output shape depends on values: break, run it eagerly, go on. Also on
        an untraced tensor (a capture, or a view of one that ran eagerly: reshape(g0)): its
        values may change before the next call, and without a break the replay would keep
        this call's result (seed 8484, program 888)."""
        if any(isinstance(x, Tensor) for x in inputs):
            self._graph_break(f"{op.name} has a data-dependent output shape", op.name)
        previous = dispatch.set_tracer(None)
        try:
            return dispatch.run_eager(op, inputs, attrs)
        finally:
            dispatch.set_tracer(previous)

    # --- segments ----------------------------------------------------------------------
    def previous_segment(self, index: int):
        """The previous call's segment ``index``, which this call's is compared with."""
        previous = self.previous_segments
        return previous[index] if index < len(previous) else None

    def _live_tensors(self) -> list[Tensor]:
        out, seen, alive = [], set(), []
        settled = self.settled
        for ref in self.live:
            t = ref()
            if t is None:
                continue
            d = t._data
            if d.__class__ is TracedValue and d.tracer is self:
                alive.append(ref)
                if id(t) not in seen:
                    seen.add(id(t))
                    out.append(t)
            else:
                # Concrete since a break: no break walks it again (only a write, which
                # adopts it anew, traces it again); the backward's rebinding still does.
                settled.append(ref)
        self.live = alive  # (every break walks them: the dead would pile up per break)
        return out

    def _end_segment(self, final_outputs) -> Segment:
        """Close the current segment. Its outputs are the final values of the storages
        that ``final_outputs`` (at a break: every live traced tensor) live in; written
        inputs are written back by assign nodes. When executed, each of those tensors gets
        its values as the same NumPy view of its storage's array that eager would hold."""
        b = self._builder
        if final_outputs is None:
            tensors = self._live_tensors()
        else:
            tensors = list({id(t): t for t in final_outputs if traced_by(t, self)}.values())
        storages: dict[int, Storage] = {}
        for t in tensors:
            st = t._data.storage
            if st.source is None and id(st) not in storages:
                storages[id(st)] = st
        b.graph.outputs = [st.node for st in storages.values()]
        assigned: set[int] = set()  # (several arrays may view one storage: one assign)
        for st, _ in b.storages.values():
            if st.written and st.node != st.input_node and id(st) not in assigned:
                assigned.add(id(st))
                node_id = b.new_id()
                b.add(Node(node_id, ASSIGN, (st.input_node, st.node), (), st.shape, st.dtype,
                           str(st.device), _scope._state.current, None))
        same = matched_segment(b)
        if same is None:  # (a graph equal to one verified before needs no check)
            # The nodes verified here are not verified again by the passes (verify.py).
            verify(b.graph, "tracing", b.graph.meta.setdefault(VERIFIED, {}))
        # (the tensors it hands values to are not kept: their arrays, once the caller
        # drops them, go back to the plan's output pools)
        segment = Segment(len(self.segments), b.graph, b.sources, avals=b.avals, same_as=same)
        self.segments.append(segment)
        if instrument._on_event:
            instrument.emit(instrument.Event("trace", {
                "function": self.name, "graph_id": b.graph.name, "segment": segment.index,
                "signature": self.signature, "node_count": len(b.graph.op_nodes),
                "location": _first_location(b.graph),
            }, time.perf_counter_ns(), time.perf_counter_ns()))
        self.last_outputs = None
        if self.execute:
            outputs = self.run_segment(segment, list(b.captured_arrays))
            self.last_outputs = outputs
            array_of = dict(zip(storages, outputs))
            for st, _ in b.storages.values():
                array_of[id(st)] = st.array  # written back in place by the plan
            arrays: dict[int, object] = {}  # tensors sharing a traced value share an array
            for t in tensors:
                d = t._data
                array = arrays.get(id(d))
                if array is None:
                    root = array_of[id(d.storage)]
                    if d.view:
                        arrays[id(d)] = array = replay(d.view, root)
                        self.break_views[id(array)] = (root, d.view, array)
                    else:
                        arrays[id(d)] = array = root
                t._data = array
        segment.same_as = None  # (run_segment has used it: calls must not chain)
        for target, original in self.assigned.values():
            # Executed: the plan's assigns updated the original buffer in place.
            # Only traced: the target is left exactly as it was.
            target._data = original
        self.assigned.clear()
        # The next segment starts with fresh inputs; ids keep counting so they stay unique.
        n, previous = len(self.segments), self.previous_segments
        self._builder = SegmentBuilder(f"{self.prefix}:{n}", b.next_id,
                                       previous[n] if n < len(previous) else None)
        self.output_storages = list(storages.values())
        return segment

    def value_error_so_far(self):
        """Eager raises at the first op that fails; a trace learns of value errors (an
        index out of range) only when the graph runs. When the trace itself fails, this
        evaluates what the segment traced so far (reading its inputs, writing nothing,
        restoring the RNG) and returns the error eager would have raised first, or None."""
        from .interpret import Interpreter
        from .op_call import may_raise

        b = self._builder
        if not any(may_raise(n) for n in b.graph.nodes) or any(
                n.op in OPS and OPS[n.op].collective for n in b.graph.nodes):
            return None  # (collectives never run op by op: graph/interpret.py)
        try:
            Interpreter(b.graph).run(*b.captured_arrays)
        except Exception as exc:  # noqa: BLE001 - the interpreter words it as eager does
            return exc
        return None

    def abort(self) -> None:
        """The traced function raised: leave every tensor as the user had it."""
        for target, original in self.assigned.values():
            target._data = original
        self.assigned.clear()
        for t in self._live_tensors():
            t._data = LeakedValue(t._data, self.name)
        self.finished = True

    def finish(self, results: list) -> tuple[Segment, list]:
        """End the trace: the last segment outputs what ``results`` (the returned leaves,
        then the traced grads) need. Returns the segment and how a replay rebuilds each
        result (see ``result_spec``)."""
        specs, first = [], {}
        for k, x in enumerate(results):
            specs.append(self.result_spec(x, first.setdefault(id(x), k), k))
        segment = self._end_segment(final_outputs=results)
        position = {id(st): k for k, st in enumerate(self.output_storages)}
        specs = [("out", position[s[1]], s[2], s[3]) if s[0] == "storage" else s
                 for s in specs]
        # Anything else still traced escaped the function: poison it with a clear error.
        for t in self._live_tensors():
            t._data = LeakedValue(t._data, self.name)
        self.finished = True
        return segment, specs

    def result_spec(self, x, first: int, k: int) -> tuple:
        """How a call rebuilds one result, as eager would hand it back:
        ("same", j): the object of result j again; ("arg", i): the caller's own tensor;
        ("const", x): x itself (a capture, a Python value); ("grad", owner ref): the
        caller's ``.grad`` of that tensor as the call began; ("view", source, steps, rg): a
        view of an input's array; ("storage", id, steps, rg): a view of a graph output
        (("out", k, steps, rg) once the outputs are known). ``rg``: eager's result would
        require grad (see jit_driver/results.py's JIT_RESULT)."""
        if first != k:
            return ("same", first)
        if not isinstance(x, Tensor):
            return ("const", x)
        index = self.stand_in_index.get(id(x))
        if index is not None:
            return ("arg", index)
        owner = self.grad_owner_of.get(id(x))
        if owner is not None and self.grad_read.get(id(owner)) is x:
            # The .grad the function read: at each call, the caller's .grad of that
            # tensor as the call began, not the object seen while tracing.
            return ("grad", self.owner_ref(owner))
        if id(x) in self.assigned or not traced_by(x, self):
            return ("const", x)
        d = x._data
        if d.storage.source is not None:
            return ("view", d.storage.source, d.view, x.requires_grad)
        return ("storage", id(d.storage), d.view, x.requires_grad)


def _first_location(graph: Graph):
    return next((n.loc for n in graph.nodes if n.loc is not None), None)
