"""Reverse-mode autograd over a tape of GradNodes.

Each op output that needs a gradient keeps a :class:`GradNode`: the op, its inputs and
attributes (and its output where the vjp reads it). ``backward`` orders the nodes
topologically without recursion, walks them in reverse, and calls each op's vjp rule.
vjp rules are written with execmode ops, so under ``em.jit`` backward is traced into the
same graph as the forward pass.

The tape's nodes are in tape.py and grad mode's switches in grad_mode.py, both below
dispatch (which records nodes and reads grad mode on every op); this module, the backward
pass, sits above the function API that the vjp rules call.
"""

from __future__ import annotations

import threading

from . import dispatch, tape, watched_composites
from . import functional as F
from ._tensor import Tensor
from .errors import BackwardError, describe_operand
from .grad_accumulation import accumulate, held_alone, retain
from .grad_mode import no_grad
from .ops.complex_grad import to_operand
from .scope import named_scope
from .tape import GradNode, MultiOutputOp


def _topological_order(root: Tensor) -> list:
    """Tensors with a grad_fn reachable from ``root``, each after all its consumers. The
    results of a multi-output op (a jitted call) lead to that op, listed once, after them
    all: its backward runs once, with every result's gradient."""
    order: list = []
    visited: set[int] = set()
    stack = [(root, False)]
    # Local names: this loop runs for every node of every backward.
    pop, push, visit, emit = stack.pop, stack.append, visited.add, order.append
    multi_output, tensor = MultiOutputOp, Tensor
    while stack:
        item, expanded = pop()
        if expanded:
            emit(item)
            continue
        if id(item) in visited:
            continue
        visit(id(item))
        push((item, True))
        if isinstance(item, multi_output):
            inputs = item.inputs
        else:
            node = item._grad_fn
            if isinstance(node.op, multi_output):
                if id(node.op) not in visited:
                    push((node.op, False))
                continue
            inputs = node.inputs
        # Push in reverse so that inputs are visited in order (stable, readable traces).
        for x in reversed(inputs):
            if isinstance(x, tensor) and x._grad_fn is not None and id(x) not in visited:
                push((x, False))
    order.reverse()
    return order


# PyTorch frees the values a node saved for its backward once backward has run through it
# (unless retain_graph=True), and a second backward through it raises. These ops save no
# tensor in PyTorch (their gradient needs only shapes): a second backward through them
# works there, so it does here. multiply, divide and matmul count as saving only when both
# operands have a gradient path: execmode's mean is a sum divided by a Python number,
# which PyTorch's mean saves nothing for. So execmode raises in a subset of the cases
# PyTorch raises in (x * w with a constant w is one it lets through), never elsewhere.
_SAVES_NOTHING = frozenset((
    "add", "subtract", "negative", "sum", "reshape", "broadcast_to", "permute_dims",
    "concat", "pad", "copy", "cast", "to_device", "tril", "triu", "im2col", "col2im",
    "cumsum", "getitem", "assign",
))
_SAVES_IF_BOTH = frozenset(("multiply", "divide", "matmul"))

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")


def node_saves(node) -> bool:
    """Whether PyTorch would free something of ``node`` after a backward (see above)."""
    name = node.op.name
    if name in _SAVES_NOTHING:
        return False
    if name in _SAVES_IF_BOTH:
        return all(isinstance(x, Tensor) and x.requires_grad for x in node.inputs)
    when = tape.saves_when.get(name)
    return when is None or when(node)


def _free(ran: list) -> None:
    """Mark what a backward without retain_graph went through as freed (node_saves, inlined:
    it runs for every node of every training step)."""
    nothing, if_both, node_class = _SAVES_NOTHING, _SAVES_IF_BOTH, GradNode
    saves_when = tape.saves_when
    for item in ran:
        if item.__class__ is not node_class:  # a multi-output op
            if item.saves_for_backward:
                item.freed = True
            continue
        name = item.op.name
        if name in nothing:
            continue
        if name in if_both and not all(isinstance(x, Tensor) and x.requires_grad
                                       for x in item.inputs):
            continue
        when = saves_when.get(name)
        if when is not None and not when(item):
            continue
        item.freed = True


