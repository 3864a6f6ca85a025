"""Fusion grouping: turn groups of nodes into fused nodes that codegen makes one kernel.

Three shapes of group, as in XLA's loop and input fusion:

* elementwise: a chain/tree of elementwise ops of one output shape (inputs may broadcast);
* reduction: elementwise producers folded into a final sum/prod/max/min;
* matmul_epilogue: a matmul followed by elementwise ops on its output (bias, activation):
  the matmul stays a library call, the epilogue becomes one kernel.

A node joins a group only if every one of its users is in the group (a group has one
output) and it has the group's iteration shape (no recomputation of broadcast values).
A reduction is always the last member: nothing after a reduction boundary is fused into its
group, which would change what is summed.
"""

from __future__ import annotations

from ..graph.ir import FUSED, Graph, Literal, Node, make_attrs
from ..ops import OPS
from .record import Rewrite
from .rewrite import rewire

REDUCTIONS = {"sum", "prod", "max", "min"}
NEVER_FUSED = {"debug_print", "assign", "to_device"}


def _elementwise(n: Node) -> bool:
    op = OPS.get(n.op)
    return op is not None and op.is_elementwise and op.template is not None \
        and n.op not in NEVER_FUSED and not _raises_on_values(n)


def _raises_on_values(n: Node) -> bool:
    """NumPy refuses an integer power with a negative exponent, and eager raises; a kernel
    cannot raise, so the op stays a step of its own, which raises eager's error."""
    if n.op != "power" or n.dtype.kind not in "iu":
        return False
    exponent = n.inputs[1]
    return not (isinstance(exponent, Literal) and exponent.value >= 0)  # x ** 2 fuses


def fuse(graph: Graph):
    users = graph.users()
    order = {n.id: k for k, n in enumerate(graph.nodes)}
    by_id = {n.id: n for n in graph.nodes}
    outputs = set(graph.outputs)
    taken: set[int] = set()
    groups: list[tuple[str, list[Node]]] = []
    for n in reversed(graph.nodes):
        if n.id in taken:
            continue
        if n.op in REDUCTIONS:
            kind, shape = "reduction", by_id[n.inputs[0]].shape if isinstance(
                n.inputs[0], int) else None
        elif _elementwise(n):
            kind, shape = "elementwise", n.shape
        else:
            continue
        members = {n.id}
        changed = True
        while changed:
            changed = False
            for m in list(members):
                for i in by_id[m].node_inputs:
                    p = by_id[i]
                    if i in members or i in taken or i in outputs or not _elementwise(p):
                        continue
                    if p.shape != shape or p.device != n.device:
                        continue
                    if all(u in members for u in users[i]):
                        members.add(i)
                        changed = True
        if kind == "elementwise":
            mm = _matmul_producer(members, by_id, users, outputs, taken, shape)
            if mm is not None:
                members.add(mm)
                kind = "matmul_epilogue"
        if len(members) < 2:
            continue
        taken |= members
        groups.append((kind, sorted((by_id[m] for m in members), key=lambda x: order[x.id])))
    if not groups:
        return graph, [], {}, {}
    return _rewrite(graph, groups, order)


def _matmul_producer(members, by_id, users, outputs, taken, shape):
    for m in members:
        for i in by_id[m].node_inputs:
            p = by_id[i]
            if (p.op == "matmul" and i not in members and i not in taken and i not in outputs
                    and p.shape == shape and all(u in members for u in users[i])):
                return i
    return None


def _rewrite(graph: Graph, groups, order):
    next_id = graph.max_id() + 1
    replaced: dict[int, Node] = {}   # root id -> fused node
    dropped: set[int] = set()
    mapping: dict[int, int] = {}
    fused_of: dict[int, int] = {}
    rewrites: list[Rewrite] = []
    # Label kernels in program order (k0 first).
    groups.sort(key=lambda g: order[g[1][-1].id])
    for k, (kind, members) in enumerate(groups):
        ids = {m.id for m in members}
        inputs: list[int] = []
        for m in members:
            for i in m.node_inputs:
                if i not in ids and i not in inputs:
                    inputs.append(i)
        root = members[-1]
        fused = Node(next_id, FUSED, tuple(inputs), make_attrs({"kind": kind}), root.shape,
                     root.dtype, root.device, root.scope, root.loc, tuple(members), f"k{k}")
        next_id += 1
        replaced[root.id] = fused
        dropped |= ids - {root.id}
        mapping[root.id] = fused.id
        for m in members:
            fused_of[m.id] = fused.id
        rewrites.append(Rewrite(
            f"fused {' '.join(f'%{m.id}' for m in members)} into {fused.label} "
            f"({kind.replace('_', ' ')}, {len(members)} ops)",
            tuple(m.id for m in members) + (fused.id,), "fuse"))
    nodes = []
    for n in graph.nodes:
        if n.id in replaced:
            nodes.append(replaced[n.id])
        elif n.id not in dropped:
            nodes.append(n)
    # Users of a root now read its fused node, inside other groups' bodies too (a root is
    # the last member of its own group, so no body reads its own root).
    return rewire(graph.copy(nodes=nodes), mapping), rewrites, {}, fused_of
