"""The per-pass record: what each pass did, as data the TUI animates and the store keeps.

After every pass: a snapshot of the graph, the individual rewrites (each a sentence naming
the node ids it touched), the pass's wall time, node/kernel/buffer counts, and a node-level
diff against the previous snapshot. The diff adds up: every node before the pass is kept,
removed, merged into another node, or fused into a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graph.ir import ASSIGN, INPUT, Graph, format_graph


@dataclass
class Rewrite:
    """One change: "CSE: %7 is %4", "folded %3 = multiply 2.0 3.0 -> 6.0"."""

    sentence: str
    nodes: tuple = ()        # every node id the rewrite touched
    kind: str = ""           # fold | simplify | cse | dce | fuse | memplan

    def __str__(self) -> str:
        return self.sentence

    def to_json(self) -> dict:
        return {"sentence": self.sentence, "nodes": list(self.nodes), "kind": self.kind}


@dataclass
class NodeDiff:
    kept: list[int] = field(default_factory=list)
    changed: list[int] = field(default_factory=list)   # kept, but op or inputs differ
    removed: list[int] = field(default_factory=list)
    added: list[int] = field(default_factory=list)
    merged: dict[int, int] = field(default_factory=dict)   # removed id -> id it became
    fused: dict[int, int] = field(default_factory=dict)    # member id -> fused node id

    def to_json(self) -> dict:
        return {
            "kept": self.kept, "changed": self.changed, "removed": self.removed,
            "added": self.added, "merged": {str(k): v for k, v in self.merged.items()},
            "fused": {str(k): v for k, v in self.fused.items()},
        }

    def summary(self) -> str:
        parts = [f"{len(self.kept)} kept"]
        for name in ("changed", "removed", "added", "merged", "fused"):
            n = len(getattr(self, name))
            if n:
                parts.append(f"{n} {name}")
        return ", ".join(parts)


def diff_graphs(before: Graph, after: Graph, merged: dict, fused: dict) -> NodeDiff:
    b = {n.id: n for n in before.nodes}
    a = {n.id: n for n in after.nodes}
    d = NodeDiff()
    for node_id, node in b.items():
        if node_id in a:
            d.kept.append(node_id)
            other = a[node_id]
            if other.op != node.op or other.inputs != node.inputs or other.attrs != node.attrs:
                d.changed.append(node_id)
        elif node_id in fused:
            d.fused[node_id] = fused[node_id]
        elif node_id in merged:
            d.merged[node_id] = merged[node_id]
        else:
            d.removed.append(node_id)
    d.added = [node_id for node_id in a if node_id not in b]
    return d


def count_kernels(graph: Graph) -> int:
    """Steps a plan of this graph runs: every op node except inputs and assigns."""
    return sum(1 for n in graph.nodes if n.op not in (INPUT, ASSIGN))


def count_values(graph: Graph) -> int:
    return sum(1 for n in graph.nodes if n.op not in (INPUT, ASSIGN))


@dataclass
class PassResult:
    name: str
    graph: Graph
    rewrites: list[Rewrite]
    wall_ns: int
    diff: NodeDiff
    node_count: int
    kernel_count: int
    buffer_count: int
    start_ns: int = 0  # perf_counter_ns when the pass began

    def to_json(self, index: int) -> dict:
        return {
            "index": index, "name": self.name, "wall_ns": self.wall_ns,
            "node_count": self.node_count, "kernel_count": self.kernel_count,
            "buffer_count": self.buffer_count,
            "rewrites": [r.to_json() for r in self.rewrites], "diff": self.diff.to_json(),
            "ir_text": format_graph(self.graph), "ir_json": self.graph.to_json(),
        }


@dataclass
class PassRecord:
    """The whole pipeline's story for one graph: the input and one result per pass."""

    initial: Graph
    results: list[PassResult] = field(default_factory=list)

    @property
    def final(self) -> Graph:
        return self.results[-1].graph if self.results else self.initial

    @property
    def rewrites(self) -> list[Rewrite]:
        return [r for res in self.results for r in res.rewrites]

    def result(self, name: str) -> PassResult:
        for res in self.results:
            if res.name == name:
                return res
        raise KeyError(name)

    @property
    def memory(self):
        return self.final.meta.get("memory_plan")

    def __str__(self) -> str:
        g = self.initial
        lines = [f"passes over {g.name}: {len(g.op_nodes)} nodes traced"]
        for i, res in enumerate(self.results):
            lines.append(
                f"{i + 1}. {res.name:<32} {res.wall_ns / 1e6:7.2f} ms   nodes {res.node_count:>4}"
                f"   kernels {res.kernel_count:>4}   buffers {res.buffer_count:>4}"
                f"   ({res.diff.summary()})"
            )
            shown = res.rewrites[:12]
            for r in shown:
                lines.append(f"     - {r.sentence}")
            if len(res.rewrites) > len(shown):
                lines.append(f"     ... and {len(res.rewrites) - len(shown)} more")
        mem = self.memory
        if mem is not None:
            lines.append(mem.summary())
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "initial": self.initial.to_json(),
            "passes": [res.to_json(i) for i, res in enumerate(self.results)],
        }