def _check_not_freed(item, name: str) -> None:
    if item.freed:
        raise BackwardError(f"backward through {name}: {SECOND_BACKWARD}")


class _Queued(threading.local):
    callbacks: list | None = None  # while a backward runs in this thread: what runs after it


_queued = _Queued()


def queue_callback(callback) -> None:
    """Call ``callback()`` once the backward now running in this thread has walked the
    whole tape (PyTorch's ``Variable._execution_engine.queue_callback``).
    DistributedDataParallel averages the gradients there."""
    if _queued.callbacks is None:
        raise BackwardError("queue_callback: only a backward that is running can queue a "
                            "callback")
    _queued.callbacks.append(callback)


def backward(root: Tensor, gradient=None, retain_graph: bool = False) -> None:
    owned = gradient is None  # the implicit gradient is backward's own (grad_accumulation)
    if gradient is None:
        if root.size != 1:
            raise BackwardError(
                f"backward() needs a gradient argument for a non-scalar tensor of shape "
                f"{root.shape} (only scalars get an implicit gradient of 1)"
            )
        gradient = F.ones_like(root)
    elif not isinstance(gradient, Tensor):
        gradient = F.tensor(gradient, dtype=root.dtype, device=root.device)
    if gradient.shape != root.shape:
        raise BackwardError(f"gradient shape {gradient.shape} does not match {root.shape}")

    outer, _queued.callbacks = _queued.callbacks, []
    try:
        _walk(root, gradient, retain_graph, owned)
        callbacks = _queued.callbacks
    finally:
        _queued.callbacks = outer
    for callback in callbacks:
        callback()


def _walk(root: Tensor, gradient: Tensor, retain_graph: bool, owned: bool) -> None:
    # Backward ops are grouped under a "backward" scope, in events and in graphs.
    with no_grad(), named_scope("backward"):
        if root._grad_fn is None:  # backward on a leaf: d(x)/d(x) = 1
            accumulate(root, gradient, owned)
            _run_hooks(root)
            return
        order = _topological_order(root)
        walk = _Walk(order, {id(root): gradient})
        walk.run()
        if dispatch.listener_untraced():
            # A listener sees backward's ops: the walk costs more than its ops' recording
            # (a cost per walk and per node, calibrated as the composites' sites are:
            # profilers/calibration_declined.py)
            watched_composites.count(_walk.__code__)
            watched_composites.count(_Walk.run.__code__, len(walk.ran))
        if not retain_graph:
            _free(walk.ran)


