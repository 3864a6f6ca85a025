"""Tracing one call of a jitted function into a ConcreteFunction.

The Python body runs under a Tracer on stand-ins for the tensor arguments; what it read
from Python becomes guards (graph/guards.py), what it wrote to Python state makes later
calls re-run their Python (python_writes.py), the ``.grad`` fields it read or rebound
become guards, inputs and results, and the flags its writes left on arguments and
captures are replayed at every call. Results eager would hand back differentiable get a
backward graph from the same trace (backward.py). The call itself is answered from the
trace's run (a call that traces is a call), so its state afterwards is eager's.
"""

from __future__ import annotations

import functools
import warnings

from .._tensor import Tensor
from ..graph import guards as guards_mod
from ..graph import python_writes as python_writes_mod
from ..graph import pytree, segment_match
from ..graph.ir import ASSIGN
from ..graph.trace import Tracer
from ..symbolic import SymbolicScalar, is_number
from . import backward as backward_mod
from . import cache_policy
from . import tensor_guards as tg
from .capture_labels import capture_labels
from .concrete import ConcreteFunction
from .module import state_roots
from .results import apply_flag_writes, build_results, resolve
from .symbolic_dims import DynamicSizes

_UNREAD = object()  # a .grad the trace wrote before reading


def trace_call(jitted, args, kwargs, leaves, signature, reuse=None, execute=True,
               backend=None, symbols=()):
    """Run ``jitted``'s Python body under a tracer; returns (ConcreteFunction, result).
    ``backend``: the kernel backend for this trace's segments (a dynamic dimension's
    new size runs without compiled kernels); the function's own by default.
    ``symbols``: (leaf index, dim) of the dynamic dimensions traced as symbolic sizes
    (symbolic_dims.py)."""
    jitted.trace_count += 1
    labels = capture_labels(jitted.fn)
    # Graph ids name the function, its signature's number and the segment: "step#1:0".
    sig_index = jitted._signature_ids.setdefault(signature.key, len(jitted._signature_ids))
    # (a function with graph breaks traces at every call: its signature's text once)
    signature_text = jitted._signature_texts.get(signature.key)
    if signature_text is None:
        signature_text = jitted._signature_texts[signature.key] = str(signature)
    run_segment = jitted._run_segment if backend in (None, jitted.backend) else \
        functools.partial(jitted._run_segment, backend=backend)
    tracer = Tracer(jitted.name, run_segment, labels,
                    {"split": False, "error": True, "bake": "bake"}[jitted.on_break], execute,
                    signature=signature_text, graph_prefix=f"{jitted.name}#{sig_index}",
                    previous_segments=reuse.segments if reuse is not None and
                    segment_match.MATCHING else ())
    if reuse is not None and not symbols:
        # A re-run of a function with breaks: the segments it matches were traced with
        # these sizes symbolic, so their results' shapes hold SymInts; the tracer must
        # know them (a size used as a number, mean's count, reads as one).
        symbols = getattr(reuse, "symbols", ())
    if symbols:
        DynamicSizes.install(tracer, signature, symbols)
    # (a re-run's signature has the same structure as the one it re-runs, whose names
    # are worked out already)
    arg_names = (reuse.signature if reuse is not None else signature).arg_names
    stand_ins, seen = [], {}
    for i, t in enumerate(leaves):  # one stand-in per tensor, however often it is passed
        if id(t) not in seen:
            seen[id(t)] = tracer.stand_in(t, i, arg_names[i])
        stand_ins.append(seen[id(t)])
    # A module's (or a bound method's) own object is read like a static argument:
    # its flags and numbers are guarded (model.eval() retraces), its writes watched.
    code_fn, roots = state_roots(jitted.fn)
    # (a structure equal to one without static arguments has none: not walked again)
    statics = (() if reuse is not None and not reuse.signature.statics else
               signature.statics) + roots
    python_guards = guards_mod.collect(code_fn, statics)
    if len(python_guards) >= guards_mod.MAX_GUARDS:
        warnings.warn(f"em.jit({jitted.name}): the Python state it can read holds more than "
                      f"{guards_mod.MAX_GUARDS} values; changes past the first "
                      f"{guards_mod.MAX_GUARDS} are not watched between calls (pass "
                      "what changes as arguments)", cache_policy.JitWarning, stacklevel=4)
    # What the Python can write (python_writes.py): a re-run of a function known to
    # write runs its Python anyway, so only a first trace needs to look.
    before = None if reuse is not None else python_writes_mod.snapshot(
        code_fn, statics)
    if before is not None and not before.complete and not jitted._warned_unwatched:
        jitted._warned_unwatched = True
        warnings.warn(f"em.jit({jitted.name}): the Python state it can reach holds more "
                      f"than {python_writes_mod.MAX_CONTAINERS} containers; writes to "
                      "those past them would not be noticed (a replay would skip them)",
                      cache_policy.JitWarning, stacklevel=4)
    installed = _install_dynamic(jitted._dynamic, tracer)
    began = backward_mod.tape_clock()  # the autograd nodes this trace makes come after
    try:
        with tracer:
            # ((args, kwargs) flattened to the signature's structure: the caller did it)
            (s_args, s_kwargs) = pytree.unflatten(signature.structure, stand_ins)
            result = jitted.fn(*s_args, **s_kwargs)
            out_leaves, out_structure = pytree.flatten(result)
            grad_entries = []  # (owner ref, new grad or None, grad first read)
            given = set()  # the traced values already some .grad
            for owner, value in tracer.grad_state.values():
                first = tracer.grad_read.get(id(owner), _UNREAD)
                if value is not None and value is not first and \
                        _traced_node(value, tracer) is not None:
                    if id(value) in given:
                        # One gradient for two leaves (x + z): eager's .grads are two
                        # tensors apart (AccumulateGrad keeps a copy), so is this one.
                        value = value.clone()
                    given.add(id(value))
                grad_entries.append((tracer.owner_ref(owner), value, first))
            # A .grad rebound to a tensor the trace made is a result; the .grad it read
            # and wrote in place (clip_grad_norm_) is not: it is a graph input, written
            # back into whatever tensor is the caller's .grad at each call.
            grads = [v for _, v, first in grad_entries
                     if v is not first and _traced_node(v, tracer) is not None]
            # Results eager would hand back differentiable: their backward graph, and
            # the values it reads, which the forward returns too ("saved").
            joint = backward_mod.prepare(
                jitted, build_results, tracer, list(out_leaves), len(out_leaves) + len(grads),
                f"{tracer.prefix}:{len(tracer.segments)}", backend, began)
            # Arguments and captures written with a history before a graph break: that
            # history is the earlier segments' real tape (backward.py), theirs as eagerly.
            earlier_histories = backward_mod.earlier_segment_histories(tracer, began)
            saved = joint.saved_tensors if joint is not None else []
            segment, specs = tracer.finish(list(out_leaves) + grads + saved)
            specs = backward_mod.take_saved_specs(joint, specs)
    except BaseException as exc:
        # An op error at trace time, after an op eager would have failed on first?
        # (any error: the Python after a failing gather may fail differently, e.g. on a
        # .grad that stayed None, where eager never got that far)
        first = tracer.value_error_so_far() if execute and isinstance(
            exc, Exception) else None
        tracer.abort()  # leave the user's tensors as they were
        _uninstall_dynamic(installed)
        if first is not None:
            raise first from None
        raise
    # .trace() that met a graph break ran its segments: finish as a call does (grads,
    # flags), or the state after it would differ from eager's.
    execute = tracer.execute
    python_writes = _uninstall_dynamic(installed)
    python_writes += [g.label for g in python_guards
                      if (id(g.holder), g.name) not in jitted._dynamic and g.failure()]
    # The snapshot's sentences name what changed and how; the guards' labels say the
    # same of what they watch (and stand in past the snapshot's limit).
    changes = before.changes() if before is not None else reuse.python_writes
    python_writes = list(dict.fromkeys(changes or python_writes))
    if joint is not None and joint.per_call:
        # Its results' gradients flow into histories that change at every call (a
        # capture rewritten from its own earlier value): re-run Python, so that each
        # call's backward links to that call's histories (backward.py).
        python_writes = list(dict.fromkeys(python_writes + [joint.per_call]))
    python_guards = [g for g in python_guards
                     if (id(g.holder), g.name) not in tracer.dynamic_reads
                     and (id(g.holder), g.name) not in jitted._dynamic]
    n_out = len(out_leaves)
    flag_writes = []
    for stand_in_id, i in tracer.stand_in_index.items():
        user = leaves[i]
        stand_in = tracer.user_stand_in.get(id(user))
        if stand_in is not None and id(stand_in) == stand_in_id and (
                stand_in.requires_grad != user.requires_grad
                or (stand_in._grad_fn is None) != (user._grad_fn is None)):
            flag_writes.append((("arg", i), stand_in.requires_grad,
                                stand_in._grad_fn is not None))
    # A written capture's flags as the write left them, at every call: they depend
    # on the write, not on what they were before (g1[...] = w makes g1 take a history
    # whether or not an earlier call already did).
    for t, requires_grad, no_history in tracer.flags_before.values():
        took_history = t._grad_fn is not None
        if took_history or t.requires_grad != requires_grad or not no_history:
            flag_writes.append((t, t.requires_grad, took_history))
    grad_index = {id(v): n_out + k for k, v in enumerate(grads)}
    grad_writes = []
    for ref, value, first_read in grad_entries:
        if value is None:
            grad_writes.append((ref, None))
        elif value is first_read:
            # Read and never rebound (perhaps written in place: the assign node writes
            # the caller's current .grad). Rebinding it to the tensor seen while tracing
            # left a stale .grad at every replay (issue 38).
            continue
        elif id(value) in grad_index:
            grad_writes.append((ref, grad_index[id(value)]))
        # else: set before a graph break (now concrete): written below, not replayable,
        # which is fine, since a function with breaks re-runs its Python every call.
        elif execute:
            resolve(ref, leaves)._grad = value
    if execute:
        outputs = tracer.last_outputs
        results = build_results(specs, leaves, outputs) if outputs is not None else \
            [leaves[s[1]] if s[0] == "arg" else t for s, t in zip(specs, out_leaves)]
        for ref, j in grad_writes:
            resolve(ref, leaves)._grad = None if j is None else results[j]
        apply_flag_writes(flag_writes, leaves)
        for ref, node in earlier_histories:
            t = resolve(ref, leaves)
            t._grad_fn, t.requires_grad = node, True
        if joint is not None and outputs is not None:
            joint.attach(results, leaves, outputs)
        # What the caller gets: graph results are fresh tensors (differentiable ones
        # share the call's node), returned arguments and captures the caller's own.
        result = pytree.unflatten(out_structure, results[:n_out])
    guards = [tg.GradNone(tracer.owner_ref(owner), was_none)
              for owner, was_none, _ in tracer.grad_guards.values()]
    # A tensor .grad is a graph input of the traced type (another shape or dtype
    # would reach compiled kernels), and one the graph writes in place must still
    # have memory of its own (p1.grad is p2.grad: eager scales it twice).
    guards += [tg.GradType(tracer.owner_ref(owner), kind)
               for owner, _, kind in tracer.grad_guards.values() if kind is not None]
    if tracer.wrote_inputs and _writes_a_grad(tracer):  # (assigns write inputs only)
        owners = [o for o, none, _ in tracer.grad_guards.values() if not none]
        # Counted on the grads the call began with (it may have set some to None).
        entry = [tracer.grad_read[id(o)] for o in owners]
        guards.append(tg.GradsApart(tracer.owner_ref(owners[0]), (
            [tracer.owner_ref(o) for o in owners], tg.distinct_memories(entry))))
    guards += [tg.Strides(("arg", i), leaves[i]._data.strides) for i in tracer.layout_args]
    guards += [tg.NonLeaf(("arg", i), True) for i in tracer.non_leaf_args]
    # A capture that was an argument's memory (f(obj.buf) reading obj.buf) is one
    # graph input; a later call must pass it again, and, when the graph writes inputs,
    # no other capture may turn out to be an argument's memory.
    guards += [tg.IsArgMemory(t, i) for t, i in tracer.arg_aliases.values()]
    if tracer.wrote_inputs:
        guards += [tg.NotArgMemory(t) for t in tracer.captures_seen.values()]
    cf = reuse or ConcreteFunction(signature, tracer.segments, tracer.breaks, guards,
                                   out_structure, specs, n_out, grad_writes)
    cf.baked = list(tracer.baked)
    cf.symbols = list(symbols or ())
    cf.python_guards, cf._python_check = python_guards + _capture_flag_guards(tracer), None
    # One guard per distinct answer (a loop over parameters asks `if decay:` often).
    cf.scalar_guards = list({(label, repr(answer)): (read, answer, label)
                             for read, answer, label in tracer.scalar_guards}.values())
    cf.python_writes = python_writes
    cf.flag_writes = flag_writes
    cf.joint = joint
    if reuse is not None:
        cf.segments, cf.breaks = tracer.segments, tracer.breaks
    jitted._last_tracer = tracer
    return cf, result


