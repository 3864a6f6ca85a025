"""Binding: how the values a traced function touches become graph nodes.

Arguments get traced stand-ins; tensors from outside (weights, an optimizer's state, a
``.grad``) become captured inputs, read by reference at every call, one input per array
however many tensors share it; Python numbers promoted by the jit (symbolic.py) become 0-d
inputs. Every op that dispatch hands the tracer (``bind``) becomes a node, checked by the
op's shape and dtype rules with the user's line in the error, and its result a traced
tensor: a view of its input's storage where eager NumPy returns a view, else a storage of
its own.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

from .. import dispatch, instrument
from .. import scope as _scope
from .._tensor import Tensor
from ..backend import CPU
from ..dispatch_checks import check_inputs
from ..op_errors import op_error
from ..ops.registry import Aval, RuleError, infer_aval
from ..source import user_location
from ..symbolic import SymbolicScalar, is_number
from ..symbolic_sizes import SymInt, attach, attach_attrs, resolve
from ..symbolic_sizes import text as sizes_text
from .ir import ASSIGN, Literal, Node, make_attrs
from .py_names import note_names
from .segment_match import attrs_as_before, same_operands
from .segments import InputSource
from .traced_value import LeakedValue, Storage, TracedValue, traced_by
from .views import (
    VIEW_OPS,
    ViewStep,
    c_ordered,
    contiguous_layout,
    contiguous_proxy,
    is_view_op,
    proxy_of,
    view_proxy,
)

# Python numbers an op of a re-run segment takes as they are (bool, int, float).
_PLAIN_NUMBERS = frozenset({bool, int, float})
# Ops whose NumPy result is a new C-ordered array whatever the inputs' layouts.
_ALWAYS_C_ORDER = frozenset({"matmul", "full", "arange", "linspace", "eye"})


class Binding:
    """The Tracer's inputs and op binding (a part of :class:`~.trace.Tracer`, on its
    state: ``_builder``, ``stand_in_of``, ``user_stand_in``, ``live`` ...)."""

    # --- inputs ------------------------------------------------------------------------
    def stand_in(self, tensor: Tensor, leaf_index: int, label: str) -> Tensor:
        """A traced stand-in for an argument leaf (the function sees it instead)."""
        shape = self._symbolic_shape(tensor, leaf_index)
        storage, view = self._input_storage(
            tensor, lambda: InputSource("arg", label, leaf_index=leaf_index), shape)
        t = object.__new__(Tensor)
        t._data = TracedValue(self, self._view_node(storage, view), shape,
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

    def _symbolic_shape(self, tensor: Tensor, leaf_index: int) -> tuple:
        """The argument's shape, its dynamic dimensions symbolic (symbolic_sizes.py)."""
        dims = self.symbolic_dims.get(leaf_index)
        if not dims:
            return tuple(tensor.shape)
        return tuple(dims.get(d, size) for d, size in enumerate(tensor.shape))

    def owner_ref(self, owner: Tensor):
        """How a replay finds ``owner`` again: ("arg", leaf index) for an argument's
        stand-in (this call's tensor at that position), else the tensor itself."""
        index = self.stand_in_index.get(id(owner))
        return ("arg", index) if index is not None else owner

    def _input_storage(self, tensor: Tensor, make_source, shape=None) -> tuple[Storage, tuple]:
        """The storage (and view chain) of a real tensor's array: one graph input per
        array, however many tensors share it (``w`` and ``w.detach()`` are one value).
        ``shape``: the argument's shape with its symbolic sizes, where it has some."""
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
        # (None: a plain capture, the common case, whose source is made here)
        source = make_source() if make_source is not None else \
            InputSource("capture", self._label(tensor), tensor=tensor)
        if shape is None:
            shape = array.shape if array.__class__ is np.ndarray else tuple(tensor.shape)
        dtype, device = array.dtype, tensor.device
        node_id = b.add_input_of(shape, dtype, device, source)
        storage = Storage(node_id, shape, dtype, device, source, array)
        self._check_overlap(array, storage)
        b.storages[id(array)] = (storage, ())
        b.captured_arrays.append(array)
        return storage, ()

    def _check_overlap(self, array, storage: Storage) -> None:
        """Two inputs that are different views of one memory (made outside the function):
        the graph cannot tell that a write through one changes the other."""
        root = getattr(array, "base", None)
        key = id(root) if root is not None else id(array)
        roots = self._builder.roots
        others = roots.get(key)
        if others is None:  # (the usual capture: no other input on that memory)
            roots[key] = [storage]
            return
        for other in others:
            if np.may_share_memory(array, other.array):  # (outputs share a block, apart)
                other.ambiguous.append(storage)
                storage.ambiguous.append(other)
        others.append(storage)

    def _capture(self, tensor: Tensor) -> tuple[Storage, tuple]:
        key = id(tensor)
        stand_in = self.user_stand_in.get(key)
        if stand_in is not None and traced_by(stand_in, self):
            # The function also reads, as a global, a tensor it got as an argument: one
            # value, so that an in-place update through either name is seen by both.
            d = stand_in._data
            self.arg_aliases[id(tensor)] = (tensor, self.stand_in_index[id(stand_in)])
            return d.storage, d.view
        owner = self.grad_owner_of.get(key)
        if owner is not None:
            user = self.stand_in_of.get(id(owner), owner)

            def make_source():
                return InputSource("grad", f"{self._label(user)}.grad", tensor=user,
                                   leaf_index=self.stand_in_index.get(id(owner), -1))
        else:
            make_source = None  # a plain capture (_input_storage makes its source)
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
        if self.size_env is not None:
            aval = aval._replace(shape=attach(tuple(aval.shape), avals, attrs, op_name))
        node_id = self._builder.new_id()
        self._builder.add(Node(node_id, op_name, tuple(operands), make_attrs(attrs),
                               tuple(aval.shape), aval.dtype, str(aval.device),
                               _scope._state.current, user_location()))
        return node_id

    def _new_tensor(self, node_id: int, aval: Aval, storage=None, view=(), proxy=None):
        shape = tuple(aval.shape)
        if storage is None:
            storage = Storage(node_id, shape, aval.dtype, aval.device)
        t = object.__new__(Tensor)
        t._data = TracedValue(self, node_id, shape, aval.dtype, aval.device, storage, view,
                              proxy)
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

    # --- Python numbers that stay graph inputs (symbolic.py) ----------------------------
    def scalar_input(self, holder, name: str, label: str):
        """``holder.name`` (an optimizer's lr) as a number read at every call."""
        from .guards import read_holder

        value = read_holder(holder, name)
        if not is_number(value):
            return value
        self.dynamic_reads.add((id(holder), name))
        return SymbolicScalar(value, lambda: read_holder(holder, name), label, self)

    def _size_scalar(self, size: SymInt) -> SymbolicScalar:
        """A symbolic size used as a number: its value at each call (symbolic_sizes)."""
        return SymbolicScalar(int(size), lambda: resolve(size),
                              f"size {sizes_text(size.expr)}", self)

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
            if stand_in is not None and traced_by(stand_in, self):
                # A later call must pass this tensor at that position again (a guard).
                self.arg_aliases[id(x)] = (x, self.stand_in_index[id(stand_in)])
                return stand_in
        return x

    def bind(self, op, inputs, attrs):
        stand_ins = self.user_stand_in
        b = self._builder
        if b.expected is not None and self.size_env is None and \
                not instrument._before_op and op.name != ASSIGN and \
                not op.data_dependent_shape and (not attrs or _no_symbolic_number(attrs)):
            # The common op of a re-run segment (graph/segment_match.py), checked in one
            # pass over its operands: plain tensors (none of them the caller's own, which
            # same_object maps below) and Python numbers, one device.
            device = None
            for x in inputs:
                if x.__class__ is Tensor:
                    if id(x) in stand_ins:
                        break
                    d = x._data  # (a traced value's device without the property)
                    here = d.em_device if d.__class__ is TracedValue else x.device
                    if device is None:
                        device = here
                    elif here is not device and here != device:
                        break
                elif x.__class__ not in _PLAIN_NUMBERS:
                    break
            else:
                return self._bind_as_before(op, inputs, attrs)
        if stand_ins:
            for x in inputs:  # (same_object changes only the caller's own tensors)
                if x.__class__ is Tensor and id(x) in stand_ins:
                    inputs = tuple(self.same_object(x) for x in inputs)
                    break
        if self.size_env is not None and any(x.__class__ is SymInt for x in inputs):
            # A size as an operand (x / t): a number read at each call, as a promoted
            # attribute is (symbolic.py), from the sizes the replay runs with.
            inputs = tuple(self._size_scalar(x) if x.__class__ is SymInt else x
                           for x in inputs)
        if any(x.__class__ is SymbolicScalar for x in inputs):
            return self._bind_symbolic(op, inputs, attrs)
        if any(v.__class__ is SymbolicScalar for v in attrs.values()):
            attrs = {k: v.concrete(f"the {k} of {op.name}") if v.__class__ is SymbolicScalar
                     else v for k, v in attrs.items()}
        check_inputs(op, inputs)
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
        check_inputs(op, plain)
        return self._bind(op, plain, attrs, symbolic=inputs)

    def _bind(self, op, inputs, attrs, symbolic=None):
        if self._builder.expected is not None and symbolic is None and \
                not instrument._before_op:
            return self._bind_as_before(op, inputs, attrs)
        operands = []
        for x in inputs:
            operands.append(Aval(x.shape, x.dtype, x.device) if isinstance(x, Tensor)
                            else (x.item() if isinstance(x, np.generic) else x))
        if self.size_env is not None:  # sizes the front end made plain ints (sizes.attach_attrs)
            attrs = attach_attrs(attrs, operands, self.size_env)
        device = None if any(isinstance(x, Tensor) for x in inputs) else _attr_device(attrs)
        try:
            aval = infer_aval(op, operands, attrs, device)
        except RuleError as exc:
            raise op_error(exc.cls, op.name, inputs, exc.problem) from None
        if self.size_env is not None:  # sizes a rule computed as plain ints (sizes.attach)
            aval = aval._replace(shape=attach(tuple(aval.shape), operands, attrs, op.name))
        if instrument._before_op:
            instrument.op_started(op, inputs, attrs)
        refs = tuple(self._scalar_ref(x, inputs) if x.__class__ is SymbolicScalar
                     else self._ref(x) for x in symbolic or inputs)
        node_id = self._builder.new_id()
        self._builder.add(Node(node_id, op.name, refs, make_attrs(attrs), tuple(aval.shape),
                               aval.dtype, str(aval.device), _scope._state.current,
                               user_location()))
        self._builder.avals[node_id] = aval
        if instrument._before_op:  # a debugger: the names it shows inside the jit
            note_names(self, self._builder.graph)
        return self._bound(op, inputs, attrs, node_id, aval, symbolic)

    def _bind_as_before(self, op, inputs, attrs):
        """``_bind`` while this segment has so far traced the previous call's nodes
        (graph/segment_match.py): an op on the same operand nodes with the same literals
        and attributes has the type it had then, so its rules need not run again; a node
        equal in everything, its line and scope included, is the previous call's node."""
        b = self._builder
        refs, places = [], []  # places: the tensor operands' layouts
        literals = None  # (node ids alone compare exactly with ==)
        for x in inputs:
            if isinstance(x, Tensor):
                d = x._data
                if d.__class__ is TracedValue and d.tracer is self and \
                        d.version == d.storage.version:  # (the usual operand: at once)
                    ref = d.node_id
                    places.append(d.proxy)
                else:
                    storage, view, proxy, d = self._place(x)
                    if d is None:
                        ref = self._view_node(storage, view)
                    elif d.version != storage.version:
                        ref = d.node_id = self._view_node(storage, view)
                        d.version = storage.version
                    else:
                        ref = d.node_id
                    places.append(proxy)
            else:
                ref = literals = Literal(x.item() if isinstance(x, np.generic) else x)
            refs.append(ref)
        refs = tuple(refs)
        expected = b.expected
        theirs = expected.graph.nodes if expected is not None else ()
        k = len(b.graph.nodes)
        before = theirs[k] if k < len(theirs) else None
        aval = expected.avals.get(before.id) if before is not None else None
        if aval is None or before.op != op.name or before.id != b.next_id or \
                not (refs == before.inputs if literals is None else
                     same_operands(refs, before.inputs)) or \
                not (attrs_as_before(attrs, before.attrs) if attrs else not before.attrs):
            operands = [Aval(x.shape, x.dtype, x.device) if isinstance(x, Tensor)
                        else (x.item() if isinstance(x, np.generic) else x) for x in inputs]
            device = None if any(isinstance(x, Tensor) for x in inputs) else \
                _attr_device(attrs)
            try:
                aval = infer_aval(op, operands, attrs, device)
            except RuleError as exc:
                raise op_error(exc.cls, op.name, inputs, exc.problem) from None
            before = None
        node_id = b.next_id  # (b.new_id(), inline)
        b.next_id = node_id + 1
        # (from past this frame's callers: bind, or _bind and bind, then dispatch.apply,
        # bind's only caller; all execmode's own)
        loc, scope = user_location(sys._getframe(3)), _scope._state.current
        if before is not None and (before.loc is loc or before.loc == loc) and \
                before.scope == scope:
            b.graph.nodes.append(before)  # the very node: nothing of it differs
        else:
            b.add(Node(node_id, op.name, refs, make_attrs(attrs) if attrs else (),
                       tuple(aval.shape), aval.dtype, str(aval.device), scope, loc))
        b.avals[node_id] = aval
        name = op.name
        if name in VIEW_OPS or name == "debug_print":
            return self._bound(op, inputs, attrs, node_id, aval, None, places)
        # A fresh result (``_result``'s last case, inline: most ops of a re-run segment).
        shape = tuple(aval.shape)
        # (its sizes are plain ints unless sizes are symbolic: the layout's cache key)
        if not _fresh_c_contiguous(op, shape, places):
            proxy = None
        else:
            proxy = contiguous_layout(shape) if self.size_env is None else \
                contiguous_proxy(shape)
        # (_new_tensor's work, inline: a storage of its own)
        dtype, device = aval.dtype, aval.device
        t = object.__new__(Tensor)
        t._data = TracedValue(self, node_id, shape, dtype, device,
                              Storage(node_id, shape, dtype, device), (), proxy)
        t.requires_grad = False
        self.live.append(weakref.ref(t))
        if op.vjp is not None and places and dispatch.grad_enabled():
            for x in inputs:
                if isinstance(x, Tensor) and x.requires_grad:
                    self._record_grad(op, inputs, attrs, t, None)
                    break
        return t

    def _bound(self, op, inputs, attrs, node_id: int, aval: Aval, symbolic,
               proxies=None) -> Tensor:
        """The traced result of a bound op, with its autograd node as eagerly
        (``proxies``: the tensor operands' layouts, where the caller has placed them)."""
        t = self._result(op, inputs, attrs, node_id, aval, proxies)
        if dispatch.grad_enabled() and op.vjp is not None:
            self._record_grad(op, inputs, attrs, t, symbolic)
        return t

    def _record_grad(self, op, inputs, attrs, t: Tensor, symbolic) -> None:
        """``t``'s autograd node, where an operand requires grad (grad mode is on)."""
        for x in inputs:
            if isinstance(x, Tensor) and x.requires_grad:
                # Symbolic numbers stay symbolic in the vjp (d(lr * x)/dx = lr).
                saved = dispatch.record_grad(op, symbolic or inputs, attrs, t)
                if saved is not None:
                    self.adopt(saved)
                break

    def _result(self, op, inputs, attrs, node_id: int, aval: Aval, proxies=None) -> Tensor:
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
        # A fresh result.
        if proxies is None:
            proxies = [self._place(x)[2] for x in inputs if isinstance(x, Tensor)]
        known = _fresh_c_contiguous(op, aval.shape, proxies)
        return self._new_tensor(node_id, aval,
                                proxy=contiguous_proxy(aval.shape) if known else None)

    def _note_layout(self, storage: Storage, op_name: str) -> None:
        """A reshape of an argument was a view because of the argument's strides: a call
        with other strides must trace again (the jit guards these layouts)."""
        if op_name == "reshape" and storage.source is not None and \
                storage.source.kind == "arg":
            self.layout_args.add(storage.source.leaf_index)


def _fresh_c_contiguous(op, shape, proxies) -> bool:
    """Whether ``op``'s fresh result is C-contiguous eagerly, from its operands' layouts
    (None: not known). NumPy lays a result out like its inputs ("K" order): C-contiguous
    when they are, and up to NumPy otherwise, unless it has one axis, or is a concat or an
    elementwise op of C-ordered inputs, flipped or strided ones included: NumPy orders the
    result's axes by the inputs' absolute strides, and every elementwise impl, NumPy's and
    the C operators', allocates so."""
    return len(shape) <= 1 or op.name in _ALWAYS_C_ORDER or all(
        p is not None and p.flags.c_contiguous for p in proxies) or (
        (op.name == "concat" or op.is_elementwise)
        and all(p is not None and c_ordered(p) for p in proxies))


def _no_symbolic_number(attrs: dict) -> bool:
    """No attribute is a symbolic number (symbolic.py)."""
    for v in attrs.values():
        if v.__class__ is SymbolicScalar:
            return False
    return True


def _attr_device(attrs):
    from ..backend import as_device

    return as_device(attrs.get("device"))