class _Walk:
    """One backward pass over ``order`` (tensors with a node, each after its consumers).

    ``grads`` holds each inner tensor's gradient until its node runs; a leaf's goes into
    its ``.grad`` at once (grad_accumulation.py). One loop, with sending inlined: the walk
    runs once per node of every training step."""

    def __init__(self, order: list, grads: dict):
        self.order = order
        self.grads = grads
        self.waiting: dict[int, dict] = {}  # multi-output op -> {position: (result, grad)}
        self.ran: list = []  # the nodes (and multi-output ops) backward went through
        # Gradients that became a .grad in this walk (ids): one sent again is not backward's
        # alone any more (grad_accumulation.store_first copies it).
        self.stored: set[int] = set()
        self.hooked = _hooked_leaves(order) if tape.hooked_leaves else None
        self.accumulated: set[int] = set()  # leaves that got a gradient (for their hooks)

    def run(self) -> None:
        grads, ran, hooked = self.grads, self.ran, self.hooked
        marked = watched_composites.marked  # (a composite's ops ran for a listener)
        pop, get, done = grads.pop, grads.get, ran.append
        multi_output, tensor = MultiOutputOp, Tensor
        for t in self.order:
            if t.__class__ is not tensor and isinstance(t, multi_output):
                self._multi_output(t)
                if hooked:
                    _release_leaves(t, hooked, self.accumulated)
                continue
            g = pop(id(t), None)
            if g is None:
                if hooked:
                    _release_leaves(t, hooked, self.accumulated)
                continue
            if t._retains_grad:
                retain(t, g)
            if marked:
                watched_composites.count_backward(t)
            node = t._grad_fn
            op = node.op
            if isinstance(op, multi_output):
                self.waiting.setdefault(id(op), {})[node.attrs["output"]] = (t, g)
                continue
            if node.freed:
                _check_not_freed(node, op.name)
            if node.made_at != tape._tick:  # something was written after the node was made
                check_not_overwritten(t, node)
            inputs = node.inputs
            in_grads = op.vjp(g, node.saved_output, *inputs, **node.attrs)
            done(node)
            # Let go of the node's gradient: memory it shared with a leaf's gradient (a
            # transpose of it, transposed back) may then become that leaf's .grad.
            given, g = id(g), None
            for x, gx in zip(inputs, in_grads):
                if gx is None or x.__class__ is not tensor and not isinstance(x, tensor) \
                        or not x.requires_grad:
                    continue
                dtype = gx._data.dtype
                if dtype is not x._data.dtype and dtype != x._data.dtype:
                    gx = _cast_to_operand(gx, x)
                if x._grad_fn is None:
                    # fresh: not the vjp's own gradient or operand, nor a result it gives
                    # twice (to an inner tensor too, whose pending gradient an in-place
                    # accumulation into this .grad would change)
                    self._leaf(x, gx, id(gx) != given and gx is not node.saved_output
                               and not any(gx is y for y in inputs)
                               and sum(h is gx for h in in_grads) == 1)
                else:
                    key = id(x)
                    prev = get(key)
                    grads[key] = gx if prev is None else prev + gx
            if hooked:
                _release_leaves(t, hooked, self.accumulated)

    def _leaf(self, x: Tensor, gx: Tensor, fresh: bool) -> None:
        """``gx`` for leaf ``x``; ``fresh``: no other holder of it is known (see run)."""
        owned = fresh and id(gx) not in self.stored and held_alone(gx)
        accumulate(x, gx, owned)
        if owned:
            self.stored.add(id(gx))
        if self.hooked:
            self.accumulated.add(id(x))

    def _multi_output(self, t) -> None:
        """A multi-output op once all its results' gradients are in."""
        got = self.waiting.pop(id(t), None)
        if got is None:
            return
        if t.freed and t.reads_saved(got):
            raise BackwardError(f"backward through {t.name}: {SECOND_BACKWARD}")
        given = {id(g) for _, g in got.values()}
        sent = t.backward(got)
        # a gradient sent once, that the op was not given: no other holder (a jitted
        # model's call sends dozens: counted in one pass, not per gradient)
        times_sent: dict = {}
        for _, gx in sent:
            times_sent[id(gx)] = times_sent.get(id(gx), 0) + 1
        for x, gx in sent:
            _send(self, x, gx, id(gx) not in given and times_sent[id(gx)] == 1)
        self.ran.append(t)


# --- post-accumulate-grad hooks (tape.register_post_accumulate_grad_hook) ------------------
# A leaf may get gradients from several nodes; its hooks run once the last item of the
# order that could send it one has been walked, as PyTorch runs them after the leaf's
# AccumulateGrad node, which waits for all its producers. Counted only while some leaf
# has hooks.

def _item_inputs(item) -> tuple:
    """What backward through ``item`` may send gradients to (a result of a multi-output
    op sends nothing itself: the op, later in the order, does)."""
    if isinstance(item, MultiOutputOp):
        return item.inputs
    if isinstance(item._grad_fn.op, MultiOutputOp):
        return ()
    return item._grad_fn.inputs


def _hooked_leaves(order: list) -> dict:
    """{id(leaf): [leaf, items left that may send it a gradient]} for the hooked leaves
    the order reaches."""
    hooked: dict = {}
    for item in order:
        for x in _item_inputs(item):
            if isinstance(x, Tensor) and x._grad_fn is None and \
                    "_post_accumulate_hooks" in x.__dict__:
                entry = hooked.get(id(x))
                if entry is None:
                    hooked[id(x)] = [x, 1]
                else:
                    entry[1] += 1
    return hooked


