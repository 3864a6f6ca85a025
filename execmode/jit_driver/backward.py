"""Backward through a jitted function's results: AOTAutograd's joint graph, execmode's way.

While ``em.jit`` traces a call with grad on, every op still records its autograd node over
the traced tensors (``Tracer._bind``), so when the function returns, the tape that eager
would walk is there, made of traced values. Before the trace finishes, :func:`prepare`
walks that tape backward from the results that eager would hand back differentiable,
exactly as ``autograd.backward`` does (the same vjp rules, the same order, the same
checks), but under a second tracer of its own: the backward graph. Its inputs are the
results' gradients (cotangents, as arguments), the forward values the vjp rules read (as
*saved* inputs) and the captured tensors they read (by reference, as eagerly); its outputs
are each contribution to the gradient of a tensor outside the call (an argument, a
captured parameter, a value from before a graph break), in the order eager adds them.

The forward graph gets the saved values as extra results, so the memory planner sees them
with the rest: what the vjp rules read is what is saved, as PyTorch's ``default_partition``
stashes what its backward reads (torch/_functorch/partitioners.py); nothing is recomputed
(its ``min_cut_rematerialization_partition``, which trades saved values for recomputed
cheap ops, is not done). Saving a value the forward returns, an input, or a view of one
costs nothing.

The differentiable outputs are the returned values with a history of the call, and the
arguments and captures it wrote with one (``x += w``: eagerly the caller's ``x`` has it
after the call). Tensors whose nodes existed before the trace (an argument's eager
history, an earlier call's results) are the call's inputs: eager's backward goes on into
them. A history the call found on a tensor it overwrote from its own value (``h += w``)
differs at every call, so such a function re-runs its Python at every call.

At every call (trace, replay, fast replay) :meth:`JointBackward.attach` gives the
differentiable results one shared :class:`JitCall`, a ``tape.MultiOutputOp``: eager's
backward gives it every result's gradient at once, and it runs the compiled backward graph
(traced once per set of results that got a gradient, compiled on first use, with the
forward's passes and backend; graph id ``f#0:0/backward``). Saved values live as long as
the results do, so a second backward works as eager's does (execmode keeps its tape).
Where eager's backward would refuse (a tensor overwritten in place after the function used
it), the call refuses with eager's reason.

Functions with graph breaks: the tape of the segments before the last break is made of
real tensors once the segments ran, and eager's backward walks it; only the last segment's
part is a compiled graph (its boundary includes the earlier values).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import dispatch, tape
from .. import functional as F
from .._tensor import Tensor
from ..autograd import SECOND_BACKWARD, check_not_overwritten, node_saves
from ..backend import device_of_array, xp_for
from ..errors import BackwardError, describe_operand
from ..grad_mode import no_grad
from ..graph.trace import Tracer
from ..graph.traced_value import TracedValue
from ..graph.views import replay
from ..scope import named_scope
from ..tape import GradNode, MultiOutputOp
from .float_errors import run_plan

_CANNOT = ("backward() through the result of an em.jit function: {why}. Call backward() "
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


@dataclass
class JointBackward:
    """What one traced signature needs to differentiate its results."""

    jitted: object             # the JitFunction (compiles the backward graph like a segment)
    rebuild: object            # results.build_results: tensors from a plan's outputs and specs
    graph_id: str              # "f#0:0/backward"
    # Each differentiable output's tensor at a call: ("result", index among the results)
    # or ("ref", the argument or capture the function wrote with a history: results.resolve).
    results: list
    inputs: list               # refs of the tensors gradients flow into (results.resolve)
    # The tensors visible outside the call that its nodes read (eager checks them for
    # overwrites): ("ref", an argument or capture) or ("result", a returned value).
    checks: list = field(default_factory=list)
    saved_specs: list = field(default_factory=list)
    n_results: int = 0
    backend: object = None
    refusal: str | None = None
    # Outputs whose own backward eager would refuse (an op on their way read a value
    # overwritten later), by index: a backward through the others still runs.
    refusals: dict = field(default_factory=dict)
    graphs: dict = field(default_factory=dict)   # mask -> BackwardGraph
    tape: object = None        # _Tape, kept to trace the graph of other masks
    # Why each call must re-run the Python (a history that changes per call), or "".
    per_call: str = ""
    saved_tensors: list = field(default_factory=list)    # while tracing: the saved values

    # --- at every call ----------------------------------------------------------------
    def attach(self, results: list, leaves, outputs) -> None:
        """Give this call's differentiable results their shared node."""
        saved = [] if self.refusal else self.saved_arrays(results, leaves, outputs)
        inputs = tuple(_resolve(ref, leaves) for ref in self.inputs)
        checked = [results[r] if kind == "result" else _resolve(r, leaves)
                   for kind, r in self.checks]
        call = JitCall(self, inputs, saved, checked)
        for k, (kind, r) in enumerate(self.results):
            t = results[r] if kind == "result" else _resolve(r, leaves)
            t.requires_grad = True
            t._grad_fn = GradNode(call, inputs, {"output": k}, None)

    def saved_arrays(self, results, leaves, outputs) -> list:
        saved: list = []
        for spec in self.saved_specs:
            kind = spec[0]
            if kind == "out":
                array = outputs[spec[1]]
                saved.append(replay(spec[2], array) if spec[2] else array)
            elif kind == "same":
                j = spec[1]
                saved.append(results[j]._data if j < self.n_results
                             else saved[j - self.n_results])
            elif kind == "arg":
                saved.append(leaves[spec[1]]._data)
            elif kind == "view":
                saved.append(replay(spec[2], spec[1].read(leaves)))
            elif kind == "grad":
                saved.append(_resolve(spec[1], leaves)._grad._data)
            else:  # a capture the function wrote: its array after the call
                saved.append(spec[1]._data)
        return saved

    # --- at backward ------------------------------------------------------------------
    def graph_for(self, mask: tuple) -> BackwardGraph:
        bg = self.graphs.get(mask)
        if bg is None:
            bg = self.graphs[mask] = _trace_backward(self, self.tape, mask)
        if bg.compiled is None:
            bg.compiled = self.jitted.compile_segment(bg.segment.graph, bg.backend)
        return bg


