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

import numpy as np

from ..dtypes import KERNEL_DTYPES, short_name
from ..graph.ir import FUSED, Graph, Literal, Node, make_attrs
from ..ops import OPS
from .record import Rewrite
from .rewrite import rewire

REDUCTIONS = {"sum", "prod", "max", "min"}
NEVER_FUSED = {"debug_print", "assign", "to_device"}
# Ops per group at most. The C compiler's time per op grows with the function's length
# (GCC's passes are superlinear in it: a 5000-op chain compiled 1.7x faster as 20 functions
# of 250 ops than as one), and bounded kernels can be compiled in parallel (units.py); a
# split costs one store and one load per element between kernels, against hundreds of
# ops each side (docs/performance.md, "First calls").
MAX_GROUP_OPS = 256


def fusable_elementwise(n: Node, by_id: dict) -> bool:
    """An elementwise op a kernel can compute as eager does (program_statements.py asks it too);
    ``by_id`` maps the graph's node ids to nodes (for the operands' dtypes)."""
    op = OPS.get(n.op)
    return op is not None and op.is_elementwise and op.template is not None \
        and n.op not in NEVER_FUSED and not _raises_on_values(n) \
        and kernel_dtype_refusal(n, by_id) is None


def kernel_dtype_refusal(n: Node, by_id: dict) -> str | None:
    """Why ``n`` cannot be in a generated kernel because of a dtype (its own or an
    operand's that the C/CUDA renderers have no type for: complex, the small and unsigned
    integers), or None. Such an op runs as a plan step on NumPy (CuPy), as eagerly."""
    dtypes = [n.dtype] + [by_id[i].dtype for i in n.node_inputs if i in by_id]
    dtypes += [np.result_type(type(i.value)) for i in n.inputs if isinstance(i, Literal)]
    for dt in dtypes:
        if dt not in KERNEL_DTYPES:
            return (f"kept %{n.id} ({n.op}) out of fusion: the C/CUDA kernels have no "
                    f"{short_name(dt)} type; it runs on {_library(n)} as eagerly")
    return None


def _kept_out_reason(n: Node, op, by_id: dict) -> str | None:
    """The pass record's sentence for an elementwise op or a reduction that stays a plan
    step of its own: no scalar template in the kernel dialects (tan, acosh, the shifts
    ...), or a dtype the kernels lack. None for the ops that may join a kernel."""
    if op is None or n.op in NEVER_FUSED or not (op.is_elementwise or n.op in REDUCTIONS):
        return None
    if op.is_elementwise and op.template is None:
        return (f"kept %{n.id} ({n.op}) out of fusion: the C/CUDA kernels have no helper "
                f"for it; it runs on {_library(n)} as eagerly")
    return kernel_dtype_refusal(n, by_id)


def _library(n: Node) -> str:
    return "NumPy" if str(n.device) == "cpu" else "CuPy"


def _raises_on_values(n: Node) -> bool:
    """NumPy refuses an integer power with a negative exponent, and eager raises; a kernel
    cannot raise, so the op stays a step of its own, which raises eager's error."""
    if n.op != "power" or n.dtype.kind not in "iu":
        return False
    exponent = n.inputs[1]
    return not (isinstance(exponent, Literal) and exponent.value >= 0)  # x ** 2 fuses


def fuse(graph: Graph):
    # Users as sets: a node that reads a value twice is one user of it.
    users = {i: set(us) for i, us in graph.users().items()}
    order = {n.id: k for k, n in enumerate(graph.nodes)}
    by_id = {n.id: n for n in graph.nodes}
    outputs = set(graph.outputs)
    taken: set[int] = set()
    groups: list[tuple[str, list[Node]]] = []
    kept_out: list[Rewrite] = []  # the ops kept out of kernels, and why
    for n in reversed(graph.nodes):
        if n.id in taken:
            continue
        reason = _kept_out_reason(n, OPS.get(n.op), by_id)
        if reason is not None:
            kept_out.append(Rewrite(reason, (n.id,), "fuse"))
            continue
        if n.op in REDUCTIONS:
            kind, shape = "reduction", by_id[n.inputs[0]].shape if isinstance(
                n.inputs[0], int) else None
        elif fusable_elementwise(n, by_id):
            kind, shape = "elementwise", n.shape
        else:
            continue
        members = _grow(n, shape, by_id, users, outputs, taken)
        if kind == "elementwise":
            mm = _matmul_producer(members, by_id, users, outputs, taken, shape)
            if mm is not None:
                members.add(mm)
                kind = "matmul_epilogue"
        if len(members) < 2:
            continue
        taken |= members
        groups.append((kind, sorted((by_id[m] for m in members), key=lambda x: order[x.id])))
    kept_out.reverse()  # in graph order
    if not groups:
        return graph, kept_out, {}, {}
    graph, rewrites, merged, fused_of = _rewrite(graph, groups, order)
    return graph, kept_out + rewrites, merged, fused_of


def _grow(root: Node, shape, by_id, users, outputs, taken) -> set[int]:
    """The group of ``root``: the least set holding root and every eligible producer whose
    users are all in the set. A worklist over producer edges, each edge looked at once: a
    producer joins when the count of its users inside the group reaches its user count
    (a counter instead of re-scanning the group until nothing changes, which was quadratic
    in the chain length). Joining only ever makes other producers eligible, so the set is
    the same whatever the order, until the group holds ``MAX_GROUP_OPS``: then it stops,
    in a deterministic order (inputs as listed), and what is left forms groups of its
    own. Every member still has all its users inside, so a group keeps one output."""
    members = {root.id}
    inside: dict[int, int] = {}  # producer id -> how many of its users are members
    work = [root.id]
    while work and len(members) < MAX_GROUP_OPS:
        m = work.pop()
        for i in dict.fromkeys(by_id[m].node_inputs):
            if len(members) >= MAX_GROUP_OPS:
                break
            if i in members:
                continue
            inside[i] = inside.get(i, 0) + 1
            if inside[i] < len(users[i]) or i in taken or i in outputs:
                continue
            p = by_id[i]
            if p.shape != shape or p.device != root.device or \
                    not fusable_elementwise(p, by_id):
                continue
            members.add(i)
            work.append(i)
    return members


def _matmul_producer(members, by_id, users, outputs, taken, shape):
    # Members in id order, so that the choice between two matmul producers is deterministic.
    for m in sorted(members):
        for i in by_id[m].node_inputs:
            p = by_id[i]
            if (p.op == "matmul" and i not in members and i not in taken and i not in outputs
                    and p.shape == shape and users[i] <= members):
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
        inputs: dict[int, None] = {}  # ordered, with O(1) membership
        for m in members:
            for i in m.node_inputs:
                if i not in ids:
                    inputs[i] = None
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
