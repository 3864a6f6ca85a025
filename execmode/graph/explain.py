"""``em.explain(fn, *args)``: what graph mode made of a function (torch._dynamo.explain).

It calls ``fn`` once under a fresh ``em.jit`` and reports how many graphs it became, each
graph break with its reason and the user's source line, the ops per graph, and retraces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .jit import JitFunction, _registry
from .trace import GraphBreak


@dataclass
class ExplainReport:
    function: str
    graph_count: int
    break_count: int
    breaks: list[GraphBreak]
    ops_per_graph: list[int]
    graphs: list = field(default_factory=list)
    retraces: list = field(default_factory=list)
    baked: list = field(default_factory=list)   # on_break="bake": values frozen silently

    def __str__(self) -> str:
        lines = [
            f"explain {self.function}:",
            f"  graphs: {self.graph_count}   graph breaks: {self.break_count}",
            "  ops per graph: " + ", ".join(str(n) for n in self.ops_per_graph),
        ]
        for i, b in enumerate(self.breaks):
            lines.append(f"  break {i + 1}: {b.reason}")
            lines.append(f"      at {b.filename}:{b.lineno} in {b.function} (op {b.op})")
        for b in self.baked:
            lines.append(f"  baked (no break, value frozen): {b.reason}")
            lines.append(f"      at {b.filename}:{b.lineno} in {b.function} (op {b.op})")
        for r in self.retraces:
            lines.append(f"  {r}")
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "function": self.function, "graph_count": self.graph_count,
            "break_count": self.break_count, "breaks": [b.to_json() for b in self.breaks],
            "ops_per_graph": self.ops_per_graph, "retraces": [str(r) for r in self.retraces],
        }


def explain(fn, *args, **kwargs) -> ExplainReport:
    """Run ``fn(*args, **kwargs)`` once under a fresh ``em.jit`` and report what happened."""
    base = fn.fn if isinstance(fn, JitFunction) else fn
    jitted = JitFunction(base, passes=getattr(fn, "passes", None),
                         on_break=getattr(fn, "on_break", "split"))
    _registry.discard(jitted)  # a throwaway: `execmode explain` lists the script's own
    jitted(*args, **kwargs)
    cf = jitted.concrete_functions[-1]
    graphs = cf.graphs
    return ExplainReport(
        function=jitted.name,
        graph_count=len(graphs),
        break_count=len(cf.breaks),
        breaks=list(cf.breaks),
        ops_per_graph=[len(g.op_nodes) for g in graphs],
        graphs=graphs,
        retraces=list(jitted.retraces),
        baked=list(cf.baked),
    )
