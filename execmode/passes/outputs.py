"""Outputs stay as distinct as eager made them: a copy where a pass merged two of them.

CSE and simplify merge values that eager computes separately: ``return x * 2, x * 2``
becomes one node, ``a, a + 0`` returns ``a`` twice, ``x + 0`` returns the input ``x``.
The numbers are right, but a plan would hand out one buffer for two tensors that eager
keeps apart, so an in-place write through one would show through the other (and the
whole-graph program, codegen/program.py, gave each repeat a buffer nobody wrote).

After the other passes (before memory planning) the pass manager compares the graph as
traced with the graph as lowered, position by position: an output that now shares its
buffer with an earlier output, or with an input, where the traced graph kept them apart,
reads a ``copy`` of its value instead. Sharing that was already there when traced (an
output returned twice, a view of another output) is eager's own aliasing and stays.
"""

from __future__ import annotations

from ..graph.ir import ASSIGN, Graph, Node
from .memplan import alias_roots
from .record import Rewrite

NAME = "separate_merged_outputs"


def separate_merged_outputs(traced: Graph, lowered: Graph):
    """``lowered`` with a copy for every output that passes made share a buffer it did not
    share in ``traced``; (graph, rewrites), the graph unchanged when there is none."""
    if len(traced.outputs) != len(lowered.outputs):
        return lowered, []  # not the same outputs (a hand-built pair): nothing to compare
    before_root, after_root = alias_roots(traced), alias_roots(lowered)
    nodes = lowered.node_map()
    inputs = set(lowered.inputs)
    next_id = lowered.max_id() + 1
    copies: list[Node] = []
    outputs = list(lowered.outputs)
    rewrites: list[Rewrite] = []
    for j, (was, now) in enumerate(zip(traced.outputs, lowered.outputs)):
        reason = _merged_with(j, was, now, traced, lowered, before_root, after_root, inputs)
        if reason is None:
            continue
        source = nodes[now]
        copy = Node(next_id, "copy", (now,), (), source.shape, source.dtype, source.device,
                    source.scope, source.loc)
        next_id += 1
        copies.append(copy)
        outputs[j] = copy.id
        rewrites.append(Rewrite(f"%{copy.id} = copy %{now}: output {j} {reason} after the "
                                "passes, a separate tensor in eager", (copy.id, now),
                                "outputs"))
    if not copies:
        return lowered, []
    # Before the assigns, which stay last (the copies read values, never written inputs).
    at = next((k for k, n in enumerate(lowered.nodes) if n.op == ASSIGN), len(lowered.nodes))
    g = lowered.copy(nodes=lowered.nodes[:at] + copies + lowered.nodes[at:])
    g.outputs = outputs
    return g, rewrites


def _merged_with(j, was, now, traced, lowered, before_root, after_root, inputs):
    """Why output ``j`` needs a copy (a phrase), or None."""
    for i in range(j):
        # The same node twice: exact. Roots: views share their base's buffer.
        if lowered.outputs[i] == now and traced.outputs[i] != was:
            return f"is output {i}"
        if after_root[lowered.outputs[i]] == after_root[now] and \
                before_root[traced.outputs[i]] != before_root[was]:
            return f"shares the buffer of output {i}"
    root = after_root[now]
    if root in inputs and before_root[was] != root:
        return f"is (a view of) input %{root}"
    return None
