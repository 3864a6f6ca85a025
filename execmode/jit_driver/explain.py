"""``em.explain(fn, *args)``: what graph mode made of a function (torch._dynamo.explain).

It traces ``fn`` once under a fresh ``em.jit`` and reports how many graphs it became, each
graph break with its reason and the user's source line, and the ops per graph.

Tracing is not running: a function without graph breaks leaves every tensor as it was, so
explaining a training step does not take a step. A graph break needs a real value, so from
the first break the function runs (torch._dynamo.explain always runs it): its updates then
happen once, and the report says so (``ran``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graph.segments import GraphBreak
from .jit import JitFunction
from .registry import forget


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
    ran: bool = False  # a graph break made the function run: its tensor updates happened
    # The backward graph of results eager would hand back differentiable (backward.py):
    # what backward() through them runs; empty when there are none.
    backward_graphs: list = field(default_factory=list)
    backward_refusal: str | None = None

    def __str__(self) -> str:
        lines = [
            f"explain {self.function}:",
            f"  graphs: {self.graph_count}   graph breaks: {self.break_count}",
            "  ops per graph: " + ", ".join(str(n) for n in self.ops_per_graph),
            "  ran: yes: a graph break needs real values, so the function ran once (updates it "
            "makes, such as an optimizer step, happened)" if self.ran else
            "  ran: no: traced only, your tensors are as they were (Python side effects "
            "such as print ran while tracing)",
        ]
        for i, b in enumerate(self.breaks):
            lines.append(f"  break {i + 1}: {b.reason}")
            lines.append(f"      at {b.filename}:{b.lineno} in {b.function} (op {b.op})")
        for b in self.baked:
            lines.append(f"  baked (no break, value frozen): {b.reason}")
            lines.append(f"      at {b.filename}:{b.lineno} in {b.function} (op {b.op})")
        for r in self.retraces:
            lines.append(f"  {r}")
        lines += [f"  {line}" for line in backward_lines(self.backward_graphs,
                                                         self.backward_refusal)]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {
            "function": self.function, "graph_count": self.graph_count,
            "break_count": self.break_count, "breaks": [b.to_json() for b in self.breaks],
            "ops_per_graph": self.ops_per_graph, "retraces": [str(r) for r in self.retraces],
            "baked": [b.to_json() for b in self.baked], "ran": self.ran,
            "backward_graphs": [{"graph_id": g.name, "ops": len(g.op_nodes),
                                 "saved": _saved_count(g)} for g in self.backward_graphs],
            "backward_refusal": self.backward_refusal,
        }


def backward_lines(graphs: list, refusal: str | None) -> list[str]:
    """The report's lines on the backward graph(s) of a traced signature."""
    if refusal is not None:  # (a training step's loss, after its optimizer step)
        return [f"backward: none: backward() through its results raises, as it would "
                f"eagerly ({refusal.split(', so ')[0]})"]
    return [f"backward: {g.name}, {len(g.op_nodes)} ops, reads {_saved_count(g)} saved "
            f"value(s) of the forward" for g in graphs]


def _saved_count(graph) -> int:
    return sum(1 for i in graph.inputs if graph.node(i).label.startswith("saved"))


def explain(fn, *args, **kwargs) -> ExplainReport:
    """Trace ``fn(*args, **kwargs)`` under a fresh ``em.jit`` and report its graphs and breaks.

    ``fn`` may be a plain function or an ``em.jit`` one, whose ``passes`` and ``on_break``
    are kept (``em.explain(em.jit(f, on_break="bake"), x)`` shows what a plain tracer
    freezes). Without graph breaks nothing runs: a training step explained is not a step
    taken. At a graph break Python needs a real value, so the function runs from there, as
    under ``torch._dynamo.explain``: its updates happen once, and ``report.ran`` is True.
    Python side effects (print, appends to a list) happen while tracing either way.
    """
    base = fn.fn if isinstance(fn, JitFunction) else fn
    jitted = JitFunction(base, passes=getattr(fn, "passes", None),
                         on_break=getattr(fn, "on_break", "split"))
    forget(jitted)  # a throwaway: `execmode explain` lists the script's own
    cf = jitted.trace(*args, **kwargs).concrete
    graphs = cf.graphs
    joint = cf.joint
    return ExplainReport(
        function=jitted.name,
        graph_count=len(graphs),
        break_count=len(cf.breaks),
        breaks=list(cf.breaks),
        ops_per_graph=[len(g.op_nodes) for g in graphs],
        graphs=graphs,
        retraces=list(jitted.retraces),
        baked=list(cf.baked),
        ran=bool(cf.breaks),
        backward_graphs=[] if joint is None else [
            bg.segment.graph for bg in joint.graphs.values()],
        backward_refusal=None if joint is None else joint.refusal,
    )
