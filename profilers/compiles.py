"""Compile events as readers show them: one compile per translation unit, its kernels as
children, its time counted once.

Sessions of schema 2 and before hold one "compile" event per kernel, each carrying its
whole library's compile_ns (a 133 ms compile of three kernels summed to 399 ms).
:func:`compiles` reads both forms and gives the new one: consecutive per-kernel events of
one graph with the same compile_ns and cache answer are one build, its kernels children.
"""

from __future__ import annotations

from typing import NamedTuple


class CompiledKernel(NamedTuple):
    kernel: str
    source: str
    member_nodes: list
    member_ops: list


class Compile(NamedTuple):
    graph_id: str
    what: str            # "kernels" (a plan's fused kernels) or "program" (a whole graph)
    language: str
    backend: str
    compile_ns: int      # the compiler's time (or the cache lookup's), once
    cache_hit: bool | None
    start_ns: int
    end_ns: int
    kernels: list        # CompiledKernel, in the translation unit's order


def compiles(events) -> list[Compile]:
    """``events``: (start_ns, end_ns, data) of the session's compile events, in order."""
    out: list[Compile] = []
    previous = None  # (graph id, compile_ns, cache hit) of the last per-kernel event
    for start, end, d in events:
        if not isinstance(d, dict):
            continue
        if isinstance(d.get("kernels"), list):
            previous = None
            out.append(Compile(
                str(d.get("graph_id") or ""), str(d.get("what") or "kernels"),
                str(d.get("language") or ""), str(d.get("backend") or ""),
                _int(d.get("compile_ns")), _bool(d.get("cache_hit")), start, end,
                [_child(k) for k in d["kernels"] if isinstance(k, dict)]))
            continue
        # A per-kernel event: each was stamped when it was emitted, so the events of one
        # build differ in time; they share the graph, the build's time and its cache answer.
        key = (str(d.get("graph_id") or ""), _int(d.get("compile_ns")), _bool(d.get("cache_hit")))
        if key != previous:
            out.append(Compile(key[0], "kernels", str(d.get("language") or ""),
                               str(d.get("backend") or ""), key[1], key[2], start, end, []))
            previous = key
        out[-1].kernels.append(_child(d))
    return out


def wall_ns(builds: list[Compile]) -> int:
    """The time during which at least one compile ran: translation units compiled in
    parallel (codegen/units.py) overlap, and their summed times would overstate the wait."""
    total, end = 0, None
    for b in sorted(builds, key=lambda b: b.start_ns):
        if end is None or b.start_ns >= end:
            total += b.end_ns - b.start_ns
            end = b.end_ns
        elif b.end_ns > end:
            total += b.end_ns - end
            end = b.end_ns
    return total


def _child(d: dict) -> CompiledKernel:
    return CompiledKernel(str(d.get("kernel") or ""), str(d.get("source") or ""),
                          _list(d.get("member_nodes")), _list(d.get("member_ops")))


def _int(value) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _bool(value) -> bool | None:
    return value if isinstance(value, bool) else None


def _list(value) -> list:
    return list(value) if isinstance(value, list) else []