def _install_dynamic(dynamic: dict, tracer) -> list:
    """Put a SymbolicScalar where each promoted number lives, for this trace (``dynamic``:
    (id(holder), name) -> (holder, name, label) of the numbers promoted to graph inputs)."""
    installed = []
    for holder, name, label in dynamic.values():
        value = guards_mod.read_holder(holder, name)
        if not is_number(value):
            continue
        symbol = tracer.scalar_input(holder, name, label)
        try:
            guards_mod.write_holder(holder, name, symbol)
        except (AttributeError, TypeError):  # read-only: stays guarded by value
            continue
        installed.append((holder, name, value, symbol, label))
    return installed


def _uninstall_dynamic(installed) -> list[str]:
    """Put the numbers back; returns the labels the function itself wrote meanwhile (its
    new value, made concrete, stays, as eager would leave it)."""
    written = []
    for holder, name, value, symbol, label in installed:
        now = guards_mod.read_holder(holder, name)
        if now is symbol:
            guards_mod.write_holder(holder, name, value)
        else:
            written.append(label)
            if isinstance(now, SymbolicScalar):
                guards_mod.write_holder(holder, name, now.value)
    return written


def _capture_flag_guards(tracer) -> list:
    """A guard on each capture's requires_grad as the trace began: the results'
    requires_grad and the gradients that flow into captures depend on it, and it changes
    between calls (the function's own write ``g *= w`` gives g a history; a user freezes a
    layer).
    Python guards, so the compiled check (and the C entry) test them at every replay
    (fuzz 1795535866-9082)."""
    out, seen, made = [], set(), None
    for segment in tracer.segments:
        for src in segment.sources:
            t = src.tensor if src.kind == "capture" else None
            if t is None or id(t) in seen:
                continue
            seen.add(id(t))
            if made is None:
                made = _made_by(tracer)
            if made.get(id(t)) is t:
                # A value this call's trace made and a graph break handed to Python,
                # read again by a later segment: no later call reads this object.
                continue
            before = tracer.flags_before.get(id(t))
            requires_grad = before[1] if before is not None else t.requires_grad
            out.append(guards_mod.Guard(t, "requires_grad", requires_grad, True,
                                        f"requires_grad of captured {src.label}"))
    return out


def _made_by(tracer) -> dict:
    """id -> tensor for every tensor the trace made that is still alive (its traced
    results, concrete since a break or still traced). The tracer also follows the
    caller's tensors that the function wrote in place (``flags_before``): not its own."""
    made, written = {}, tracer.flags_before
    for ref in tracer.settled + tracer.live:
        t = ref()
        if t is not None and id(t) not in written:
            made[id(t)] = t
    return made


def _writes_a_grad(tracer) -> bool:
    """Does the function's graph write a .grad in place (clip_grad_norm_)?"""
    for segment in tracer.segments[:1]:  # (a function with breaks re-runs its Python)
        graph = segment.graph
        written = {node.inputs[0] for node in graph.nodes if node.op == ASSIGN}
        if any(src.kind == "grad" and node_id in written
               for node_id, src in zip(graph.inputs, segment.sources)):
            return True
    return False


def _traced_node(t, tracer):
    """The node id computing ``t`` in the tracer's current segment, or None."""
    if isinstance(t, Tensor):
        d = t._data
        if getattr(d, "tracer", None) is tracer:
            return d.node_id
    return None

