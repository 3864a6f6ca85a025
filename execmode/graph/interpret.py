"""The graph interpreter: evaluate a graph node by node on arrays.

torch.fx's ``Interpreter`` is the model: ``run(*inputs)`` walks the nodes in order and
``run_node(node, env)`` computes one from the values before it; a subclass overrides
``run_node`` (or ``call_node``) to watch or change a step. A node that fails raises the
error eager raises for its op (its class and message: an index out of range is an
``IndexingError`` as eagerly), with a note naming the node,
``while executing %7:f32[3,4] = matmul %1 %0  # train.py:12 in f``, shown under the
traceback (PEP 678 notes leave the class and message as they are); the error from the
array library stays reachable as ``__context__``.

Every op-by-op evaluation of a graph goes through it: the debugger (recomputing values
fusion removed, ``hunt`` and ``differential_check``), the tracer (the value a bake hands
to Python, eager's first value error when a trace fails), constant folding and the
profiler's eager-vs-fused timing. The plan's replay does not (its steps, and the members
of a fused node without a kernel): it runs the same per-node functions (graph/op_call.py)
through closures over slots, since its per-call cost is measured, and words a failure
with ``node_failure`` below (plan.py says why).
"""

from __future__ import annotations

import numpy as np

from ..errors import ExecmodeError, unforeseen_failure_class
from ..op_errors import op_error
from ..ops import OPS, rng
from ..ops.registry import Aval, RuleError
from .ir import ASSIGN, FUSED, INPUT, Graph, Node, format_node
from .op_call import op_function

_NOTE = "while executing "


class Interpreter:
    """Evaluate ``graph`` op by op. ``quiet`` silences NumPy's floating-point warnings (a
    re-run for the debugger must not repeat what the real run printed); ``keep_members``
    also keeps the values of fused nodes' members in ``env``; ``xp`` computes every node
    with that array module (constant folding: NumPy) instead of its device's."""

    def __init__(self, graph: Graph | None = None, *, quiet: bool = True,
                 keep_members: bool = False, xp=None):
        self.graph = graph
        self.quiet = quiet
        self.keep_members = keep_members
        self.xp = xp
        self.env: dict = {}
        self._functions: dict[int, tuple] = {}

    def run(self, *inputs, stop_at: int | None = None) -> list:
        """The graph's outputs from its input arrays (``None`` for outputs not reached
        when stopping after node ``stop_at``). ``self.env`` then maps every evaluated node
        id to its value. Assigns are not applied. Random ops draw from the generator, whose
        state is restored afterwards: a re-run never changes the numbers the script sees."""
        graph = self.graph
        self.env = env = dict(zip(graph.inputs, inputs))
        state = rng.generator().bit_generator.state
        try:
            for n in graph.nodes:
                if n.op in (INPUT, ASSIGN):
                    continue
                env[n.id] = self.run_node(n, env)
                if n.id == stop_at:
                    break
        finally:
            rng.generator().bit_generator.state = state
        return [env.get(o) for o in graph.outputs]

    def run_node(self, node: Node, env: dict):
        """``node``'s value from ``env`` (node id -> value); a failure is raised as eager
        raises it, with the note naming the node."""
        args = [env[i] if i.__class__ is int else i.value for i in node.inputs]
        try:
            return self.call_node(node, args)
        except Exception as exc:
            raise node_failure(node, args, exc) from None

    def call_node(self, node: Node, args: list):
        """Compute ``node`` from its operands (arrays and literal values)."""
        if node.op == FUSED:
            return self.run_members(node, args)
        fn = self.function(node)
        if self.quiet:
            with np.errstate(all="ignore"):
                return fn(*args)
        return fn(*args)

    def run_members(self, fused: Node, args) -> object:
        """A fused node's value: its members one by one, from the fused node's operands
        (the values of ``fused.node_inputs``, in that order)."""
        inner = dict(zip(fused.node_inputs, args))
        out = None
        for m in fused.body:
            out = inner[m.id] = self.run_node(m, inner)
            if self.keep_members:
                self.env[m.id] = out
        return out

    def function(self, node: Node):
        """The function computing ``node`` (graph/op_call.py), built once per node."""
        hit = self._functions.get(node.id)
        if hit is None or hit[0] is not node:
            op = OPS.get(node.op)
            fn = _refuse_collective if op is not None and op.collective else \
                op_function(node, self.xp)
            hit = self._functions[node.id] = (node, fn)
        return hit[1]


def _refuse_collective(*operands):
    # Every use of the interpreter is a re-run on this rank alone (the debugger's values,
    # a bake, the profiler's op-by-op timing), which the other ranks would not join.
    raise ExecmodeError("a collective cannot be re-run op by op on one rank: the other "
                        "ranks would not take part (it ran once, in the plan's own step)")


def node_failure(node: Node, operands, exc: Exception) -> Exception:
    """The error to raise when ``node`` failed with ``exc`` on ``operands``: eager's error
    for its op (node_error, below) with a note naming the node. The innermost node wins: a
    fused node whose member failed adds no second note."""
    err = exc if node.op == FUSED else node_error(node, operands, exc)
    if not any(note.startswith(_NOTE) for note in getattr(err, "__notes__", ())):
        err.add_note(_NOTE + format_node(node))
    return err


def interpret(graph: Graph, inputs: list, stop_at: int | None = None,
              keep_members: bool = False) -> dict:
    """node id -> value for every node evaluated (inputs included); see Interpreter.run."""
    interpreter = Interpreter(graph, keep_members=keep_members)
    interpreter.run(*inputs, stop_at=stop_at)
    return interpreter.env


__all__ = ["Interpreter", "interpret", "node_failure"]


def node_error(node, operands, exc: Exception) -> ExecmodeError:
    """The error eager raises when ``node``'s op fails on ``operands`` (its arrays and
    Python scalars), for a graph step that failed at run time (an index tensor's value out
    of range): the same class and message, at the user's line the node was traced from."""
    if isinstance(exc, ExecmodeError):
        return exc
    operands = [Aval(tuple(x.shape), x.dtype, node.device) if hasattr(x, "dtype") else x
                for x in operands]
    if isinstance(exc, RuleError):
        return op_error(exc.cls, node.op, operands, exc.problem, location=node.loc)
    # Worded as dispatch_checks.explain_failure words an error that the op's rule did not foresee.
    text = str(exc).strip()
    problem = f"{type(exc).__name__}: {text.splitlines()[0] if text else type(exc).__name__}"
    return op_error(unforeseen_failure_class(exc), node.op, operands, problem,
                    location=node.loc)