class JitCall(MultiOutputOp):
    """One call's results' shared autograd node: its backward runs the backward graph."""

    __slots__ = ("joint", "inputs", "saved", "checked", "made_at")

    def __init__(self, joint: JointBackward, inputs: tuple, saved: list, checked: list):
        self.joint, self.inputs, self.saved, self.checked = joint, inputs, saved, checked
        self.made_at = tape._tick

    @property
    def name(self) -> str:
        return f"em.jit({self.joint.jitted.name})"

    def backward(self, gradients: dict) -> list:
        joint = self.joint
        if joint.refusal is not None:
            raise BackwardError(joint.refusal)
        for k in sorted(gradients):
            if k in joint.refusals:
                raise BackwardError(joint.refusals[k])
        if dispatch.current_tracer() is not None:
            raise BackwardError(_CANNOT.format(
                why="the ops that made it ran in a compiled graph, whose backward cannot be "
                    "traced into another jitted function's graph"))
        mask = tuple(sorted(gradients))
        bg = joint.graph_for(mask)
        if bg.freed_at is not None:
            raise BackwardError(f"backward through {bg.freed_at}: {SECOND_BACKWARD}")
        self.saves_for_backward = bg.saves  # whether autograd frees this node afterwards
        self._check_writes(gradients, bg)
        leaves = [gradients[k][1] for k in mask]
        for array in self.saved:
            t = object.__new__(Tensor)
            t._data, t.requires_grad = array, False
            leaves.append(t)
        arrays = [src.read(leaves) for src in bg.segment.sources]
        outputs = run_plan(bg.compiled.plan, arrays)
        grads = joint.rebuild(bg.specs, leaves, outputs)
        return [(self.inputs[i], g) for i, g in zip(bg.receivers, grads)]

    def _check_writes(self, gradients: dict, bg: BackwardGraph) -> None:
        """Eager refuses a backward through values overwritten in place after an op used
        them; so does the call, for what its nodes on the way read from outside and what
        it returns."""
        stale = [self.checked[i] for i in bg.checked
                 if getattr(self.checked[i], "_written_at", 0) > self.made_at]
        for result, _ in gradients.values():
            if getattr(result, "_written_at", 0) > self.made_at and any(
                    np.may_share_memory(result._data, s) for s in self.saved
                    if isinstance(s, np.ndarray) and isinstance(result._data, np.ndarray)):
                stale.append(result)
        if stale:
            raise BackwardError(
                f"backward through {self.name}: {describe_operand(stale[0])} was overwritten "
                f"in place (assign, setitem or an augmented assignment such as -=) after "
                f"the call used it, so its gradient cannot be computed; update it out of "
                "place, or call backward() before the in-place update")

    def output_overwritten(self, target: Tensor) -> None:
        """``target`` (a result of this call) is about to be overwritten with autograd
        recording (``y += 1``): keep the values the backward reads from its memory, as
        eager keeps an op's saved output (functional/state.py)."""
        data = target._data
        for i, s in enumerate(self.saved):
            if isinstance(s, np.ndarray) and isinstance(data, np.ndarray) and \
                    np.may_share_memory(s, data):
                self.saved[i] = s.copy()


