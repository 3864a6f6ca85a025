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

from . import functional as F
from ._tensor import Tensor
from .errors import BackwardError, describe_operand
from .grad_mode import no_grad
from .scope import named_scope
from .tape import GradNode, MultiOutputOp


def _topological_order(root: Tensor) -> list:
    """Tensors with a grad_fn reachable from ``root``, each after all its consumers. The
    results of a multi-output op (a jitted call) lead to that op, listed once, after them
    all: its backward runs once, with every result's gradient."""
    order: list = []
    visited: set[int] = set()
    stack = [(root, False)]
    while stack:
        item, expanded = stack.pop()
        if expanded:
            order.append(item)
            continue
        if id(item) in visited:
            continue
        visited.add(id(item))
        stack.append((item, True))
        if isinstance(item, MultiOutputOp):
            inputs = item.inputs
        else:
            node = item._grad_fn
            if isinstance(node.op, MultiOutputOp):
                if id(node.op) not in visited:
                    stack.append((node.op, False))
                continue
            inputs = node.inputs
        # Push in reverse so that inputs are visited in order (stable, readable traces).
        for x in reversed(inputs):
            if isinstance(x, Tensor) and x._grad_fn is not None and id(x) not in visited:
                stack.append((x, False))
    order.reverse()
    return order


def backward(root: Tensor, gradient=None) -> None:
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

    # Backward ops are grouped under a "backward" scope, in events and in graphs.
    with no_grad(), named_scope("backward"):
        if root._grad_fn is None:  # backward on a leaf: d(x)/d(x) = 1
            _accumulate(root, gradient)
            return
        grads: dict[int, Tensor] = {id(root): gradient}
        waiting: dict[int, dict] = {}  # multi-output op -> {position: (result, gradient)}
        for t in _topological_order(root):
            if isinstance(t, MultiOutputOp):
                got = waiting.pop(id(t), None)
                if got is not None:
                    for x, gx in t.backward(got):
                        _send(x, gx, grads)
                continue
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t._retains_grad:
                _accumulate(t, g)
            node = t._grad_fn
            if isinstance(node.op, MultiOutputOp):
                waiting.setdefault(id(node.op), {})[node.attrs["output"]] = (t, g)
                continue
            check_not_overwritten(t, node)
            in_grads = node.op.vjp(g, node.saved_output, *node.inputs, **node.attrs)
            for x, gx in zip(node.inputs, in_grads):
                if gx is None or not isinstance(x, Tensor) or not x.requires_grad:
                    continue
                if gx.dtype != x.dtype:
                    gx = F.astype(gx, x.dtype)
                if x._grad_fn is None:
                    _accumulate(x, gx)
                else:
                    prev = grads.get(id(x))
                    grads[id(x)] = gx if prev is None else prev + gx


def _send(x, gx, grads: dict) -> None:
    """One contribution ``gx`` to ``x``'s gradient, as the walk above adds it."""
    if gx is None or not isinstance(x, Tensor) or not x.requires_grad:
        return
    if gx.dtype != x.dtype:
        gx = F.astype(gx, x.dtype)
    if x._grad_fn is None:
        _accumulate(x, gx)
    else:
        prev = grads.get(id(x))
        grads[id(x)] = gx if prev is None else prev + gx


def _accumulate(leaf: Tensor, g: Tensor) -> None:
    # Reading and writing through the property lets a tracer see .grad as graph state.
    current = leaf.grad
    leaf.grad = g if current is None else current + g


def check_not_overwritten(t: Tensor, node: GradNode) -> None:
    made = node.made_at
    stale = [x for x in node.inputs
             if isinstance(x, Tensor) and getattr(x, "_written_at", 0) > made]
    if node.op.saves_output and getattr(t, "_written_at", 0) > made:
        stale.append(t)
    if stale:
        raise BackwardError(
            f"backward through {node.op.name}: {describe_operand(stale[0])} was overwritten "
            f"in place (assign, setitem or an augmented assignment such as -=) after "
            f"{node.op.name} used it, so its gradient cannot be computed; update it out of "
            "place, or call backward() before the in-place update"
        )
