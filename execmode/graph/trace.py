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
from .._tensor import Tensor
from ..backend import CPU
from ..errors import GraphBreakError, op_error
from ..ops.registry import Aval, RuleError, infer_aval
from ..source import SourceLocation, user_location
from ..symbolic import SymbolicScalar, is_number
from .ir import ASSIGN, INPUT, Graph, Literal, Node, make_attrs
from .py_names import note_names
from .verify import VERIFIED, verify
from .views import (
    ViewStep,
    contiguous_proxy,
    inverse_axes,
    is_view_op,
    proxy_of,
    replay,
    view_proxy,
)


class Storage:
    """The memory behind traced tensors (PyTorch's storage): an argument's or a capture's
    array, or an op's result. ``node`` is the graph node holding its current full value;
    every in-place write makes a new node and bumps ``version`` (PyTorch's ``_version``),
    so views taken before the write know they must be recomputed."""

    __slots__ = ("node", "input_node", "version", "shape", "dtype", "device", "source",
                 "array", "written", "ambiguous")

    def __init__(self, node, shape, dtype, device, source=None, array=None):
        self.node = node
        self.input_node = node if source is not None else None
        self.version = 0
        self.shape, self.dtype, self.device = shape, dtype, device
        self.source = source        # InputSource for inputs; None for op results
        self.array = array          # the input's array (kept alive while traced)
        self.written = False        # an input written in place: write back at segment end
        # Storages this one may share memory with, depending on a layout only NumPy knows
        # (a reshape of a strided result; two arguments viewing one array).
        self.ambiguous: list = []


class TracedValue:
    """What a tensor holds while traced: the node that computes it, the storage it lives
    in, the view chain from that storage's full value, and its layout (views.py)."""

    __slots__ = ("tracer", "node_id", "shape", "dtype", "em_device", "storage", "view",
                 "version", "proxy", "__weakref__")

    def __init__(self, tracer, node_id, shape, dtype, device, storage, view=(), proxy=None):
        self.tracer = tracer
        self.node_id = node_id
        self.shape = shape
        self.dtype = dtype
        self.em_device = device
        self.storage = storage
        self.view = view
        self.version = storage.version
        self.proxy = proxy

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
    output_tensors: list = field(default_factory=list)
    compiled: object = None     # the CompiledSegment used to run it


