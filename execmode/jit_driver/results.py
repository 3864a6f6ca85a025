"""The tensors a jitted call hands back and the state it leaves, rebuilt as eager's.

A trace describes each result by a spec (graph/segments.py's ``result_spec``): a graph output,
the caller's own argument or capture, a view of one, a ``.grad``. Every replay tier builds
the same objects from those specs: fresh tensors for graph outputs, the caller's objects
where eager returns them, NumPy views where eager returns views (so aliasing matches), and
the autograd flags the function's writes set on its arguments and captures.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..errors import BackwardError
from ..graph.views import replay
from ..tape import GradNode


def resolve(ref, leaves) -> Tensor:
    """A tensor reference of a trace: ("arg", i) is this call's i-th tensor leaf."""
    return leaves[ref[1]] if isinstance(ref, tuple) else ref


class _JitResultOp:
    """The grad_fn of a jitted function's result that eager would have differentiable but
    that has no backward graph (backward.py gives every result with a history of the call
    one; what is left is rare: a tensor made inside the function with requires_grad=True
    and returned): backward through it says so instead of computing something else."""

    name = "em.jit"
    saves_output = False

    @staticmethod
    def vjp(*args, **kwargs):
        raise BackwardError(
            "backward() through the result of an em.jit function: the ops that made it ran "
            "in the compiled graph, and it has no backward graph. Call backward() inside "
            "the jitted function (a whole training step is one graph), or compute this "
            "result eagerly")


JIT_RESULT = GradNode(_JitResultOp, (), {}, None)


def wrap_result(array, requires_grad: bool = False) -> Tensor:
    """A fresh tensor around a graph output (with JIT_RESULT as its history when eager's
    result would require grad)."""
    t = object.__new__(Tensor)
    t._data = array
    t.requires_grad = requires_grad
    if requires_grad:
        t._grad_fn = JIT_RESULT
    return t


def build_results(specs, leaves, outputs) -> list:
    """The tensors a call hands back, rebuilt as eager would have them (trace.result_spec):
    fresh tensors for graph outputs, the caller's own objects for returned arguments and
    captures, NumPy views where eager returns views (so that aliasing matches)."""
    results = []
    for spec in specs:
        kind = spec[0]
        if kind == "out":
            array = outputs[spec[1]]
            results.append(wrap_result(replay(spec[2], array) if spec[2] else array, spec[3]))
        elif kind == "arg":
            results.append(leaves[spec[1]])
        elif kind == "same":
            results.append(results[spec[1]])
        elif kind == "grad":
            results.append(resolve(spec[1], leaves)._grad)
        elif kind == "view":
            results.append(wrap_result(replay(spec[2], spec[1].read(leaves)), spec[3]))
        else:
            results.append(spec[1])
    return results


def apply_flag_writes(flag_writes, leaves) -> None:
    """Set the autograd flags the function's writes gave its arguments and captures."""
    for ref, requires_grad, took_history in flag_writes:
        t = resolve(ref, leaves)
        t.requires_grad = requires_grad
        t._grad_fn = JIT_RESULT if took_history else None