def _resolve(ref, leaves) -> Tensor:
    """A tensor reference of a trace (results.resolve): ("arg", i) is the call's i-th leaf."""
    return leaves[ref[1]] if isinstance(ref, tuple) else ref


# --- at trace time ------------------------------------------------------------------------

@dataclass
class _Tape:
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
    # id(forward view of an argument or capture) -> (the input's forward tensor, steps)
    input_views: dict = field(default_factory=dict)
    name: str = ""
    signature: str = ""


def tape_clock() -> int:
    """A tick of the autograd clock (tape.py) before a trace: every node the trace makes
    is stamped after it, every node that existed before (an argument's history, an
    earlier call's results) before it."""
    tape._tick += 1
    return tape._tick


def prepare(jitted, rebuild, tracer: Tracer, out_leaves: list, n_results: int,
            graph_id: str, backend=None, began: int = 0) -> JointBackward | None:
    """Trace the backward of the results that eager would hand back differentiable (the
    traced tape from them to the tensors outside the call); None when there are none.
    Called inside the forward trace, before it finishes: the forward finishes with
    ``joint.saved_tensors`` as extra results, whose specs :func:`take_saved_specs` keeps.
    ``began``: :func:`tape_clock` before the trace."""
    outputs, results, seen = [], [], set()
    for r, t in enumerate(out_leaves):
        if id(t) in seen or not _interior(t, tracer, began) or id(t) in tracer.assigned \
                or id(t) in tracer.stand_in_of:
            continue  # (a written argument or capture: below)
        seen.add(id(t))
        outputs.append(t)
        results.append(("result", r))
    # Arguments and captures the function wrote with a history (x += w): eagerly the
    # caller's own tensors have it after the call; so they are outputs too.
    written = [t for t in tracer.user_stand_in.values() if _interior(t, tracer, began)]
    written += [t for t, _, _ in tracer.flags_before.values() if _interior(t, tracer, began)]
    for t in written:
        if id(t) not in seen:
            seen.add(id(t))
            outputs.append(t)
            results.append(("ref", tracer.owner_ref(t)))
    if not outputs:
        return None
    joint = JointBackward(jitted, rebuild, f"{graph_id}/backward", results, [],
                          n_results=n_results, backend=backend)
    _rebind_earlier_segments(tracer)
    nodes = {id(t): t._grad_fn for t in _order(
        outputs, lambda x: _interior(x, tracer, began), lambda t: t._grad_fn)}
    tp = _Tape(outputs, nodes, dict(tracer.capture_labels), name=tracer.name,
               signature=tracer.signature)
    _list_checks(joint, tp, tracer, out_leaves)
    try:
        bg = _trace_backward(joint, tp, tuple(range(len(outputs))), tracer)
    except BackwardError as exc:  # eager's backward would refuse: so does the call ...
        # ... through the outputs whose own way reads an overwritten value (g0 += v0;
        # v0 *= 0.5 refuses g0's backward, not v0's: slow tier, program 1858958899-8911).
        joint.refusals = _refused_outputs(joint, tp, tracer)
        good = tuple(k for k in range(len(outputs)) if k not in joint.refusals)
        if not joint.refusals or not good:
            joint.refusal, joint.refusals = str(exc), {}
            return joint
        try:
            bg = _trace_backward(joint, tp, good, tracer)
        except BackwardError as again:
            joint.refusal, joint.refusals = str(again), {}
            return joint
        except Exception as again:  # noqa: BLE001 - as below
            joint.refusal, joint.refusals = _CANNOT.format(
                why=f"its backward could not be traced ({type(again).__name__}: {again})"), {}
            return joint
    except Exception as exc:  # noqa: BLE001 - the forward is fine; its backward is not
        joint.refusal = _CANNOT.format(
            why=f"its backward could not be traced ({type(exc).__name__}: {exc})")
        return joint
    joint.graphs[bg.mask] = bg
    joint.tape = tp
    joint.inputs = [tracer.owner_ref(t) for t in tp.boundary]
    # A gradient flowing into a history that the call found on a tensor it overwrote from
    # its own value (h += w keeps h's earlier history in a copy): that history is another
    # one at every call, which a replay would not see.
    if any(t._data.__class__ is TracedValue and t._data.tracer is tracer and
           id(t) not in tracer.stand_in_of for t in tp.boundary):
        joint.per_call = ("autograd: a tensor overwritten from its own value carries its "
                          "history from before the call into the backward")
    joint.saved_tensors = [None] * len(tp.saved_of)
    for key, j in tp.saved_of.items():
        joint.saved_tensors[j] = tp.forward[key]
    return joint


