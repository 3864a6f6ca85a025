"""The graph verifier: run after construction and after every pass.

It checks what every later stage relies on: SSA ids used once, inputs defined before use
(topological order), shapes and dtypes that the op's own rules agree with, outputs and
assign targets that exist.
"""

from __future__ import annotations

from ..errors import ExecmodeError
from ..ops import OPS
from ..ops.registry import Aval, RuleError, infer_aval
from .ir import ASSIGN, FUSED, INPUT, Graph, Node

# Graph.meta key of the ``checked`` memo a traced graph carries into the pass pipeline.
VERIFIED = "verified_types"


class GraphVerificationError(ExecmodeError, AssertionError):
    """A graph broke an IR invariant (a bug in a pass or the tracer, not in user code)."""


def verify(graph: Graph, stage: str = "", checked: dict | None = None) -> Graph:
    """Raise GraphVerificationError where ``graph`` breaks an invariant; else return it.

    ``checked`` (node -> the operand nodes its rule accepted) lets a pipeline skip the
    type rule of a node object already checked reading the same operand node objects: a
    pass keeps most nodes as they are, and re-running every rule after every pass was
    most of the compile time of a long chain. Nodes are immutable and compare by
    identity, and the dict holds them, so an entry cannot stand for another node."""
    where = f" after {stage}" if stage else ""

    def fail(msg: str):
        raise GraphVerificationError(f"graph {graph.name}{where}: {msg}")

    defined: dict[int, Node] = {}
    inputs = set(graph.inputs)
    for n in graph.nodes:
        if n.id in defined:
            fail(f"%{n.id} is defined twice")
        for i in n.node_inputs:
            if i not in defined:
                fail(f"%{n.id} ({n.op}) reads %{i} before it is defined")
        if n.op == INPUT:
            if n.id not in inputs:
                fail(f"input node %{n.id} is not listed in the graph's inputs")
        elif n.op == FUSED:
            _verify_body(n, defined, fail, checked)
        elif n.op == ASSIGN:
            target = defined[n.inputs[0]] if isinstance(n.inputs[0], int) else None
            if target is None or target.op != INPUT:
                fail(f"assign %{n.id} must target an input node")
            if target.shape != n.shape:
                fail(f"assign %{n.id} changes the shape of %{target.id}")
        else:
            _check_types(n, defined, fail, checked)
        defined[n.id] = n
    for i in graph.inputs:
        if i not in defined or defined[i].op != INPUT:
            fail(f"graph input %{i} is not an input node")
    for i in graph.outputs:
        if i not in defined:
            fail(f"output %{i} is not defined")
    return graph


def _verify_body(fused: Node, defined: dict, fail, checked) -> None:
    inner = {i: defined[i] for i in fused.node_inputs}
    for m in fused.body:
        for i in m.node_inputs:
            if i not in inner:
                fail(f"fused %{fused.id}: member %{m.id} reads %{i}, which is neither a member "
                     f"before it nor an input of the fused node")
        _check_types(m, inner, fail, checked)
        inner[m.id] = m
    if fused.body and (fused.body[-1].shape != fused.shape or fused.body[-1].dtype != fused.dtype):
        fail(f"fused %{fused.id}: its type differs from its last member %{fused.body[-1].id}")


def _check_types(n: Node, defined: dict, fail, checked=None) -> None:
    op = OPS.get(n.op)
    if op is None:
        fail(f"%{n.id} uses unknown op {n.op!r}")
    if checked is not None:
        # The operand nodes themselves: immutable, so the same objects mean the same types.
        producers = tuple(defined[i] for i in n.node_inputs)
        if checked.get(n) == producers:
            return  # this very node, reading these very nodes, passed before
    operands = []
    for i in n.inputs:
        if isinstance(i, int):
            d = defined[i]
            operands.append(Aval(d.shape, d.dtype, d.device))
        else:
            operands.append(i.value)
    try:
        aval = infer_aval(op, operands, n.attr, n.device)
    except RuleError as exc:
        fail(f"%{n.id} ({n.op}): {exc.problem}")
        return
    # (as plain ints: a check that the types agree is no decision a symbolic size's
    # comparison must record, symbolic_sizes.py)
    if tuple(map(int, aval.shape)) != tuple(map(int, n.shape)) or aval.dtype != n.dtype:
        fail(f"%{n.id} ({n.op}) is typed {n.type_str()} but its rule gives "
             f"{Node(0, '', shape=aval.shape, dtype=aval.dtype).type_str()}")
    if checked is not None:
        checked[n] = producers