class _Builder:
    """Accumulates the nodes of the current segment."""

    def __init__(self, name: str, first_id: int):
        self.graph = Graph(name)
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
    (with caching) and runs a finished segment; the jit object provides it.

    State follows eager mode exactly (docs/graph-mode.md, "Semantics"): every tensor is a
    :class:`Storage` plus a view chain; an in-place write becomes a functional update of
    its storage (scattered back through the view chain), later reads of any view of that
    storage are recomputed from the new value, and a written argument or capture is
    written back into its array at the end of the segment (an assign node)."""

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
        storage, view = self._input_storage(
            tensor, lambda: InputSource("arg", label, leaf_index=leaf_index))
        t = object.__new__(Tensor)
        t._data = TracedValue(self, self._view_node(storage, view), tuple(tensor.shape),
                              tensor.dtype, tensor.device, storage, view,
                              proxy_of(tensor._data))
        t.requires_grad = tensor.requires_grad
        if tensor._grad_fn is not None:  # not a leaf, as eagerly (writes to it are allowed)
            t._grad_fn = tensor._grad_fn
            self.non_leaf_args.append(leaf_index)
        self.live.append(weakref.ref(t))
        self.stand_in_of[id(t)] = tensor
        self.stand_in_index[id(t)] = leaf_index
        self.user_stand_in[id(tensor)] = t
        return t

    def owner_ref(self, owner: Tensor):
        """How a replay finds ``owner`` again: ("arg", leaf index) for an argument's
        stand-in (this call's tensor at that position), else the tensor itself."""
        index = self.stand_in_index.get(id(owner))
        return ("arg", index) if index is not None else owner

    def _input_storage(self, tensor: Tensor, make_source) -> tuple[Storage, tuple]:
        """The storage (and view chain) of a real tensor's array: one graph input per
        array, however many tensors share it (``w`` and ``w.detach()`` are one value)."""
        b = self._builder
        array = tensor._data
        hit = b.storages.get(id(array))
        if hit is not None:
            return hit
        root_view = self.break_views.get(id(array))
        if root_view is not None:  # a view a graph break handed out: a view here too
            root, steps, _ = root_view
            holder = object.__new__(Tensor)
            holder._data, holder.requires_grad = root, False
            storage, _ = self._input_storage(
                holder, lambda: InputSource("capture", f"segment value {len(b.sources)}",
                                            tensor=holder))
            b.storages[id(array)] = (storage, steps)
            return storage, steps
        source = make_source()
        aval = Aval(tensor.shape, tensor.dtype, tensor.device)
        node_id = b.add_input(aval, source)
        storage = Storage(node_id, tuple(tensor.shape), tensor.dtype, tensor.device, source,
                          array)
        self._check_overlap(array, storage)
        b.storages[id(array)] = (storage, ())
        b.captured_arrays.append(array)
        return storage, ()

    def _check_overlap(self, array, storage: Storage) -> None:
        """Two inputs that are different views of one memory (made outside the function):
        the graph cannot tell that a write through one changes the other."""
        root = getattr(array, "base", None)
        key = id(root) if root is not None else id(array)
        b = self._builder
        for other in b.roots.setdefault(key, []):
            if np.may_share_memory(array, other.array):  # (outputs share a block, apart)
                other.ambiguous.append(storage)
                storage.ambiguous.append(other)
        b.roots[key].append(storage)

    def _capture(self, tensor: Tensor) -> tuple[Storage, tuple]:
        stand_in = self.user_stand_in.get(id(tensor))
        if stand_in is not None and _traced_by(stand_in, self):
            # The function also reads, as a global, a tensor it got as an argument: one
            # value, so that an in-place update through either name is seen by both.
            d = stand_in._data
            self.arg_aliases[id(tensor)] = (tensor, self.stand_in_index[id(stand_in)])
            return d.storage, d.view
        owner = self.grad_owner_of.get(id(tensor))
        if owner is not None:
            user = self.stand_in_of.get(id(owner), owner)

            def make_source():
                return InputSource("grad", f"{self._label(user)}.grad", tensor=user,
                                   leaf_index=self.stand_in_index.get(id(owner), -1))
        else:
            def make_source():
                return InputSource("capture", self._label(tensor), tensor=tensor)
        storage, view = self._input_storage(tensor, make_source)
        if owner is None and storage.source.kind == "arg":  # an argument's memory
            self.arg_aliases[id(tensor)] = (tensor, storage.source.leaf_index)
        elif owner is None:
            self.captures_seen[id(tensor)] = tensor
        return storage, view

    def _label(self, tensor: Tensor) -> str:
        name = self.capture_labels.get(id(tensor))
        if name:
            return name
        return f"capture {len(self._builder.sources)}"

    def _place(self, x: Tensor):
        """(storage, view chain, layout proxy, traced value or None) of a tensor operand."""
        d = x._data
        if d.__class__ is TracedValue and d.tracer is self:
            return d.storage, d.view, d.proxy, d
        if d.__class__ is LeakedValue:
            d.materialize(x, "use")
        storage, view = self._capture(x)
        return storage, view, proxy_of(d), None

    def _ref(self, x):
        """The graph operand for a dispatch input (recomputing a stale view)."""
        if isinstance(x, Tensor):
            storage, view, _, d = self._place(x)
            if d is None:
                return self._view_node(storage, view)
            if d.version != storage.version:
                d.node_id = self._view_node(storage, view)
                d.version = storage.version
            return d.node_id
        if isinstance(x, np.generic):
            return Literal(x.item())
        return Literal(x)

    def _view_node(self, storage: Storage, view: tuple) -> int:
        """The node computing ``view`` of the storage's current value."""
        node = storage.node
        for step in view:
            node = self._emit(step.op, (node,), step.kwargs)
        return node

    def _emit(self, op_name: str, operands: tuple, attrs: dict) -> int:
        """Add a node of the tracer's own (a view replay or a scatter-back)."""
        from ..ops import OPS

        graph = self._builder.graph
        avals = [Aval(graph.node(o).shape, graph.node(o).dtype, graph.node(o).device)
                 if isinstance(o, int) else o for o in operands]
        aval = infer_aval(OPS[op_name], avals, attrs, None)
        node_id = self._builder.new_id()
        self._builder.add(Node(node_id, op_name, tuple(operands), make_attrs(attrs),
                               tuple(aval.shape), aval.dtype, str(aval.device),
                               _scope._state.current, user_location()))
        return node_id

    def _new_tensor(self, node_id: int, aval: Aval, storage=None, view=(), proxy=None):
        if storage is None:
            storage = Storage(node_id, tuple(aval.shape), aval.dtype, aval.device)
        t = object.__new__(Tensor)
        t._data = TracedValue(self, node_id, tuple(aval.shape), aval.dtype, aval.device,
                              storage, view, proxy)
        t.requires_grad = False
        self.live.append(weakref.ref(t))
        return t

    def adopt(self, tensor: Tensor) -> None:
        """A tensor sharing a traced value (detach, saved outputs) is live too."""
        self.live.append(weakref.ref(tensor))

    def detached(self, tensor: Tensor) -> Tensor:
        """``detach()`` while tracing: a new tensor on the same storage and view (a new
        object at every call, as eagerly, even for a capture)."""
        storage, view, proxy, _ = self._place(tensor)
        node = self._ref(tensor)
        return self._new_tensor(node, Aval(tensor.shape, tensor.dtype, tensor.device),
                                storage, view, proxy)

    # --- ops ---------------------------------------------------------------------------
    # --- Python numbers that stay graph inputs (symbolic.py) ----------------------------
    def scalar_input(self, holder, name: str, label: str):
        """``holder.name`` (an optimizer's lr) as a number read at every call."""
        from .guards import read_holder

        value = read_holder(holder, name)
        if not is_number(value):
            return value
        self.dynamic_reads.add((id(holder), name))
        return SymbolicScalar(value, lambda: read_holder(holder, name), label, self)

    def scalar_guard(self, read, expected, label: str) -> None:
        """The trace used a symbolic number concretely: later calls must agree."""
        self.scalar_guards.append((read, expected, label))

    def _scalar_ref(self, x: SymbolicScalar, inputs) -> int:
        """A 0-d graph input holding ``x``'s number at each call, in the dtype eager casts
        it to next to this op's tensors."""
        tensors = [t for t in inputs if isinstance(t, Tensor)]
        dtype = x.dtype_with([t.dtype for t in tensors])
        device = tensors[0].device if tensors else CPU
        b = self._builder
        key = (id(x), dtype)
        hit = b.scalars.get(key)
        if hit is None:
            source = InputSource("scalar", x.label, scalar=x, dtype=dtype)
            hit = b.add_input(Aval((), dtype, device), source)
            b.captured_arrays.append(np.asarray(x.value, dtype=dtype))
            b.scalars[key] = hit
            self.scalar_sources.append(x)  # kept alive: the key holds its id
        return hit

    def same_object(self, x):
        """The tensor the trace uses for ``x``: a tensor passed as an argument and also
        read as a global is one object eagerly, so its stand-in serves for both (autograd
        flags and history included)."""
        if self.user_stand_in and x.__class__ is Tensor:
            stand_in = self.user_stand_in.get(id(x))
            if stand_in is not None and _traced_by(stand_in, self):
                # A later call must pass this tensor at that position again (a guard).
                self.arg_aliases[id(x)] = (x, self.stand_in_index[id(stand_in)])
                return stand_in
        return x

    def bind(self, op, inputs, attrs):
        if self.user_stand_in:
            inputs = tuple(self.same_object(x) for x in inputs)
        if any(x.__class__ is SymbolicScalar for x in inputs):
            return self._bind_symbolic(op, inputs, attrs)
        if any(v.__class__ is SymbolicScalar for v in attrs.values()):
            attrs = {k: v.concrete(f"the {k} of {op.name}") if v.__class__ is SymbolicScalar
                     else v for k, v in attrs.items()}
        dispatch.check_inputs(op, inputs)
        if op.data_dependent_shape:
            return self._run_between_segments(op, inputs, attrs)
        if op.name == ASSIGN:
            return self._assign(*inputs)
        return self._bind(op, inputs, attrs)

    def _bind_symbolic(self, op, inputs, attrs):
        """An op with a symbolic number among its operands: infer and check it with the
        number (weakly typed, as eager sees it); the graph reads it as an input."""
        if op.name == ASSIGN or op.data_dependent_shape or not any(
                isinstance(x, Tensor) for x in inputs):
            return self.bind(op, tuple(x.concrete(f"an operand of {op.name}")
                                       if x.__class__ is SymbolicScalar else x
                                       for x in inputs), attrs)
        plain = tuple(x.value if x.__class__ is SymbolicScalar else x for x in inputs)
        dispatch.check_inputs(op, plain)
        return self._bind(op, plain, attrs, symbolic=inputs)

    def _bind(self, op, inputs, attrs, symbolic=None):
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
        refs = tuple(self._scalar_ref(x, inputs) if x.__class__ is SymbolicScalar
                     else self._ref(x) for x in symbolic or inputs)
        node_id = self._builder.new_id()
        self._builder.add(Node(node_id, op.name, refs, make_attrs(attrs), tuple(aval.shape),
                               aval.dtype, str(aval.device), _scope._state.current, user_location()))
        if instrument._before_op:  # a debugger: the names it shows inside the jit
            note_names(self, self._builder.graph)
        t = self._result(op, inputs, attrs, node_id, aval)
        if dispatch.grad_enabled() and op.vjp is not None:
            for x in inputs:
                if isinstance(x, Tensor) and x.requires_grad:
                    # Symbolic numbers stay symbolic in the vjp (d(lr * x)/dx = lr).
                    saved = dispatch.record_grad(op, symbolic or inputs, attrs, t)
                    if saved is not None:
                        self.adopt(saved)
                    break
        return t

    def _result(self, op, inputs, attrs, node_id: int, aval: Aval) -> Tensor:
        """The traced result of an op: a view of its input's storage where eager NumPy
        returns a view, else a tensor with a storage of its own."""
        first = inputs[0] if inputs and isinstance(inputs[0], Tensor) else None
        if first is not None and op.name == "debug_print":  # returns its input itself
            storage, view, proxy, _ = self._place(first)
            return self._new_tensor(node_id, aval, storage, view, proxy)
        if first is not None and is_view_op(op.name, attrs):
            storage, view, proxy, _ = self._place(first)
            is_view, child = view_proxy(op.name, attrs, proxy, first.shape)
            if is_view:
                self._note_layout(storage, op.name)
                return self._new_tensor(node_id, aval, storage,
                                        view + (ViewStep(op.name, make_attrs(attrs)),), child)
            if is_view is None:
                # A reshape whose view-or-copy depends on a layout the tracer does not
                # know: fine unless a write reaches a side another can still read.
                result = self._new_tensor(node_id, aval)
                storage.ambiguous.append(result._data.storage)
                result._data.storage.ambiguous.append(storage)
                return result
            return self._new_tensor(node_id, aval, proxy=contiguous_proxy(aval.shape))
        # A fresh result. NumPy lays it out like its inputs ("K" order): C-contiguous when
        # they are, and up to NumPy otherwise (unknown here, unless it has one axis).
        proxies = [self._place(x)[2] for x in inputs if isinstance(x, Tensor)]
        known = len(aval.shape) <= 1 or op.name in _ALWAYS_C_ORDER or all(
            p is not None and p.flags.c_contiguous for p in proxies)
        return self._new_tensor(node_id, aval,
                                proxy=contiguous_proxy(aval.shape) if known else None)

    def _note_layout(self, storage: Storage, op_name: str) -> None:
        """A reshape of an argument was a view because of the argument's strides: a call
        with other strides must trace again (the jit guards these layouts)."""
        if op_name == "reshape" and storage.source is not None and \
                storage.source.kind == "arg":
            self.layout_args.add(storage.source.leaf_index)

    def _assign(self, target: Tensor, value):
        """``target[...] = value``: a functional update of target's storage, scattered back
        through target's view chain; every other view of that storage sees it."""
        from .. import functional as F

        if not isinstance(value, Tensor):
            value = F.full(target.shape, value, dtype=target.dtype, device=target.device)
        elif value.dtype != target.dtype:
            value = F.astype(value, target.dtype)
        value_ref = self._ref(value)
        storage, view, proxy, d = self._place(target)
        if any(step.op == "broadcast_to" for step in view):
            from ..ops import OPS

            raise dispatch.explain_failure(  # NumPy's broadcast views are read-only
                OPS["assign"], (target, value), {},
                ValueError("assignment destination is read-only"))
        if any(self._observable(other) for other in storage.ambiguous):
            raise op_error(GraphBreakError, "assign", (target, value),
                           "an in-place write to a tensor that may share memory with another "
                           "one, depending on a memory layout only known eagerly (a reshape "
                           "of a strided result, or two arguments that view one array); "
                           "graph mode cannot tell which values it changes. Write to a "
                           ".clone() instead, or run this function eagerly")
        new = value_ref
        if view:
            parents = [storage.node]
            for step in view[:-1]:
                parents.append(self._emit(step.op, (parents[-1],), step.kwargs))
            for step, parent in zip(reversed(view), reversed(parents)):
                new = self._scatter_back(step, parent, new)
        storage.node = new
        storage.version += 1
        if storage.source is not None:
            storage.written = self.wrote_inputs = True
        if d is None:
            # A real tensor (a capture): traced from now on, so that Python reading it
            # (print, item) breaks the graph; its array is restored when the segment ends.
            self.assigned.setdefault(id(target), (target, target._data))
            target._data = d = TracedValue(self, value_ref, tuple(target.shape),
                                           target.dtype, target.device, storage, view, proxy)
            self.adopt(target)
        d.node_id = value_ref
        d.version = storage.version
        return target

    def _observable(self, storage: Storage) -> bool:
        """Can anything still read ``storage``: an input (the caller holds it) or a live
        traced tensor on it? If not, whether it shared memory does not matter."""
        if storage.source is not None:
            return True
        return any(t._data.storage is storage for t in self._live_tensors())

    def _scatter_back(self, step: ViewStep, parent: int, new: int) -> int:
        """The parent's value with the child's values replaced by ``new``."""
        kw = step.kwargs
        if step.op == "getitem":
            return self._emit("index_put", (parent, new), {"index": kw["index"]})
        if step.op == "permute_dims":
            return self._emit("permute_dims", (new,), {"axes": inverse_axes(kw["axes"])})
        if step.op == "reshape":
            shape = self._builder.graph.node(parent).shape
            return self._emit("reshape", (new,), {"shape": tuple(shape)})
        raise AssertionError(f"no scatter-back for view op {step.op}")

    def note_flags(self, target: Tensor) -> None:
        """``target`` is about to be written (functional.assign): remember a capture's
        autograd flags before the write may change them."""
        if not _traced_by(target, self) and id(target) not in self.flags_before:
            self.flags_before[id(target)] = (target, target.requires_grad,
                                             target._grad_fn is None)

    def stale_array(self, array) -> bool:
        """True if ``array`` backs an input that this segment has written (its values are
        not in the array until the segment ends)."""
        hit = self._builder.storages.get(id(array))
        return hit is not None and hit[0].written

    # --- .grad as graph state ----------------------------------------------------------
    def read_grad(self, owner: Tensor):
        state = self.grad_state.get(id(owner))
        if state is None:
            user = self.stand_in_of.get(id(owner), owner)
            grad = user._grad
            # Read before any write: the trace assumed this grad's None-ness, and for a
            # tensor its array's kind, shape and dtype (the graph input's type): guards.
            kind = None if grad is None else (type(grad._data), tuple(grad._data.shape),
                                               grad._data.dtype)
            self.grad_guards[id(owner)] = (owner, grad is None, kind)
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
        op = self._builder.graph.node(self._ref(tensor)).op
        if self.fullgraph == "bake":
            return self._bake(tensor, f"{reason} needs a concrete value", op)
        self._graph_break(f"{reason} needs a concrete value", op)
        return tensor._data

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
        if any(isinstance(x, Tensor) and x._data.__class__ is TracedValue for x in inputs) or \
                any(isinstance(x, Tensor) and self.stale_array(x._data) for x in inputs):
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
        """Close the current segment. Its outputs are the final values of the storages
        that ``final_outputs`` (at a break: every live traced tensor) live in; written
        inputs are written back by assign nodes. When executed, each of those tensors gets
        its values as the same NumPy view of its storage's array that eager would hold."""
        b = self._builder
        if final_outputs is None:
            tensors = self._live_tensors()
        else:
            tensors = list({id(t): t for t in final_outputs if _traced_by(t, self)}.values())
        storages: dict[int, Storage] = {}
        for t in tensors:
            st = t._data.storage
            if st.source is None:
                storages.setdefault(id(st), st)
        b.graph.outputs = [st.node for st in storages.values()]
        for st, _ in {id(s): (s, v) for s, v in b.storages.values()}.values():
            if st.written and st.node != st.input_node:
                node_id = b.new_id()
                b.add(Node(node_id, ASSIGN, (st.input_node, st.node), (), st.shape, st.dtype,
                           str(st.device), _scope._state.current, None))
        # The nodes verified here are not verified again by the passes (graph/verify.py).
        verify(b.graph, "tracing", b.graph.meta.setdefault(VERIFIED, {}))
        segment = Segment(len(self.segments), b.graph, b.sources, tensors)
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
            array_of = {key: out for key, out in zip(storages, outputs)}
            for st, _ in b.storages.values():
                array_of[id(st)] = st.array  # written back in place by the plan
            arrays: dict[int, object] = {}  # tensors sharing a traced value share an array
            for t in tensors:
                d = t._data
                if id(d) not in arrays:
                    root = array_of[id(d.storage)]
                    arrays[id(d)] = array = replay(d.view, root)
                    if d.view:
                        self.break_views[id(array)] = (root, d.view, array)
                t._data = arrays[id(d)]
        for target, original in self.assigned.values():
            # Executed: the plan's assigns updated the original buffer in place.
            # Only traced: the target is left exactly as it was.
            target._data = original
        self.assigned.clear()
        # The next segment starts with fresh inputs; ids keep counting so they stay unique.
        self._builder = _Builder(f"{self.prefix}:{len(self.segments)}", b.next_id)
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
        if not any(may_raise(n) for n in b.graph.nodes):
            return None
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
        require grad (see jit.JIT_RESULT)."""
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
        if id(x) in self.assigned or not _traced_by(x, self):
            return ("const", x)
        d = x._data
        if d.storage.source is not None:
            return ("view", d.storage.source, d.view, x.requires_grad)
        return ("storage", id(d.storage), d.view, x.requires_grad)


# Ops whose NumPy result is a new C-ordered array whatever the inputs' layouts.
_ALWAYS_C_ORDER = frozenset({"matmul", "full", "arange", "linspace", "eye"})


def _first_location(graph: Graph):
    return next((n.loc for n in graph.nodes if n.loc is not None), None)


def _traced_by(t, tracer) -> bool:
    return isinstance(t, Tensor) and t._data.__class__ is TracedValue and t._data.tracer is tracer


def _attr_device(attrs):
    from ..backend import as_device

    return as_device(attrs.get("device"))




__all__ = ["GraphBreak", "InputSource", "LeakedValue", "Segment", "TracedValue", "Tracer"]
