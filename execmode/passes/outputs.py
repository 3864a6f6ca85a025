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

So does an output that had a buffer of its own as traced and is a view after the passes
(simplify drops ``copy(reshape(%sum))`` and ``x + 0``): eager's result is a fresh array,
C-ordered and writeable, where the view would have the base's strides, share its memory
and, for a broadcast, be read-only (a ``.grad`` that backward then adds into in place).
Copies elsewhere in the graph stay removable: only outputs are compared.
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
    earlier = _EarlierOutputs()
    for j, (was, now) in enumerate(zip(traced.outputs, lowered.outputs)):
        reason = earlier.merged_with(was, now, before_root, after_root, inputs)
        earlier.add(j, was, now, before_root, after_root)
        if reason is None and before_root[was] == was and after_root[now] != now:
            reason = f"is a view of %{after_root[now]}"
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


class _FirstTwo:
    """The first index seen with a key, and the first later one whose key differs."""

    __slots__ = ("first", "key", "other")

    def __init__(self, index: int, key):
        self.first, self.key, self.other = index, key, None

    def add(self, index: int, key) -> None:
        if self.other is None and key != self.key:
            self.other = index

    def first_differing(self, key):
        """The smallest index whose key is not ``key``, or None."""
        return self.first if self.key != key else self.other


class _EarlierOutputs:
    """What the outputs before ``j`` were, indexed so that finding the first one output
    ``j`` was merged with costs O(1) (a scan of every earlier output was quadratic in
    functions returning thousands of tensors). The answer is the scan's: the smallest
    earlier output that is the same node but was another node when traced ("is output
    i"), or that shares the buffer but did not when traced ("shares the buffer of output
    i"), the first phrase where both hold."""

    def __init__(self):
        self.by_node: dict[int, _FirstTwo] = {}   # lowered output -> traced outputs seen
        self.by_root: dict[int, _FirstTwo] = {}   # lowered buffer -> traced buffers seen

    def add(self, j, was, now, before_root, after_root) -> None:
        for table, key, value in ((self.by_node, now, was),
                                  (self.by_root, after_root[now], before_root[was])):
            seen = table.get(key)
            if seen is None:
                table[key] = _FirstTwo(j, value)
            else:
                seen.add(j, value)

    def merged_with(self, was, now, before_root, after_root, inputs):
        """Why this output needs a copy (a phrase), or None."""
        same_node = self.by_node.get(now)
        same_root = self.by_root.get(after_root[now])
        a = same_node.first_differing(was) if same_node is not None else None
        b = same_root.first_differing(before_root[was]) if same_root is not None else None
        if a is not None and (b is None or a <= b):
            return f"is output {a}"
        if b is not None:
            return f"shares the buffer of output {b}"
        root = after_root[now]
        if root in inputs and before_root[was] != root:
            return f"is (a view of) input %{root}"
        return None
