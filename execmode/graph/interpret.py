"""Evaluate a graph op by op, eagerly, from its input arrays.

The debugger uses it to recompute intermediates that fusion removed, to find the first op
that produced a NaN/Inf, and to compare a compiled segment with its op-by-op meaning.
Random ops draw from the generator; the RNG state is saved and restored around a re-run
so that debugging never changes the numbers the script sees.
"""

from __future__ import annotations

import numpy as np

from .. import random as em_random
from ..backend import as_device, xp_for
from .ir import ASSIGN, FUSED, INPUT, Graph, Node


def evaluate_node(n: Node, env: dict):
    from ..ops import OPS

    args = [env[i] if isinstance(i, int) else i.value for i in n.inputs]
    if n.op == FUSED:
        inner = dict(zip(n.node_inputs, [env[i] for i in n.node_inputs]))
        out = None
        for m in n.body:
            out = evaluate_node(m, inner)
            inner[m.id] = out
        return out
    xp = xp_for(as_device(n.device))
    with np.errstate(all="ignore"):
        out = OPS[n.op].impl(xp, *args, **n.attr)
    return np.asarray(out) if isinstance(out, np.generic) else out


def interpret(graph: Graph, inputs: list, stop_at: int | None = None,
              keep_members: bool = False) -> dict:
    """node id -> value for every node (inputs included). Fused nodes run their members;
    with ``keep_members`` the members' values are kept too. Assigns are not applied."""
    state = em_random.generator().bit_generator.state
    env: dict = dict(zip(graph.inputs, inputs))
    try:
        for n in graph.nodes:
            if n.op in (INPUT, ASSIGN):
                continue
            if n.op == FUSED and keep_members:
                inner = {i: env[i] for i in n.node_inputs}
                for m in n.body:
                    inner[m.id] = evaluate_node(m, inner)
                    env[m.id] = inner[m.id]
                env[n.id] = env[n.body[-1].id]
            else:
                env[n.id] = evaluate_node(n, env)
            if stop_at is not None and n.id == stop_at:
                break
    finally:
        em_random.generator().bit_generator.state = state
    return env
