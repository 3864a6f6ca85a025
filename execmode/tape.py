"""The autograd tape: the GradNode each op output that needs a gradient keeps, and the
clock that tells backward when an input was overwritten after a node used it.

Low in the engine (it imports nothing of it): dispatch records nodes here for every eager op
and autograd.py walks them backward.
"""

from __future__ import annotations

import dataclasses
import weakref

from .errors import BackwardError

# In-place writes (assign, setitem, ``w -= lr * g``) stamp the tensor they write with a
# tick of this clock, and every GradNode keeps the tick at which it was made. A node whose
# inputs or saved output were overwritten after it was made would compute its vjp from
# values that are gone, or follow a history the tensor no longer has: backward refuses
# it (as PyTorch's version counters do) instead of returning wrong gradients.
_tick = 0


def mark_modified(t) -> None:
    """Record that ``t``'s values were just overwritten in place."""
    global _tick
    _tick += 1
    t._written_at = _tick


# What a node recorded for a whole composite (nn/one_node_layers.py) frees after a backward
# without retain_graph, as its ops would (autograd.node_saves): by op name, a test of the
# node, where the ops save only for some operands (linear's product only when x and the
# weight both require grad).
saves_when: dict = {}

# Leaves with post-accumulate-grad hooks (register_post_accumulate_grad_hook), alive: while
# there are none, backward skips counting which leaves are done (one check per backward).
hooked_leaves = 0


def _one_less() -> None:
    global hooked_leaves
    hooked_leaves -= 1


class HookHandle:
    """What registering a hook returns: ``remove()`` takes the hook off again."""

    def __init__(self, tensor, hook):
        self._tensor, self._hook = tensor, hook

    def remove(self) -> None:
        hooks = self._tensor.__dict__.get("_post_accumulate_hooks")
        if hooks and self._hook in hooks:
            hooks.remove(self._hook)
            if not hooks:
                del self._tensor.__dict__["_post_accumulate_hooks"]
                self._tensor.__dict__.pop("_hooks_finalizer")()  # one less, now


def register_post_accumulate_grad_hook(t, hook) -> HookHandle:
    """Call ``hook(t)`` during each backward, once ``t``'s ``.grad`` holds every
    contribution of that backward (PyTorch's ``Tensor.register_post_accumulate_grad_hook``:
    DistributedDataParallel starts a bucket's all-reduce there). ``t`` must be a leaf."""
    global hooked_leaves
    if getattr(t, "_grad_fn", None) is not None or not t.requires_grad:
        raise BackwardError("register_post_accumulate_grad_hook: only a leaf tensor that "
                            "requires grad has its gradient accumulated")
    hooks = t.__dict__.get("_post_accumulate_hooks")
    if hooks is None:
        hooks = t.__dict__["_post_accumulate_hooks"] = []
        hooked_leaves += 1
        # A leaf that dies with its hooks counts no more.
        t.__dict__["_hooks_finalizer"] = weakref.finalize(t, _one_less)
    hooks.append(hook)
    return HookHandle(t, hook)


class MultiOutputOp:
    """The op of nodes that several results share (a jitted call's: jit_driver/backward.py).

    Each result's GradNode has this op, the shared inputs and ``attrs["output"]``, its
    position. Backward (autograd.py) waits until every result that gets a gradient has
    one, then calls ``backward({position: (result, gradient)})`` once; it returns
    ``[(input, gradient), ...]``, each input's contributions in the order eager would add
    them. ``inputs`` is the tuple every result's node holds."""

    multi_output = True
    saves_output = False
    name = "multi-output op"
    inputs: tuple = ()
    freed = False  # backward ran without retain_graph: its saved values are gone
    saves_for_backward = True  # whether that frees anything (a jitted call's: its graph's)

    def backward(self, gradients: dict) -> list:
        raise NotImplementedError

    def reads_saved(self, positions) -> bool:
        """Whether a backward from the results at ``positions`` reads saved values (after
        ``freed``, one that does is refused). A jitted call's answers per set of results:
        its node is one for many ops, and eager frees each op's values apart."""
        return self.saves_for_backward

    def output_overwritten(self, target) -> None:
        """``target``, one of the results, is about to be overwritten with autograd
        recording (``y += 1``): keep what backward reads from its memory."""


class GradNode:
    __slots__ = ("op", "inputs", "attrs", "saved_output", "made_at", "freed")

    def __init__(self, op, inputs, attrs, saved_output):
        self.op = op
        self.inputs = inputs
        self.attrs = attrs
        self.saved_output = saved_output
        self.made_at = _tick
        self.freed = False  # backward ran without retain_graph (autograd.backward)

    def __repr__(self) -> str:
        return f"<GradNode {self.op.name}>"


_complex_refusals: dict = {}


def refuses_complex(op) -> bool:
    """Whether ``op`` is a :func:`without_complex_gradient` refusal."""
    return _complex_refusals.get(op.name) is op


def without_complex_gradient(op):
    """``op`` with a vjp that raises, for a node with a complex input or output whose op
    has a rule for real values only (ops/complex_grad.py lists those that hold for complex
    ones): a real rule applied to complex values would be silently wrong. The node keeps
    the op's name, so eager autograd and the jit's backward (both call ``node.op.vjp``)
    say which op it was."""
    refusal = _complex_refusals.get(op.name)
    if refusal is None:
        def vjp(g, out, *inputs, **attrs):
            raise BackwardError(
                f"{op.name}: no gradient through complex values (its rule holds for real "
                "values only); detach the complex tensor, or compute it under em.no_grad()")
        refusal = _complex_refusals[op.name] = dataclasses.replace(op, vjp=vjp)
    return refusal
