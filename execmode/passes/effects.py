"""Effects stay as traced: after every pass, the impure nodes (random draws, debug_print,
collectives) are all still there, in the order they were traced.

The passes decide from one flag of the op registry, ``OpDef.impure``: constant folding
never folds such a node, CSE never merges two, DCE keeps one whose result nothing reads,
fusion takes no opaque op into a kernel. This check holds every pass to it, the user's own
passes (``em.jit(fn, passes=[..., (name, fn)])``) too: ranks must issue their collectives
in the same order, and a random draw moved across another gives other numbers than eager.
"""

from __future__ import annotations

from ..graph.ir import FUSED, Graph
from ..graph.verify import GraphVerificationError
from ..ops import OPS


def effects(graph: Graph) -> list[tuple[int, str]]:
    """``(node id, op)`` of every impure node, fused members included, in graph order."""
    found = []
    for n in graph.nodes:
        for m in n.body if n.op == FUSED else (n,):
            op = OPS.get(m.op)
            if op is not None and op.impure:
                found.append((m.id, m.op))
    return found


def check_effects_kept(before: Graph, after: Graph, stage: str) -> None:
    """Raise GraphVerificationError if ``after`` lost, merged, added or reordered an
    impure node of ``before``."""
    was, now = effects(before), effects(after)
    if now != was:
        shown = ", ".join(f"%{i} {op}" for i, op in was) or "none"
        got = ", ".join(f"%{i} {op}" for i, op in now) or "none"
        raise GraphVerificationError(
            f"graph {after.name} after {stage}: the impure nodes must stay as traced, in "
            f"order (never folded, merged, dropped or moved across each other): were {shown}; "
            f"now {got}")