def take_saved_specs(joint: JointBackward | None, specs: list) -> list:
    """Split ``finish``'s specs: the results' (returned) and the saved values' (kept)."""
    if joint is None:
        return specs
    joint.saved_specs = specs[joint.n_results:]
    joint.saved_tensors = []  # the traced values: not needed any more
    return specs[:joint.n_results]


def _interior(t, tracer, began) -> bool:
    """A tensor of this trace with a node this trace made (not the node an argument or a
    capture came with: the caller's history, an earlier call's results)."""
    return isinstance(t, Tensor) and t._grad_fn is not None and \
        t._data.__class__ is TracedValue and t._data.tracer is tracer and \
        t._grad_fn.made_at >= began


def _refused_outputs(joint, tp, tracer) -> dict:
    """Output index -> eager's refusal, for the outputs whose own backward reaches a node
    whose inputs were overwritten after it used them (autograd.check_not_overwritten).
    An output whose history reaches such a node is traced alone: eager's walk stops where
    no gradient flows (em.sign's), so only a walk with the rules says whether it gets
    there."""
    refused = {}
    for k, out in enumerate(tp.outputs):
        for t in _order([out], lambda x: id(x) in tp.nodes, lambda x: tp.nodes[id(x)]):
            try:
                check_not_overwritten(t, tp.nodes[id(t)])
            except BackwardError as exc:
                refused[k] = str(exc)
                break
    for k in list(refused):
        try:
            _trace_backward(joint, tp, (k,), tracer)
        except BackwardError as exc:
            refused[k] = str(exc)
        else:
            del refused[k]
    return refused


def _order(outputs, is_interior, node_of) -> list:
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


def _list_checks(joint: JointBackward, tp: _Tape, tracer: Tracer, out_leaves) -> None:
    """Number what the traced nodes read that the caller can still write after the call
    (arguments, captures, returned values): eager's backward checks them (joint.checks)."""
    returned = {id(t): r for r, t in reversed(list(enumerate(out_leaves)))}
    for node in tp.nodes.values():
        for x in (*node.inputs, node.saved_output):
            if not isinstance(x, Tensor) or id(x) in tp.check_index:
                continue
            if x._data.__class__ is not TracedValue or x._data.tracer is not tracer or \
                    id(x) in tracer.stand_in_of or id(x) in tracer.assigned:
                entry = ("ref", tracer.owner_ref(x))
            elif id(x) in returned:
                entry = ("result", returned[id(x)])
            else:
                continue
            tp.check_index[id(x)] = len(joint.checks)
            joint.checks.append(entry)


