"""Tracing the backward graph of a jitted call's results (backward.py says the design).

``trace_backward`` walks the traced tape from the outputs in a mask, as autograd.backward
walks eager's tape (the same vjp rules, order and checks), under a tracer of its own: the
gradients are its arguments, the forward values the rules read are saved inputs, and a
view of an argument, a capture or an op's result is made again from the whole value. The
:class:`BackwardTape` keeps what the first trace decided (saved values, inputs, checks),
so that the traces of other masks reuse it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import functional as F
from .. import tape
from .._tensor import Tensor
from ..autograd import check_not_overwritten, node_saves, reads_no_values_of
from ..backend import device_of_array, xp_for
from ..errors import BackwardError
from ..grad_mode import no_grad
from ..graph.trace import Tracer
from ..graph.traced_value import TracedValue
from ..scope import named_scope

CANNOT = ("backward() through the result of an em.jit function: {why}. Call backward() "
           "inside the jitted function (a whole training step is one graph), or compute "
           "this result eagerly")


@dataclass
class BackwardGraph:
    """The backward graph for one set of results that got a gradient (``mask``)."""

    mask: tuple
    segment: object            # segments.Segment: graph and input sources
    specs: list                # how each gradient is rebuilt (trace.result_spec)
    receivers: list            # per gradient: the index of the input it flows into
    checked: list              # indices into JointBackward.checks: what its nodes read
    backend: object = None
    compiled: object = None    # CompiledSegment, on first use
    # A node on the way that a backward inside the call already went through without
    # retain_graph (its op's name): eager raises there, so the call's backward does too.
    freed_at: str | None = None
    saves: bool = True         # a node on the way saves values (autograd.node_saves)
    # Those nodes (ids of the traced tape's): a later backward of another mask is refused
    # only if it needs one that this one freed, as eager frees each op's values apart.
    saving_nodes: frozenset = frozenset()
    # What nodes on the way ask to run at each backward through this graph, before it
    # runs (an op's ``at_each_backward``: DistributedDataParallel's node queues the
    # averaging of the gradients the graph sends, as its eager backward does).
    at_each_backward: tuple = ()
    # Eager adds a leaf's gradient into its .grad in place as soon as its walk reaches the
    # leaf: a later node on the way that needs the values of that .grad (maximum(w.grad,
    # w)) then refuses. (receiver index, index into JointBackward.checks, the node's op)
    # for each such read; the call refuses where that .grad is still the leaf's then.
    accumulated_reads: tuple = ()
    # The checks some node on the way needs the values of; the others are read by ops
    # that save nothing of them, which a write that is backward's accumulation leaves
    # differentiable (autograd._only_accumulated_into).
    values_read: frozenset = frozenset()


@dataclass
class BackwardTape:
    """The traced tape of one trace, kept after it to trace the graph of other masks
    (its tensors are poisoned by then: everything is keyed by the tensor objects)."""

    outputs: list              # the differentiable outputs (traced tensors), by position
    # id(traced tensor with a node of this trace) -> that node (a written capture's own
    # node changes after the call: it becomes one of the call's outputs)
    nodes: dict
    labels: dict               # input labels of the backward trace
    placeholders: dict = field(default_factory=dict)  # id(tensor) -> its placeholder
    by_value: dict = field(default_factory=dict)      # id(traced value) -> array
    forward: dict = field(default_factory=dict)       # id(array) -> a forward tensor
    saved_of: dict = field(default_factory=dict)      # id(array) -> saved index
    inputs_of: dict = field(default_factory=dict)     # id(input tensor) -> input index
    boundary: list = field(default_factory=list)      # the input tensors, in order
    check_index: dict = field(default_factory=dict)   # id(tensor) -> joint.checks index
    # joint.checks index of a leaf's .grad (a ("grad", ref) check) -> that leaf's tensor
    grad_owners: dict = field(default_factory=dict)
    # id(forward view of an argument or capture) -> (the input's forward tensor, steps)
    input_views: dict = field(default_factory=dict)
    # id(traced value) -> the node that made it (the values of the tensors in ``nodes``)
    value_nodes: dict = field(default_factory=dict)
    # ids of the traced values the backward graph computes again (recomputed_values), and
    # id(tensor) -> its value's node for the tensors the first trace found holding one
    # (the traces of other masks know them by tensor: the values are gone by then)
    recompute: frozenset = frozenset()
    recomputed: dict = field(default_factory=dict)
    name: str = ""
    signature: str = ""


def autograd_order(outputs, is_interior, node_of) -> list:
    """The interior tensors reachable from ``outputs``, each after its consumers (as
    autograd's order, from several roots); ``node_of(t)``: t's node."""
    order, visited = [], set()
    stack = [(t, False) for t in reversed(outputs)]
    while stack:
        t, expanded = stack.pop()
        if expanded:
            order.append(t)
            continue
        if id(t) in visited:
            continue
        visited.add(id(t))
        stack.append((t, True))
        for x in reversed(node_of(t).inputs):
            if id(x) not in visited and is_interior(x):
                stack.append((x, False))
    order.reverse()
    return order


def _operand(x, tp: BackwardTape, first: bool, tracer=None, views=None):
    """A vjp operand in the backward trace: a forward value becomes a saved input (a
    capture of the backward trace, so only what a rule reads becomes an input, on memory
    of no size); captured tensors stay themselves (read by reference, as eagerly). A view
    of an argument or a capture (``w.T`` in a linear layer) is the view op again, in the
    backward graph, of the input itself: the kernels read it in place, where a saved
    transposed view would be copied into their layout at every backward."""
    if not isinstance(x, Tensor):
        return x
    recipe = tp.input_views.get(id(x))
    if recipe is not None:
        return _input_view(x, recipe, tp, views)
    node = tp.recomputed.get(id(x))
    if node is None and first and id(x._data) in tp.recompute:
        node = tp.recomputed[id(x)] = tp.value_nodes[id(x._data)]
    if node is not None and views is not None:
        return _recomputed(x, node, tp, tracer, views)
    hit = tp.placeholders.get(id(x))
    if hit is not None or not first:
        return x if hit is None else hit
    d = x._data
    if d.__class__ is not TracedValue:
        return x
    base = _input_base(d, tracer) if d.view else None
    if base is None and d.view:
        base = _value_base(x, d, tp)
    if base is not None:
        tp.input_views[id(x)] = (base, d.view)
        return _input_view(x, tp.input_views[id(x)], tp, views)
    array = tp.by_value.get(id(d))  # tensors sharing a value (a saved output) share it
    if array is None:
        xp = xp_for(d.em_device)
        array = tp.by_value[id(d)] = xp.broadcast_to(xp.zeros((), dtype=d.dtype), d.shape)
        tp.forward[id(array)] = x
    # A tensor of its own, with the forward tensor's flags (vjp rules read requires_grad);
    # the backward trace makes one input per array.
    hit = object.__new__(Tensor)
    hit._data, hit.requires_grad = array, x.requires_grad
    tp.labels[id(hit)] = f"saved %{d.node_id}"
    tp.placeholders[id(x)] = hit
    return hit


def _input_base(d: TracedValue, tracer):
    """The forward tensor holding the whole argument or capture that ``d`` views (the
    capture itself, or the argument's stand-in), or None."""
    source = d.storage.source
    if source is None or tracer is None:
        return None
    if source.kind == "capture" and source.tensor is not None and \
            source.tensor._data.__class__ is not TracedValue:
        return source.tensor
    if source.kind == "arg":
        for t in tracer.user_stand_in.values():
            e = t._data
            if e.__class__ is TracedValue and e.storage is d.storage and not e.view:
                return t
    return None


def _value_base(x: Tensor, d: TracedValue, tp: BackwardTape):
    """The forward tensor holding the whole op result that ``x`` views (``q`` of
    ``qkv.split(...)[0].view(...).transpose(1, 2)``: ``qkv``), found back along the view ops'
    nodes, while nothing has written that memory since; or None. The backward graph then
    saves the whole value and makes the view again (a view of a saved value is free to
    save, but a backward program reads its inputs C-ordered: a saved view arrived strided
    and was copied into that layout at every call, 24 us each for the GPT's q, k and v)."""
    storage = d.storage
    if storage.version != d.version:
        return None
    t = x
    for _ in range(len(d.view)):
        node = tp.nodes.get(id(t))
        if node is None or not node.inputs or not isinstance(node.inputs[0], Tensor):
            return None
        t = node.inputs[0]
        e = t._data
        if e.__class__ is not TracedValue or e.storage is not storage:
            return None
        if not e.view:
            return t if e.version == d.version else None
    return None


# Ops cheap enough to run again in the backward graph rather than save their value: one
# more operation in a kernel the backward runs anyway.
_CHEAP = {"multiply", "add", "subtract", "divide", "negative"}


def recomputed_values(tp: BackwardTape) -> frozenset:
    """Which saved values (``tp``: the tape after a first trace) the backward graph should
    compute again instead: a cheap op of one other value and Python numbers, where that
    value is saved anyway or stands for two or more such (GELU's ``0.5 * h`` and
    ``h / sqrt 2``, both read by its vjps: ``h`` saved once replaces them, and the forward
    kernels that made them fuse into their consumers). The simplest case of AOTAutograd's
    min-cut partitioner, which trades saved values for recomputed ops by their cost. Only
    values nothing can change before the backward: no write since, and neither an
    argument, a capture, a returned value nor a view of one (eager saved the value
    itself, which such a write would not reach). The same bits: the same op on the same
    float values."""
    saved = {id(t._data): t for key, t in tp.forward.items() if key in tp.saved_of}
    operand_of: dict = {}
    for key, t in saved.items():
        u = _cheap_operand(t, tp)
        if u is not None:
            operand_of[key] = id(u._data)
    shared: dict = {}
    for u in operand_of.values():
        shared[u] = shared.get(u, 0) + 1
    return frozenset(key for key, u in operand_of.items() if u in saved or shared[u] > 1)


def _cheap_operand(x: Tensor, tp: BackwardTape):
    """The one tensor operand of ``x``'s cheap op (recomputed_values), or None."""
    d = x._data
    node = tp.value_nodes.get(id(d))
    if node is None or node.op.name not in _CHEAP or node.attrs or d.view or \
            d.version != d.storage.version or x.dtype.kind != "f":
        return None
    tensors = [i for i in node.inputs if isinstance(i, Tensor)]
    if len(tensors) != 1 or any(not isinstance(i, Tensor) and i.__class__ not in (int, float)
                                for i in node.inputs):
        return None
    u = tensors[0]
    e = u._data
    if e.__class__ is not TracedValue or e.view or e.storage.source is not None or \
            e.version != e.storage.version or u.dtype != x.dtype or u.shape != x.shape:
        return None
    if any(o._data.__class__ is TracedValue and o._data.storage is e.storage
           for o in tp.outputs):
        return None
    return u


def _recomputed(x: Tensor, node, tp: BackwardTape, tracer, views: dict) -> Tensor:
    """``x``'s value (made by ``node``) computed again in the backward trace from its
    operand, once per trace."""
    hit = views.get(id(node))
    if hit is None:
        from .. import dispatch as _dispatch

        args = [_operand(i, tp, True, tracer, views) if isinstance(i, Tensor) else i
                for i in node.inputs]
        hit = _dispatch.apply(node.op, *args, **node.attrs)
        hit.requires_grad = x.requires_grad
        views[id(node)] = hit
    return hit


def _input_view(x: Tensor, recipe: tuple, tp: BackwardTape, views: dict) -> Tensor:
    """``x`` (a view of an input) made in the backward trace from the input, once per
    trace; with ``x``'s flags (vjp rules read requires_grad)."""
    hit = views.get(id(x))
    if hit is None:
        from .. import dispatch as _dispatch
        from ..ops import OPS

        base, steps = recipe
        hit = _operand(base, tp, True)
        for step in steps:
            hit = _dispatch.apply(OPS[step.op], hit, **step.kwargs)
        hit.requires_grad = x.requires_grad
        views[id(x)] = hit
    return hit


def _cotangent_example(t: Tensor) -> Tensor:
    """A real tensor of output ``t``'s type, from which the backward trace makes the
    stand-in of its gradient (``t`` is traced, or after the trace real or poisoned)."""
    d = t._data
    device = getattr(d, "em_device", None) or device_of_array(d)
    xp = xp_for(device)
    e = object.__new__(Tensor)
    e._data = xp.zeros(d.shape, dtype=d.dtype)
    e.requires_grad = False
    return e


def trace_backward(joint, tp: BackwardTape | None, mask: tuple,
                    tracer=None, upto_refusal: bool = False) -> BackwardGraph:
    """Trace the backward graph for the outputs in ``mask``: autograd.backward's walk,
    from several roots, under a tracer of its own. With ``tracer`` (the forward's, still
    tracing) this is the first trace, for every output: it decides the saved values and
    the inputs, and checks what eager checks; the traces of other masks reuse them.

    ``upto_refusal``: the walk of a backward that eager refuses, up to the node where it
    refuses. Its graph runs what eager runs before the refusal (an SVD that fails on an
    inf raises first there): its results are every gradient computed by then, to keep
    those ops; nothing receives them."""
    if tp is None:
        raise BackwardError(CANNOT.format(why="its backward could not be traced"))
    first = tracer is not None
    name = joint.graph_id if len(mask) == len(tp.outputs) else \
        f"{joint.graph_id}[{','.join(map(str, mask))}]"
    bw = Tracer(tp.name, None, None, True, execute=False, signature=tp.signature,
                graph_prefix=name)
    bw.capture_labels = tp.labels
    bw._builder.graph.name = name  # one graph, no segments: no ":0"
    cotangents = [bw.stand_in(_cotangent_example(tp.outputs[k]), i, f"d_output{k}")
                  for i, k in enumerate(mask)]
    checked: set = set()
    views: dict = {}  # views of inputs made in this trace (_input_view)
    flow: list = []   # (tensor outside the call, gradient), in the order eager adds them
    freed_at, saving = None, set()
    flowed: set = set()          # ids of the leaves a gradient reached so far
    reads_values: set = set()    # checks read by a node whose gradient needs their values
    accumulated_reads: list = []  # (leaf, check index, op): reads of .grad after it took one
    each_backward: list = []
    try:
        with bw, no_grad(), named_scope("backward"):
            grads = {id(tp.outputs[k]): g for k, g in zip(mask, cotangents)}
            for t in autograd_order([tp.outputs[k] for k in mask], lambda x: id(x) in tp.nodes,
                            lambda x: tp.nodes[id(x)]):
                g = grads.pop(id(t), None)
                if g is None:
                    continue
                node = tp.nodes[id(t)]
                if node.freed and freed_at is None:
                    freed_at = node.op.name
                if node_saves(node):
                    saving.add(id(node))
                if first or upto_refusal:
                    try:
                        check_not_overwritten(t, node)
                    except BackwardError:
                        if not upto_refusal:
                            raise
                        flow.append((None, g))
                        break
                for x in (*node.inputs, node.saved_output):
                    index = tp.check_index.get(id(x))
                    if index is None:
                        continue
                    checked.add(index)
                    if x is node.saved_output or not reads_no_values_of(x, node):
                        reads_values.add(index)
                        owner = tp.grad_owners.get(index)
                        if owner is not None and id(owner) in flowed:
                            accumulated_reads.append((owner, index, node.op.name))
                args = [_operand(x, tp, first, tracer, views) for x in node.inputs]
                saved = _operand(node.saved_output, tp, first, tracer, views)
                if upto_refusal and tape.refuses_complex(node.op):
                    flow.append((None, g))
                    break
                in_grads = node.op.vjp(g, saved, *args, **node.attrs)
                hook = getattr(node.op, "at_each_backward", None)
                if hook is not None and hook not in each_backward:
                    each_backward.append(hook)
                for x, gx in zip(node.inputs, in_grads):
                    if gx is None or not isinstance(x, Tensor) or not x.requires_grad:
                        continue
                    if gx.dtype != x.dtype:
                        gx = F.astype(gx, x.dtype)
                    if id(x) in tp.nodes:
                        prev = grads.get(id(x))
                        grads[id(x)] = gx if prev is None else prev + gx
                    elif _receives(x, tp, tracer):
                        flow.append((x, gx))
                        if x._grad_fn is None:  # eager adds into a leaf's .grad at once
                            flowed.add(id(x))
            if upto_refusal:
                flow = [(None, gx) for _, gx in flow] + [(None, gx) for gx in grads.values()]
            segment, specs = bw.finish([gx for _, gx in flow])
    except BaseException:
        bw.abort()
        raise
    receivers = []
    for x, _ in flow if not upto_refusal else ():
        index = tp.inputs_of.get(id(x))
        if index is None:
            index = tp.inputs_of[id(x)] = len(tp.boundary)
            tp.boundary.append(x)
        receivers.append(index)
    accumulated = tuple((tp.inputs_of[id(owner)], index, op)
                        for owner, index, op in accumulated_reads if not upto_refusal)
    # The placeholders the rules read are the saved values: the backward graph takes them
    # as arguments after the gradients.
    n_cot = len(mask)
    for src in segment.sources:
        key = id(src.tensor._data) if src.kind == "capture" else None
        if key in tp.forward:
            j = tp.saved_of.get(key)
            if j is None:
                if not first:
                    raise BackwardError(CANNOT.format(
                        why="its backward reads a value the forward did not save"))
                j = tp.saved_of[key] = len(tp.saved_of)
            src.kind, src.leaf_index, src.tensor = "arg", n_cot + j, None
    specs = [("arg", n_cot + tp.saved_of[id(s[1]._data)]) if s[0] == "const" and
             isinstance(s[1], Tensor) and id(s[1]._data) in tp.saved_of else s for s in specs]
    return BackwardGraph(mask, segment, specs, receivers, sorted(checked), joint.backend,
                         freed_at=freed_at, saves=bool(saving),
                         saving_nodes=frozenset(saving), at_each_backward=tuple(each_backward),
                         accumulated_reads=accumulated,
                         values_read=frozenset(reads_values))


def _receives(x: Tensor, tp: BackwardTape, tracer) -> bool:
    """Does ``x`` (not of the traced tape) take a gradient out of the call: an argument,
    a captured tensor, a value from before a graph break, a tensor with the caller's
    history? A leaf made inside the function does not (its .grad is never seen)."""
    if id(x) in tp.inputs_of:
        return True
    if tracer is None:
        return False
    if x._data.__class__ is not TracedValue or id(x) in tracer.stand_in_of or \
            x._grad_fn is not None:
        return True
    # A captured leaf the call wrote in place (an optimizer's step, under no_grad: a leaf
    # that requires grad takes no other in-place write) holds a traced value now, but is
    # still the leaf, as eagerly: what the call computed from it after the write gives
    # it gradients.
    return x.requires_grad and any(src.tensor is x for src in tracer._builder.sources
                                   if src.kind == "capture")
