"""In-place updates and effects: ``assign`` (the write every ``x[i] = v``, ``h += 1`` and
optimizer step becomes, with its autograd history) and ``debug_print``, as ``ops/state.py``."""

from __future__ import annotations

import builtins

from .. import dispatch
from .._tensor import Tensor
from ..dispatch import apply
from ..errors import ArgumentError, BackwardError
from ..grad_mode import no_grad
from ..op_errors import op_error
from ..ops import OPS
from ..tape import GradNode, MultiOutputOp, mark_modified
from .arguments import _tensor_arg
from .elementwise import copy
from .shape import broadcast_to


def assign(target, value) -> Tensor:
    """Write ``value`` into ``target``'s storage (an in-place update); returns ``target``.

    With autograd recording, ``target`` takes the history of ``value`` (so ``h += 1`` or
    ``x[i] = w`` differentiate as in PyTorch); ops that used ``target`` before the write
    refuse to backpropagate through the overwritten values. Under ``em.jit`` it becomes an
    explicit assign node applied at the end of the graph.
    """
    if not isinstance(target, Tensor):
        raise op_error(ArgumentError, "assign", (target, value),
                       f"the target must be a Tensor, got {type(target).__name__}")
    given = target  # returned as given (``g += 1`` rebinds g to what this returns)
    tracer = dispatch.current_tracer()
    if tracer is not None:  # an argument also read as a global: one object, as eagerly
        target, value = tracer.same_object(target), tracer.same_object(value)
    tracked = dispatch.grad_enabled() and (
        target.requires_grad or (isinstance(value, Tensor) and value.requires_grad))
    if tracked and target.requires_grad and target.is_leaf:
        raise op_error(BackwardError, "assign", (target, value),
                       "in-place update of a leaf tensor that requires grad; do it under "
                       "em.no_grad() (optimizers do) or use an out-of-place op")
    if value is target:  # nothing to write, and no history to loop into itself
        return given
    # After a graph break an argument's stand-in holds its real values, and same_object
    # no longer maps the same tensor read as a global to it: still one object eagerly.
    # (Only a tensor: .get's None is no stand-in, and a None value must fail as eagerly.)
    if tracer is not None and isinstance(value, Tensor) and (
            tracer.stand_in_of.get(id(target)) is value or
            tracer.stand_in_of.get(id(value)) is target):
        return given
    if tracer is not None:
        tracer.note_flags(target)  # a capture's flags may change: replays must too
    if isinstance(value, Tensor) and value.shape != target.shape:
        value = broadcast_to(value, target.shape)
    if tracked:
        _take_history(target, value)
    apply(OPS["assign"], target, value)
    mark_modified(target)
    return given


def _take_history(target: Tensor, value) -> None:
    """Make ``target``'s gradient flow into ``value``, the values about to be written to it."""
    with no_grad():
        before = copy(target)  # what target holds now, for vjps that read it
    before.requires_grad = target.requires_grad
    before._grad_fn = old_node = target._grad_fn
    # The node that made target saved target's own buffer as its output (exp, tanh, ...):
    # give it the copy, since the buffer is about to be overwritten.
    if old_node is not None and old_node.saved_output is not None \
            and old_node.saved_output._data is target._data:
        old_node.saved_output = before.detach()
    elif old_node is not None and isinstance(old_node.op, MultiOutputOp):
        old_node.op.output_overwritten(target)  # a jitted call's saved values, likewise
    # value is often computed from target itself (``x[i] = v`` is index_put(x, v), ``h += 1``
    # is add(h, 1)): point that node at the copy, or target's history would loop into itself.
    node = value._grad_fn if isinstance(value, Tensor) else None
    if node is not None and builtins.any(x is target for x in node.inputs):
        node.inputs = tuple(before if x is target else x for x in node.inputs)
    if isinstance(value, Tensor) and value.requires_grad:
        target._grad_fn = GradNode(OPS["copy"], (value,), {}, None)
        target.requires_grad = True
    else:  # overwritten by constants: nothing flows back any more
        target._grad_fn = None
        target.requires_grad = False


def debug_print(x, fmt: str = "{}") -> Tensor:
    """Print ``x`` when this op runs: at once in eager mode, at every call of a jitted
    function in graph mode (no graph break, unlike print(x))."""
    if not isinstance(fmt, str) or "{" not in fmt:
        raise op_error(ArgumentError, "debug_print", (x, fmt),
                       "fmt must be a format string with a {} placeholder")
    return apply(OPS["debug_print"], _tensor_arg("debug_print", x), fmt=fmt)