def _rebind_earlier_segments(tracer: Tracer) -> None:
    """After a graph break, the tape of the earlier segments is real (eager's backward
    walks it), but it names the arguments' stand-ins: point it at the caller's tensors, so
    that their gradients land where eager puts them."""
    if not tracer.segments:
        return
    stand_ins = tracer.stand_in_of
    seen: set = set()
    stack = [t for t in (ref() for ref in tracer.live)
             if t is not None and t._grad_fn is not None]
    while stack:
        node = stack.pop()._grad_fn
        if node is None or id(node) in seen or isinstance(node.op, MultiOutputOp):
            continue
        seen.add(id(node))
        if any(id(x) in stand_ins for x in node.inputs):
            node.inputs = tuple(stand_ins.get(id(x), x) for x in node.inputs)
        stack.extend(x for x in node.inputs
                     if isinstance(x, Tensor) and x._grad_fn is not None)


def _operand(x, tp: _Tape, first: bool, tracer=None, views=None):
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
    hit = tp.placeholders.get(id(x))
    if hit is not None or not first:
        return x if hit is None else hit
    d = x._data
    if d.__class__ is not TracedValue:
        return x
    base = _input_base(d, tracer) if d.view else None
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


def _input_view(x: Tensor, recipe: tuple, tp: _Tape, views: dict) -> Tensor:
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


def _trace_backward(joint: JointBackward, tp: _Tape | None, mask: tuple,
                    tracer=None) -> BackwardGraph:
    """Trace the backward graph for the outputs in ``mask``: autograd.backward's walk,
    from several roots, under a tracer of its own. With ``tracer`` (the forward's, still
    tracing) this is the first trace, for every output: it decides the saved values and
    the inputs, and checks what eager checks; the traces of other masks reuse them."""
    if tp is None:
        raise BackwardError(_CANNOT.format(why="its backward could not be traced"))
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
    freed_at, saves = None, False
    try:
        with bw, no_grad(), named_scope("backward"):
            grads = {id(tp.outputs[k]): g for k, g in zip(mask, cotangents)}
            for t in _order([tp.outputs[k] for k in mask], lambda x: id(x) in tp.nodes,
                            lambda x: tp.nodes[id(x)]):
                g = grads.pop(id(t), None)
                if g is None:
                    continue
                node = tp.nodes[id(t)]
                if node.freed and freed_at is None:
                    freed_at = node.op.name
                saves = saves or node_saves(node)
                if first:
                    check_not_overwritten(t, node)
                for x in (*node.inputs, node.saved_output):
                    index = tp.check_index.get(id(x))
                    if index is not None:
                        checked.add(index)
                args = [_operand(x, tp, first, tracer, views) for x in node.inputs]
                saved = _operand(node.saved_output, tp, first, tracer, views)
                in_grads = node.op.vjp(g, saved, *args, **node.attrs)
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
            segment, specs = bw.finish([gx for _, gx in flow])
    except BaseException:
        bw.abort()
        raise
    receivers = []
    for x, _ in flow:
        index = tp.inputs_of.get(id(x))
        if index is None:
            index = tp.inputs_of[id(x)] = len(tp.boundary)
            tp.boundary.append(x)
        receivers.append(index)
    # The placeholders the rules read are the saved values: the backward graph takes them
    # as arguments after the gradients.
    n_cot = len(mask)
    for src in segment.sources:
        key = id(src.tensor._data) if src.kind == "capture" else None
        if key in tp.forward:
            j = tp.saved_of.get(key)
            if j is None:
                if not first:
                    raise BackwardError(_CANNOT.format(
                        why="its backward reads a value the forward did not save"))
                j = tp.saved_of[key] = len(tp.saved_of)
            src.kind, src.leaf_index, src.tensor = "arg", n_cot + j, None
    specs = [("arg", n_cot + tp.saved_of[id(s[1]._data)]) if s[0] == "const" and
             isinstance(s[1], Tensor) and id(s[1]._data) in tp.saved_of else s for s in specs]
    return BackwardGraph(mask, segment, specs, receivers, sorted(checked), joint.backend,
                         freed_at=freed_at, saves=saves)


def _receives(x: Tensor, tp: _Tape, tracer) -> bool:
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
