"""Dead code elimination: keep what reaches an output, an assign, an impure node, or an
op that may raise on values (an index tensor out of range).

Outputs and assign nodes are the roots. Impure nodes (random draws, debug_print) are kept
too, so that graph mode draws the same random numbers as eager. An assign overwritten by a
later assign to the same input is dead. Input nodes are never removed: the plan's inputs
are positional.
"""

from __future__ import annotations

from ..graph.ir import ASSIGN, INPUT, Graph
from ..graph.op_call import may_raise
from ..ops import OPS
from .record import Rewrite


def eliminate_dead_code(graph: Graph):
    rewrites: list[Rewrite] = []
    last_assign: dict[int, int] = {}
    for n in graph.nodes:
        if n.op == ASSIGN:
            last_assign[n.inputs[0]] = n.id
    overwritten = {n.id for n in graph.nodes
                   if n.op == ASSIGN and last_assign[n.inputs[0]] != n.id}
    live: set[int] = set(graph.outputs)
    for n in graph.nodes:
        if n.op == ASSIGN and n.id not in overwritten:
            live.add(n.id)
        elif n.op in OPS and OPS[n.op].impure or may_raise(n):
            live.add(n.id)
    by_id = {n.id: n for n in graph.nodes}
    stack = list(live)
    while stack:
        n = by_id[stack.pop()]
        for i in n.node_inputs:
            if i not in live:
                live.add(i)
                stack.append(i)
    out = []
    for n in graph.nodes:
        if n.op == INPUT or n.id in live:
            out.append(n)
        elif n.id in overwritten:
            rewrites.append(Rewrite(f"DCE: removed %{n.id} (assign overwritten later)",
                                    (n.id,), "dce"))
        else:
            rewrites.append(Rewrite(f"DCE: removed %{n.id} ({n.op}, unused)", (n.id,), "dce"))
    return graph.copy(nodes=out), rewrites, {}, {}
