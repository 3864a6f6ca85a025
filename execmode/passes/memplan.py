"""Memory planning: liveness over values, reuse of dead buffers, in-place where safe.

Values that a plan step can write into a given buffer (fused kernels, matmuls, reductions,
binary ufuncs) get a buffer from a pool, preallocated once per plan. A buffer whose value is
dead is reused by a later value of fitting size (best fit); an elementwise step whose
same-shaped input dies at that step writes in place. Graph outputs are never pooled (the
caller keeps them across calls), nor are graph inputs; views (reshape, permute, broadcast)
take no buffer but keep their base alive.

The plan reports three peaks, in bytes of values the graph produces (inputs excluded):
``planned`` (the pool plus what is still allocated per call), ``unplanned`` (every value
its own buffer) and ``eager`` (op by op as eager runs it, each value freed at its last use:
a lower bound of real eager, where Python variables keep values alive longer).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..graph.ir import ASSIGN, FUSED, INPUT, Graph, Node
from ..ops import OPS
from .record import Rewrite

# Ops whose result may share memory with their first input (NumPy returns views for basic
# indexing; debug_print returns its input): they take no buffer and keep their base alive.
VIEW_OPS = {"reshape", "permute_dims", "broadcast_to", "getitem", "debug_print"}
REDUCTIONS_WITH_OUT = {"sum", "prod", "max", "min"}


@dataclass
class Buffer:
    id: int
    nbytes: int
    device: str


@dataclass
class MemoryPlan:
    buffers: list[Buffer] = field(default_factory=list)
    assignment: dict[int, int] = field(default_factory=dict)   # node id -> buffer id
    inplace: dict[int, int] = field(default_factory=dict)      # node id -> input it overwrites
    planned_peak: int = 0
    unplanned_peak: int = 0
    eager_peak: int = 0

    def summary(self) -> str:
        return (f"memory: planned peak {_mb(self.planned_peak)}, unplanned peak "
                f"{_mb(self.unplanned_peak)}, eager peak {_mb(self.eager_peak)} "
                f"({len(self.buffers)} buffers for {len(self.assignment)} values, "
                f"{len(self.inplace)} in place)")

    def to_json(self) -> dict:
        return {
            "buffers": [b.__dict__ for b in self.buffers],
            "assignment": {str(k): v for k, v in self.assignment.items()},
            "inplace": {str(k): v for k, v in self.inplace.items()},
            "planned_peak": self.planned_peak, "unplanned_peak": self.unplanned_peak,
            "eager_peak": self.eager_peak,
        }


def _mb(n: int) -> str:
    return f"{n / 1e6:.3f} MB" if n >= 1e5 else f"{n} B"


def can_write_into(n: Node) -> bool:
    """Can the plan step for this node write its result into a given buffer?"""
    if n.op == FUSED or n.op == "matmul" or n.op in REDUCTIONS_WITH_OUT:
        return True
    op = OPS.get(n.op)
    # Only real ufuncs take out= (np.copy, the copy op's function, does not).
    return op is not None and isinstance(op.ufunc, np.ufunc)


def _elementwise_like(n: Node) -> bool:
    if n.op == FUSED:
        return n.attr.get("kind") in ("elementwise", "matmul_epilogue")
    op = OPS.get(n.op)
    return op is not None and op.is_elementwise


def alias_roots(graph: Graph) -> dict[int, int]:
    """node id -> the node whose buffer it may share (itself, or the base of a view chain)."""
    root: dict[int, int] = {}
    for n in graph.nodes:
        if n.op in VIEW_OPS and isinstance(n.inputs[0], int):
            root[n.id] = root.get(n.inputs[0], n.inputs[0])
        else:
            root[n.id] = n.id
    return root


def _last_uses(graph: Graph, root: dict) -> dict[int, int]:
    position = {n.id: k for k, n in enumerate(graph.nodes)}
    end = len(graph.nodes)
    last: dict[int, int] = {n.id: position[n.id] for n in graph.nodes}
    for k, n in enumerate(graph.nodes):
        for i in n.node_inputs:
            r = root[i]
            last[r] = max(last[r], k)
            last[i] = max(last[i], k)
        if n.op == ASSIGN:  # assign values are copied at the very end
            for i in n.node_inputs:
                last[root[i]] = end
    for o in graph.outputs:
        last[root[o]] = end
        last[o] = end
    return last


def plan_memory(graph: Graph):
    root = alias_roots(graph)
    last = _last_uses(graph, root)
    inputs = set(graph.inputs)
    output_roots = {root[o] for o in graph.outputs}
    plan = MemoryPlan()
    rewrites: list[Rewrite] = []
    free = _FreeBuffers()
    by_id = graph.node_map()
    holder: dict[int, Buffer] = {}          # node id -> buffer it holds
    release_at: dict[int, list[int]] = {}   # step -> node ids whose buffer frees after it
    per_call_live = per_call_peak = 0
    per_call_release: dict[int, list[int]] = {}
    values = [n for n in graph.nodes if n.op not in (INPUT, ASSIGN)]
    plan.unplanned_peak = sum(n.nbytes for n in values if n.op not in VIEW_OPS)
    plan.eager_peak = _simulated_eager_peak(graph, root, last)
    for k, n in enumerate(graph.nodes):
        if n.op in (INPUT, ASSIGN) or n.op in VIEW_OPS:
            _release(k, release_at, holder, free)
            continue
        pooled = can_write_into(n) and n.id not in output_roots and root[n.id] not in inputs
        if pooled:
            buf = None
            if _elementwise_like(n):
                # Operands read through a view of another operand (x + x.T): writing in
                # place over that one would read elements already overwritten.
                viewed = {root[j] for j in n.node_inputs if root[j] != j}
                for i in n.node_inputs:
                    src = holder.get(root[i])
                    aliased = i in viewed
                    if (src is not None and not aliased and root[i] == i and last[i] == k
                            and _same_sizes(by_id[i].shape, n.shape)
                            and by_id[i].dtype == n.dtype):
                        buf = src
                        del holder[i]
                        plan.inplace[n.id] = i
                        rewrites.append(Rewrite(f"%{n.id} written in place over %{i} "
                                                f"(buffer b{buf.id})", (n.id, i), "memplan"))
                        break
            if buf is None:
                buf = free.take(n.nbytes, n.device)
                if buf is not None:
                    rewrites.append(Rewrite(f"buffer b{buf.id} reused for %{n.id}",
                                            (n.id,), "memplan"))
                else:
                    buf = Buffer(len(plan.buffers), n.nbytes, n.device)
                    plan.buffers.append(buf)
            holder[n.id] = buf
            plan.assignment[n.id] = buf.id
            release_at.setdefault(last[n.id], []).append(n.id)
        else:
            per_call_live += n.nbytes
            per_call_peak = max(per_call_peak, per_call_live)
            per_call_release.setdefault(last[n.id], []).append(n.nbytes)
        _release(k, release_at, holder, free)
        for nbytes in per_call_release.pop(k, ()):
            per_call_live -= nbytes
    plan.planned_peak = sum(b.nbytes for b in plan.buffers) + per_call_peak
    g = graph.copy()
    g.meta["memory_plan"] = plan
    return g, rewrites, {}, {}


def _release(k, release_at, holder, free) -> None:
    for node_id in release_at.pop(k, ()):
        buf = holder.pop(node_id, None)
        if buf is not None:
            free.add(buf)


class _FreeBuffers:
    """Dead buffers by device and size, for best fit in O(log n): the smallest buffer at
    least as large as asked, and among equal sizes the one freed first - the choice a
    scan of a list in release order with ``min`` by size makes, which was quadratic in a
    wide graph (a thousand values dead at once, then a thousand new ones)."""

    def __init__(self):
        self._sizes: dict[str, list[int]] = {}              # device -> sorted distinct sizes
        self._by_size: dict[tuple, deque] = {}              # (device, size) -> release order

    def add(self, buf: Buffer) -> None:
        key = (buf.device, buf.nbytes)
        queue = self._by_size.get(key)
        if queue is None:
            queue = self._by_size[key] = deque()
            insort(self._sizes.setdefault(buf.device, []), buf.nbytes)
        queue.append(buf)

    def take(self, nbytes: int, device: str) -> Buffer | None:
        sizes = self._sizes.get(device)
        if not sizes:
            return None
        k = bisect_left(sizes, nbytes)
        if k == len(sizes):
            return None
        key = (device, sizes[k])
        queue = self._by_size[key]
        buf = queue.popleft()
        if not queue:
            del self._by_size[key]
            sizes.pop(k)
        return buf


def _simulated_eager_peak(graph: Graph, root: dict, last: dict) -> int:
    live = peak = 0
    release: dict[int, int] = {}
    for k, n in enumerate(graph.nodes):
        if n.op in (INPUT, ASSIGN):
            continue
        size = 0 if n.op in VIEW_OPS else n.nbytes
        if n.op == FUSED:  # eager runs every member and keeps none of them
            size = max(sum(m.nbytes for m in n.body[:-1]), 0) + n.nbytes
            release[k] = release.get(k, 0) + size - n.nbytes
        live += size
        peak = max(peak, live)
        release[last[n.id]] = release.get(last[n.id], 0) + (size if n.op != FUSED
                                                              else n.nbytes)
        live -= release.pop(k, 0)
    return peak


def _same_sizes(a: tuple, b: tuple) -> bool:
    """Shapes equal as the traced numbers: a plan made for symbolic sizes is not used at
    other sizes (jit_driver/symbolic_dims.py drops it), so its choices are no decision a
    symbolic size must record (symbolic_sizes.py)."""
    return len(a) == len(b) and all(int(x) == int(y) for x, y in zip(a, b))
