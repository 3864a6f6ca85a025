"""The stages of ``em.jit``, as JAX names them: ``f.trace(*args)`` -> :class:`Traced`
(the graph as traced), ``.lower()`` -> :class:`Lowered` (the optimized graph and what each
pass did), ``.compile()`` -> :class:`Compiled` (the executable plan).
"""

from __future__ import annotations

from ..graph.ir import Graph
from ..graph.segments import GraphBreak
from .compiled_segment import compile_graph, lower_graph
from .concrete import ConcreteFunction


class Traced:
    """The result of ``f.trace(*args)``: the graph(s) as traced."""

    def __init__(self, jitted, cf: ConcreteFunction):
        self.jitted = jitted  # the JitFunction traced (jit.py, which imports this module)
        self.concrete = cf

    @property
    def graph(self) -> Graph:
        return self.concrete.segments[-1].graph if len(self.concrete.segments) == 1 \
            else self.concrete.segments[0].graph

    @property
    def graphs(self) -> list[Graph]:
        return self.concrete.graphs

    @property
    def breaks(self) -> list[GraphBreak]:
        return self.concrete.breaks

    def lower(self, passes=None) -> Lowered:
        passes = self.jitted.passes if passes is None else passes
        results = [lower_graph(g, passes) for g in self.graphs]
        return Lowered(self, [r[0] for r in results], [r[1] for r in results])

    def __str__(self) -> str:
        return "\n\n".join(str(g) for g in self.graphs)


class Lowered:
    """The optimized graph(s) and the per-pass record of each."""

    def __init__(self, traced: Traced, graphs: list[Graph], records: list):
        self.traced = traced
        self.graphs = graphs
        self.records = records

    @property
    def graph(self) -> Graph:
        """The first segment's optimized graph (the only one without graph breaks)."""
        return self.graphs[0]

    @property
    def record(self):
        """The first segment's pass record: each pass's rewrites, time and counts."""
        return self.records[0]

    def compile(self) -> Compiled:
        """Generate and compile the kernels: the executable plan(s)."""
        plans = [compile_graph(g, g.name, self.traced.jitted.backend) for g in self.graphs]
        return Compiled(self, plans)

    def __str__(self) -> str:
        return "\n\n".join(str(r) for r in self.records)


class Compiled:
    """The executable plan(s). Calling it runs the jitted function normally."""

    def __init__(self, lowered: Lowered, plans: list):
        self.lowered = lowered
        self.plans = plans

    @property
    def plan(self):
        return self.plans[0]

    def __call__(self, *args, **kwargs):
        return self.lowered.traced.jitted(*args, **kwargs)

    def __str__(self) -> str:
        return "\n".join(step.describe() for plan in self.plans for step in plan.steps)
