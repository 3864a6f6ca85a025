"""A traced segment lowered through the passes and compiled into a plan.

``lower_graph`` runs the pass pipeline, ``compile_graph`` turns the lowered graph into a
plan of compiled kernels (a whole-graph C program where the plan qualifies), and
``compile_segment`` does both, timed, and tells listeners what it made (the graph, each
pass, the memory plan). A jitted function caches the result by structural hash, so a
segment met again (a function with breaks re-runs its Python) compiles once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .. import instrument
from ..graph.ir import ASSIGN, INPUT, Graph
from ..ops import OPS


@dataclass
class CompiledSegment:
    """A segment lowered through the passes and turned into a plan; shared by every
    structurally equal segment."""

    graph: Graph          # as traced (the first time)
    lowered: Graph
    record: object        # the per-pass record
    plan: object
    structural_hash: str
    compile_ns: int


def lower_graph(graph: Graph, passes=None):
    from ..passes.manager import run_passes

    return run_passes(graph, passes)


def _start_early() -> None:
    """The toolchain probe and (where replays may use it) the C fast entry's extension,
    built on background threads when a second compiler slot exists (compiler_slots.py)."""
    from ..codegen import fast_entry, threads, toolchain
    from .fastcall import native_replay_allowed

    if threads.num_threads() < 2:  # the compiler slots' count (compiler_slots.py)
        return
    toolchain.start_probe()
    if native_replay_allowed():
        fast_entry.start_build()


def compile_graph(lowered: Graph, graph_id: str, backend=None):
    from ..codegen import kernel_factory_for
    from ..codegen.program import draft_or_reason, program_or_reason
    from ..plan import build_plan

    drafts = []

    def program_unit(c_kernels) -> list:
        # The program's C is known once the kernels are lowered: its unit compiles with
        # theirs (a cold first call waits for one pool, not for the pool and then it).
        drafts.append(draft_or_reason(lowered, graph_id, c_kernels))
        return [drafts[-1].unit] if drafts[-1].unit is not None else []

    wants_program = backend in (None, "c") and _program_may_run(lowered)
    factory = kernel_factory_for(lowered, graph_id, backend,
                                 program_unit if wants_program else None)
    plan = build_plan(lowered, graph_id, factory)
    if plan.collectives:
        plan.program_reason = (f"{', '.join(plan.collectives)}: collectives run from Python "
                               "(MPI) once per call, so the plan runs step by step on the "
                               "general replay (no C program, no generated replay)")
    elif backend in (None, "c") and len(plan.steps) > 1:
        # Graphs of many small steps (matpow) and training steps run as one C function
        # when nobody listens; it calls the kernels the plan compiled.
        plan.program, plan.program_reason = program_or_reason(
            lowered, graph_id, getattr(factory, "kernels", None), plan.clock,
            drafts[0] if drafts else None)
    return plan


def _program_may_run(lowered: Graph) -> bool:
    """What compile_graph asks of the plan before it builds a program, asked of the graph
    before the plan exists: more than one step (a node other than inputs and assigns),
    and no collective."""
    steps = [n for n in lowered.nodes if n.op not in (INPUT, ASSIGN)]
    return len(steps) > 1 and not any(
        n.op in OPS and OPS[n.op].collective for n in steps)


def compile_segment(function: str, graph: Graph, structural_hash: str, passes,
                    backend) -> CompiledSegment:
    """Lower and compile ``graph`` (a segment of the jitted ``function``), timed."""
    t0 = time.perf_counter_ns()
    if backend in (None, "auto", "c") and any(str(n.device) == "cpu" for n in graph.nodes):
        # What C kernels need whatever the graph holds (the compiler's flags, and the C
        # fast entry where the replay may use it) starts compiling now, beside the passes
        # and the graph's own kernels, on spare compiler slots.
        _start_early()
    lowered, record = lower_graph(graph, passes)
    plan = compile_graph(lowered, graph.name, backend)
    plan.source_graph, plan.record = graph, record
    compiled = CompiledSegment(graph, lowered, record, plan, structural_hash,
                               time.perf_counter_ns() - t0)
    if instrument._on_event:
        emit_compiled(function, graph, compiled, t0)
    return compiled


def emit_compiled(function: str, graph: Graph, compiled: CompiledSegment, t0: int) -> None:
    """Tell listeners what a compile produced: the graph, each pass, the memory plan.

    Building them (the IR as text and JSON, before and after every pass) is work done
    only for listeners: the graph event says how long it took (``emit_ns``), so a
    recorder can state it as its own cost."""
    from ..graph.ir import format_graph

    end = built = time.perf_counter_ns()
    events = [instrument.Event("graph", {
        "function": function, "graph_id": graph.name, "ir_text": format_graph(graph),
        "ir_json": graph.to_json(), "lowered_text": format_graph(compiled.lowered),
        "lowered_json": compiled.lowered.to_json(), "structural_hash": compiled.structural_hash,
        "compile_ns": compiled.compile_ns, "steps": [
            {"name": s.name, "kind": s.kind, "backend": s.backend, "members": list(s.member_ids),
             "ops": list(s.member_ops), "buffer": s.buffer} for s in compiled.plan.steps],
    }, t0, end)]
    record = compiled.record
    if record is not None:
        for index, result in enumerate(record.results):
            data = result.to_json(index)
            data["graph_id"] = graph.name
            start = result.start_ns or t0
            events.append(instrument.Event("pass", data, start, start + result.wall_ns))
        mem = record.memory
        if mem is not None:
            events.append(instrument.Event("memory_plan", dict(
                mem.to_json(), graph_id=graph.name, buffers=len(mem.buffers)), t0, end))
    events[0].data["emit_ns"] = time.perf_counter_ns() - built
    for event in events:
        instrument.emit(event)
