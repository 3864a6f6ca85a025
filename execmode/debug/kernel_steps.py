"""Stepping into a fused kernel (``s`` in graph mode): its member ops one at a time.

A fused kernel runs its members in one compiled loop, so there is no moment between
them to stop at. Stepping in pauses before each member with *its* inputs, recomputed by
the graph interpreter from the segment's saved inputs (the values the member would see);
the kernel itself then runs as compiled, so the script computes exactly what it computes
without the debugger. ``n`` at a kernel steps over it (to the next kernel, as pdb's next
steps over a call); at a member, ``n`` and ``s`` both go to the next member (the same
level), and after the last one, to the next kernel.
"""

from __future__ import annotations

from ..graph.interpret import interpret


def members_of(step) -> tuple:
    """The member nodes of a fused step; () for a step of one node (nothing to enter)."""
    body = step.node.body or ()
    return body if len(body) > 1 else ()


def member_values(plan, step, segment_inputs: list) -> dict:
    """node id -> value for the segment up to and including ``step``'s members."""
    return interpret(plan.graph, segment_inputs, stop_at=step.node.id, keep_members=True)


def member_inputs(member, values: dict) -> list:
    """The arrays a member reads (its literal operands are constants: not listed)."""
    return [values[x] for x in member.inputs if isinstance(x, int) and x in values]


def member_info(member, index: int, count: int, kernel_name: str) -> dict:
    """What the paused event says about the member (the TUI shows it with the kernel)."""
    return {"index": index, "count": count, "id": member.id, "op": member.op,
            "type": member.type_str(), "kernel": kernel_name,
            "location": member.loc.to_json() if member.loc else None}