def _release_leaves(item, hooked: dict, accumulated: set) -> None:
    """``item`` has been walked: a hooked leaf it was the last possible producer for is
    done, and its hooks run if this backward gave it a gradient."""
    for x in _item_inputs(item):
        entry = hooked.get(id(x)) if isinstance(x, Tensor) else None
        if entry is None:
            continue
        entry[1] -= 1
        if entry[1] == 0:
            del hooked[id(x)]
            if id(x) in accumulated:
                _run_hooks(x)


def _run_hooks(leaf: Tensor) -> None:
    for hook in list(leaf.__dict__.get("_post_accumulate_hooks", ())):
        hook(leaf)


def _cast_to_operand(gx: Tensor, x: Tensor) -> Tensor:
    """``gx`` in ``x``'s dtype: a real operand of a complex result (a concat, a pad of
    real and complex values) gets the real part (ops/complex_grad.to_operand), never a
    cast that drops the imaginary part with NumPy's ComplexWarning."""
    gx = to_operand(gx, x)
    return gx if gx.dtype == x.dtype else F.astype(gx, x.dtype)


def _send(walk: _Walk, x, gx, fresh: bool) -> None:
    """One contribution ``gx`` to ``x``'s gradient (from a multi-output op): a leaf's
    ``.grad`` at once, an inner tensor's summed in the walk's grads until its node runs."""
    if gx is None or not isinstance(x, Tensor) or not x.requires_grad:
        return
    if gx.dtype != x.dtype:
        gx = _cast_to_operand(gx, x)
    if x._grad_fn is None:
        walk._leaf(x, gx, fresh)
    else:
        prev = walk.grads.get(id(x))
        walk.grads[id(x)] = gx if prev is None else prev + gx


def reads_no_values_of(x: Tensor, node: GradNode) -> bool:
    """Whether ``node``'s gradient needs no values of its input ``x``: an op that saves
    nothing (``p.grad + w``), or ``where`` for the branches (its gradient reads its
    condition only). A write into such an ``x`` that is backward's own accumulation does
    not make the backward refuse (_only_accumulated_into)."""
    name = node.op.name
    return name in _SAVES_NOTHING or name == "where" and x is not node.inputs[0]


def _only_accumulated_into(x: Tensor, node: GradNode) -> bool:
    """``x`` is a ``.grad`` whose last write was backward adding into it in place
    (grad_accumulation.add_into), read by an op whose gradient needs no values of it:
    PyTorch checks the versions of saved tensors alone, so ``(p.grad + w).sum()``
    backpropagates after ``p.grad`` accumulated, and so does ``where(c, b, p.grad)``."""
    return reads_no_values_of(x, node) and last_write_accumulated(x)


def last_write_accumulated(x: Tensor) -> bool:
    """Whether the last in-place write into ``x`` was backward adding into it."""
    return x.__dict__.get("_accumulated_at", -1) == x.__dict__.get("_written_at")


def overwritten_error(op_name: str, operand, user: str | None = None) -> BackwardError:
    """Eager's refusal of a backward through ``op_name``, one of whose operands (or its
    saved output) was written in place after the op (``user``: what used it, if not the
    op itself) used it."""
    return BackwardError(
        f"backward through {op_name}: {describe_operand(operand)} was overwritten "
        f"in place (assign, setitem or an augmented assignment such as -=) after "
        f"{user or op_name} used it, so its gradient cannot be computed; update it out of "
        "place, or call backward() before the in-place update")


def check_not_overwritten(t: Tensor, node: GradNode) -> None:
    made = node.made_at
    stale = [x for x in node.inputs
             if isinstance(x, Tensor) and getattr(x, "_written_at", 0) > made
             and not _only_accumulated_into(x, node)]
    if node.op.saves_output and getattr(t, "_written_at", 0) > made:
        stale.append(t)
    if stale:
        raise overwritten_error(node.op.name, stale[0])
