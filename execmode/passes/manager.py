"""The pass manager: runs the pipeline, verifies the graph after every pass, and keeps the
per-pass record.

Passes are functions ``graph -> (graph, rewrites, merged, fused)``; ``merged`` maps removed
node ids to the node that now stands for them, ``fused`` maps member ids to their fused
node. Choose passes with ``em.jit(fn, passes=[...])`` by name or short name.

Whatever the choice, outputs that the passes merged are separated again before memory
planning (passes/outputs.py): it is part of what every choice must give, eager's results,
so it runs on its own, and shows in the record only when it copied something.
"""

from __future__ import annotations

import time

from ..errors import ArgumentError
from ..graph.verify import VERIFIED, verify
from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .effects import check_effects_kept
from .fold import fold_constants
from .fuse import fuse
from .memplan import plan_memory
from .outputs import NAME as OUTPUTS_PASS
from .outputs import separate_merged_outputs
from .record import PassRecord, PassResult, count_kernels, count_values, diff_graphs
from .simplify import simplify

PIPELINE = [
    ("fold_constants", fold_constants),
    ("simplify", simplify),
    ("eliminate_common_subexpressions", eliminate_common_subexpressions),
    ("eliminate_dead_code", eliminate_dead_code),
    ("fuse", fuse),
    ("plan_memory", plan_memory),
]
SHORT_NAMES = {
    "fold": "fold_constants", "simplify": "simplify",
    "cse": "eliminate_common_subexpressions", "dce": "eliminate_dead_code",
    "fuse": "fuse", "fusion": "fuse", "memplan": "plan_memory", "memory": "plan_memory",
}
ALL = tuple(name for name, _ in PIPELINE)


def resolve_passes(passes) -> list:
    """``None`` -> the whole pipeline; else the named passes, in pipeline order, with any
    ``(name, fn)`` pairs (custom passes with the built-in passes' signature) before
    plan_memory."""
    if passes is None:
        return list(PIPELINE)
    if isinstance(passes, str):
        passes = [passes]
    wanted = set()
    custom = []
    for p in passes:
        if isinstance(p, tuple) and len(p) == 2 and callable(p[1]):
            custom.append(p)  # (name, fn): a user's own pass, run after the built-in ones
            continue
        name = SHORT_NAMES.get(p, p)
        if name not in ALL:
            raise ArgumentError(
                f"unknown pass {p!r}; passes are {', '.join(ALL)} "
                f"(short names: {', '.join(SHORT_NAMES)})"
            )
        wanted.add(name)
    chosen = [(name, fn) for name, fn in PIPELINE if name in wanted]
    # Custom passes run before memory planning: a plan made for another graph is wrong.
    if chosen and chosen[-1][0] == "plan_memory":
        return chosen[:-1] + custom + chosen[-1:]
    return chosen + custom


def run_passes(graph, passes=None):
    """Run the pipeline on ``graph``; returns (optimized graph, PassRecord)."""
    record = PassRecord(graph)
    # node -> operand nodes verified (graph/verify.py): the tracer's, then the passes'.
    checked: dict = graph.meta.get(VERIFIED)
    if checked is None:
        checked = {}
    current = graph
    chosen = resolve_passes(passes)
    for name, fn in chosen:
        if name == "plan_memory":
            current = _separate_outputs(graph, current, record, checked)
        current = _run_pass(name, fn, current, record, checked)
    if not chosen or chosen[-1][0] != "plan_memory":
        current = _separate_outputs(graph, current, record, checked)
    return current, record


def _run_pass(name, fn, current, record, checked):
    t0 = time.perf_counter_ns()
    new, rewrites, merged, fused = fn(current)
    _append(record, name, current, new, rewrites, merged, fused, t0, checked)
    return new


def _separate_outputs(traced, current, record, checked):
    t0 = time.perf_counter_ns()
    new, rewrites = separate_merged_outputs(traced, current)
    if rewrites:  # else no entry in the record: nothing was merged
        _append(record, OUTPUTS_PASS, current, new, rewrites, {}, {}, t0, checked)
    return new


def _append(record, name, before, after, rewrites, merged, fused, start_ns, checked):
    wall_ns = time.perf_counter_ns() - start_ns  # verification is not the pass's time
    verify(after, name, checked)
    check_effects_kept(before, after, name)
    mem = after.meta.get("memory_plan")
    record.results.append(PassResult(
        name=name, graph=after, rewrites=rewrites, wall_ns=wall_ns,
        diff=diff_graphs(before, after, merged, fused),
        node_count=len(after.op_nodes), kernel_count=count_kernels(after),
        buffer_count=len(mem.buffers) if mem is not None else count_values(after),
        start_ns=start_ns,
    ))
