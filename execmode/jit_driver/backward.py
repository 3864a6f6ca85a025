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
stashes what its backward reads (torch/_functorch/partitioners.py), but for the simplest
case of its ``min_cut_rematerialization_partition``, which trades saved values for
recomputed cheap ops: a first trace on a tape of its own finds what the backward saves,
and a value that is a cheap op of one other value and numbers, where that value is saved
anyway or stands for two such (GELU's ``0.5 * h`` and ``h / sqrt 2``), is computed again
by the backward graph (backward_trace.recomputed_values). Saving a value the forward
returns, an input, or a view of one costs nothing. A view (of an input, or of an op's result nothing wrote since) is saved as
the whole value and made again by the backward graph's own view ops, which its program
reads in place (backward_trace.py).

The differentiable outputs are the returned values with a history of the call, and the
arguments and captures it wrote with one (``x += w``: eagerly the caller's ``x`` has it
after the call). Tensors whose nodes existed before the trace (an argument's eager
history, an earlier call's results) are the call's inputs: eager's backward goes on into
them. A history the call found on a tensor it overwrote from its own value (``h += w``)
differs at every call, so such a function re-runs its Python at every call.

At every call (trace, replay, fast replay) :meth:`JointBackward.attach` gives the
differentiable results one shared ``JitCall`` (joint_backward.py), a
``tape.MultiOutputOp``: eager's backward gives it every result's gradient at once, and it
runs the compiled backward graph (traced once per set of results that got a gradient,
compiled on first use, with the forward's passes and backend; graph id
``f#0:0/backward``). Saved values live as long as the results do, so a second backward
works as eager's does (execmode keeps its tape).
Where eager's backward would refuse (a tensor overwritten in place after the function used
it), the call refuses with eager's reason.

Functions with graph breaks: the tape of the segments before the last break is made of
real tensors once the segments ran, and eager's backward walks it; only the last segment's
part is a compiled graph (its boundary includes the earlier values).

This module decides at trace time what is differentiated and what eager would refuse;
backward_trace.py traces a backward graph, joint_backward.py is the call's node at run time.
"""

from __future__ import annotations

from .. import tape
from .._tensor import Tensor
from ..autograd import check_not_overwritten
from ..errors import BackwardError
from ..graph.trace import Tracer
from ..graph.traced_value import TracedValue
from ..symbolic import SymbolicScalar
from ..tape import MultiOutputOp
from .backward_trace import CANNOT, BackwardTape, autograd_order, recomputed_values, trace_backward
from .joint_backward import JointBackward


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
    # Before any return: results of the segments before a break carry that real tape,
    # whether or not the last segment has differentiable results.
    _rebind_earlier_segments(tracer)
    if not outputs:
        return None
    joint = JointBackward(jitted, rebuild, f"{graph_id}/backward", results, [],
                          n_results=n_results, backend=backend)
    order = autograd_order(outputs, lambda x: _interior(x, tracer, began),
                           lambda t: t._grad_fn)

    def new_tape(recompute=frozenset()) -> BackwardTape:
        tp = BackwardTape(outputs, {id(t): t._grad_fn for t in order},
                          dict(tracer.capture_labels), name=tracer.name,
                          signature=tracer.signature, recompute=recompute)
        # (a value's node, for every tensor that shares it: an op's saved output does)
        tp.value_nodes = {id(t._data): t._grad_fn for t in order
                          if t._data.__class__ is TracedValue}
        return tp

    tp = new_tape(_recompute_first(joint, new_tape(), tracer, out_leaves, len(outputs)))
    _list_checks(joint, tp, tracer, out_leaves)
    try:
        bg = trace_backward(joint, tp, tuple(range(len(outputs))), tracer)
    except BackwardError as exc:  # eager's backward would refuse: so does the call ...
        # ... through the outputs whose own way reads an overwritten value (g0 += v0;
        # v0 *= 0.5 refuses g0's backward, not v0's: slow tier, program 1858958899-8911).
        joint.refusals = _refused_outputs(joint, tp, tracer)
        good = tuple(k for k in range(len(outputs)) if k not in joint.refusals)
        if not joint.refusals or not good:
            joint.refusal, joint.refusals = str(exc), {}
            _trace_prefixes(joint, tp, tracer, range(len(outputs)))
            return joint
        try:
            bg = trace_backward(joint, tp, good, tracer)
        except BackwardError as again:
            joint.refusal, joint.refusals = str(again), {}
            _trace_prefixes(joint, tp, tracer, range(len(outputs)))
            return joint
        except Exception as again:  # noqa: BLE001 - as below
            joint.refusal, joint.refusals = CANNOT.format(
                why=f"its backward could not be traced ({type(again).__name__}: {again})"), {}
            return joint
    except Exception as exc:  # noqa: BLE001 - the forward is fine; its backward is not
        joint.refusal = CANNOT.format(
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
    if joint.refusals:
        _trace_prefixes(joint, tp, tracer, joint.refusals)
    _keep_saved(joint, tp, tracer)
    return joint


def _keep_saved(joint: JointBackward, tp: BackwardTape, tracer: Tracer) -> None:
    """The forward values the backward graphs read: the forward returns them too."""
    joint.scalars = [src.scalar for src in tracer._builder.sources if src.kind == "scalar"]
    joint.saved_tensors = [None] * len(tp.saved_of)
    for key, j in tp.saved_of.items():
        joint.saved_tensors[j] = tp.forward[key]


def _trace_prefixes(joint: JointBackward, tp: BackwardTape, tracer: Tracer, refused) -> None:
    """For a backward that eager refuses: the graphs of what eager's walk runs before it
    refuses (joint.prefixes), by mask: every output's together, and each refused one's
    alone. An op among them can fail first (an SVD of an inf), and eager raises that."""
    masks = {tuple(range(len(tp.outputs)))} | {(k,) for k in refused}
    for mask in sorted(masks):
        try:
            joint.prefixes[mask] = trace_backward(joint, tp, mask, tracer, upto_refusal=True)
        except Exception:  # noqa: BLE001 - without it the call raises the refusal alone
            continue
    if joint.refusal is not None:
        _keep_saved(joint, tp, tracer)


def _recompute_first(joint, tp, tracer, out_leaves, n_outputs: int) -> frozenset:
    """A first trace of the whole backward on a tape of its own, to see what it saves:
    the values its graph should compute again instead (backward_trace.recomputed_values);
    none where that trace fails (the real one then says why)."""
    checks = list(joint.checks)
    try:
        _list_checks(joint, tp, tracer, out_leaves)
        trace_backward(joint, tp, tuple(range(n_outputs)), tracer)
    except Exception:  # noqa: BLE001 - the trace that counts raises it again
        return frozenset()
    finally:
        joint.checks = checks
    return recomputed_values(tp)


def take_saved_specs(joint: JointBackward | None, specs: list) -> list:
    """Split ``finish``'s specs: the results' (returned) and the saved values' (kept)."""
    if joint is None:
        return specs
    joint.saved_specs = specs[joint.n_results:]
    joint.saved_tensors = []  # the traced values: not needed any more
    return specs[:joint.n_results]


def earlier_segment_histories(tracer: Tracer, began: int) -> list:
    """``(ref, node)`` for the arguments (``("arg", leaf index)``) whose stand-in, and the
    captures (the tensor itself) that took a history in a segment before a graph break and
    kept it: a real tape node (eager's backward walks it), which the caller's tensor must
    carry after the call instead of the jit's no-graph node (results.apply_flag_writes
    sets that node on every written capture)."""
    if not tracer.segments:
        return []
    by_id = {id(s): s for s in tracer.user_stand_in.values()}
    out = []
    for stand_in_id, i in tracer.stand_in_index.items():
        stand_in = by_id.get(stand_in_id)
        if _earlier_history(stand_in, tracer, began):
            out.append((("arg", i), stand_in._grad_fn))
    # A capture is written as itself (functionalization.py): its node is on the tensor.
    for t, _, _ in tracer.flags_before.values():
        if _earlier_history(t, tracer, began):
            out.append((t, t._grad_fn))
    return out


def _earlier_history(t, tracer, began) -> bool:
    """Does ``t`` carry a node this trace made in a segment that already ran?"""
    node = getattr(t, "_grad_fn", None)
    return node is not None and node.made_at >= began and \
        not isinstance(node.op, MultiOutputOp) and not _interior(t, tracer, began)


def _interior(t, tracer, began) -> bool:
    """A tensor of this trace with a node this trace made (not the node an argument or a
    capture came with: the caller's history, an earlier call's results)."""
    return isinstance(t, Tensor) and t._grad_fn is not None and \
        t._data.__class__ is TracedValue and t._data.tracer is tracer and \
        t._grad_fn.made_at >= began


def _refused_outputs(joint, tp, tracer) -> dict:
    """Output index -> eager's refusal, for the outputs whose own backward reaches a node
    whose inputs were overwritten after it used them (autograd.check_not_overwritten) or
    a node of complex values (tape.without_complex_gradient). An output whose history
    reaches such a node is traced alone: eager's walk stops where no gradient flows
    (em.sign's), so only a walk with the rules says whether it gets there."""
    refused = {}
    for k, out in enumerate(tp.outputs):
        for t in autograd_order([out], lambda x: id(x) in tp.nodes, lambda x: tp.nodes[id(x)]):
            node = tp.nodes[id(t)]
            if tape.refuses_complex(node.op):
                refused[k] = f"{node.op.name}: no gradient through complex values"
                break
            try:
                check_not_overwritten(t, node)
            except BackwardError as exc:
                refused[k] = str(exc)
                break
    for k in list(refused):
        try:
            trace_backward(joint, tp, (k,), tracer)
        except BackwardError as exc:
            refused[k] = str(exc)
        else:
            del refused[k]
    return refused


def _list_checks(joint: JointBackward, tp: BackwardTape, tracer: Tracer, out_leaves) -> None:
    """Number what the traced nodes read that the caller can still write after the call
    (arguments, captures, returned values): eager's backward checks them (joint.checks)."""
    returned = {id(t): r for r, t in reversed(list(enumerate(out_leaves)))}
    # A leaf's .grad as the call leaves it: backward may add into it in place later, so
    # it is checked as the leaf's .grad after each call (the object the ops read then),
    # whether it was there before the call or the call made it.
    grad_of = {id(value): owner for owner, value in tracer.grad_state.values()
               if value is not None}
    for node in tp.nodes.values():
        for x in (*node.inputs, node.saved_output):
            if not isinstance(x, Tensor) or id(x) in tp.check_index:
                continue
            owner = grad_of.get(id(x))
            if owner is not None:
                entry = ("grad", tracer.owner_ref(owner))
                tp.grad_owners[len(joint.checks)] = owner
            elif x._data.__class__ is not TracedValue or x._data.tracer is not tracer or \
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
    # A stand-in the function wrote in place (x.zero_()) was the caller's tensor written
    # then: the earlier tape's refusal of a backward through an overwritten value (eager's
    # check_not_overwritten) reads the caller's tensor.
    for stand_in in tracer.user_stand_in.values():
        written = getattr(stand_in, "_written_at", 0)
        caller = stand_ins.get(id(stand_in))
        if written and caller is not None and written > getattr(caller, "_written_at", 0):
            caller._written_at = written
    seen: set = set()
    stack = [t for t in (ref() for ref in tracer.live + tracer.settled)
             if t is not None and t._grad_fn is not None]
    while stack:
        t = stack.pop()
        node = t._grad_fn
        if node is None or id(node) in seen or isinstance(node.op, MultiOutputOp):
            continue
        seen.add(id(node))
        # Only the tape of the segments that ran: a node of the segment still traced
        # (``y - x`` after the break) is the traced tape, whose walk (backward_trace.py)
        # reads the stand-ins' flags; the caller's tensor does not have them yet (x took
        # y's history in the earlier segment: earlier_segment_histories gives it after
        # the call), and x's gradient was dropped (fuzz seed 20261212, program 3091).
        # A size used as a number (mean's count at a symbolic size) is this call's number
        # there: eager's vjp divides by an int, not by the trace's stand-in for it (fuzz
        # seed 20261235, program 519).
        traced = t._data.__class__ is TracedValue and t._data.tracer is tracer
        if not traced and any(id(x) in stand_ins or x.__class__ is SymbolicScalar
                              for x in node.inputs):
            node.inputs = tuple(x.value if x.__class__ is SymbolicScalar
                                else stand_ins.get(id(x), x) for x in node.inputs)
        stack.extend(x for x in node.inputs
                     if isinstance(x, Tensor) and x._grad_fn is not None)
