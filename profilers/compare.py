"""``em.compare(fn, *args, repeat=N)``: the same function eagerly and under jit, row by row.

Every compiled step (a fused kernel, a library matmul, a single op) is lined up with the
eager ops it replaced: the traced graph mirrors the eager run op for op, and each step
knows its member nodes. Ops that the passes removed (folded, merged, dead) get rows of
their own, with no graph time. Totals compare wall time per call (measured with no
listener attached, so instrumentation does not inflate them), op vs kernel counts, and
peak memory (measured eager peak vs the graph's memory plan).

Running the function ``repeat`` times in each mode repeats its side effects (a training
step trains): compare on a copy of the state if that matters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from execmode import instrument
from execmode.graph.ir import ASSIGN, FUSED, INPUT
from execmode.jit_driver.jit import JitFunction


@dataclass
class ComparisonRow:
    graph_id: str
    kernel: str            # step name ("k0", "matmul") or "(removed by passes)"
    step_kind: str         # fused | library | op | removed
    eager_ops: list        # op names, in order
    eager_ns: float        # per call, summed over those ops
    kernel_ns: float       # per call
    eager_bytes: int       # bytes the eager ops allocated
    planned_bytes: int     # bytes of the step's output buffer (0 when pooled and reused)
    nodes: list = field(default_factory=list)

    @property
    def speedup(self) -> float:
        return self.eager_ns / self.kernel_ns if self.kernel_ns else float("inf")

    def to_json(self) -> dict:
        return dict(self.__dict__, speedup=self.speedup)


@dataclass
class Comparison:
    function: str
    repeat: int
    rows: list[ComparisonRow]
    eager_wall_ns: float
    graph_wall_ns: float
    first_call_ns: float
    eager_op_count: int
    kernel_count: int
    eager_peak_bytes: int
    planned_peak_bytes: int
    unplanned_peak_bytes: int

    @property
    def speedup(self) -> float:
        return self.eager_wall_ns / self.graph_wall_ns if self.graph_wall_ns else float("inf")

    @property
    def totals(self) -> dict:
        return {
            "eager_ns": sum(r.eager_ns for r in self.rows),
            "kernel_ns": sum(r.kernel_ns for r in self.rows),
            "eager_bytes": sum(r.eager_bytes for r in self.rows),
            "planned_bytes": sum(r.planned_bytes for r in self.rows),
        }

    def table(self, limit: int | None = None) -> str:
        head = (f"{'graph':<18} {'kernel':<22} {'eager ops':<34} {'eager us':>9} "
                f"{'graph us':>9} {'speedup':>8} {'eager B':>10} {'planned B':>10}")
        lines = [f"em.compare {self.function} ({self.repeat} calls each)", head,
                 "-" * len(head)]
        for r in self.rows[:limit]:
            ops = " ".join(r.eager_ops)
            ops = ops if len(ops) <= 34 else ops[:31] + "..."
            speed = f"{r.speedup:7.2f}x" if r.kernel_ns else "removed"
            lines.append(f"{r.graph_id[-18:]:<18} {r.kernel[:22]:<22} {ops:<34} "
                         f"{r.eager_ns / 1e3:9.2f} {r.kernel_ns / 1e3:9.2f} {speed:>8} "
                         f"{r.eager_bytes:10d} {r.planned_bytes:10d}")
        t = self.totals
        lines.append("-" * len(head))
        lines.append(f"{'sum of rows':<75} {t['eager_ns'] / 1e3:9.2f} "
                     f"{t['kernel_ns'] / 1e3:9.2f}")
        lines.append(f"wall time per call: eager {self.eager_wall_ns / 1e3:.2f} us, graph "
                     f"{self.graph_wall_ns / 1e3:.2f} us ({self.speedup:.2f}x); first call "
                     f"(trace + compile) {self.first_call_ns / 1e6:.2f} ms")
        lines.append(f"ops: {self.eager_op_count} eager ops vs {self.kernel_count} kernels; "
                     f"peak memory: eager {self.eager_peak_bytes} B, graph planned "
                     f"{self.planned_peak_bytes} B (unplanned {self.unplanned_peak_bytes} B)")
        return "\n".join(lines)

    __str__ = table

    def to_json(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "rows"}
        out["rows"] = [r.to_json() for r in self.rows]
        out["speedup"] = self.speedup
        return out


class _OpTimes:
    def __init__(self):
        self.events = []

    def on_op(self, event, output):
        self.events.append((event.op, event.end_ns - event.start_ns, event.bytes_allocated))


class _KernelTimes:
    def __init__(self):
        self.steps = []

    def on_event(self, event):
        if event.kind == "kernel":
            d = event.data
            self.steps.append((d["graph_id"], d["step_index"], event.end_ns - event.start_ns))


def compare(fn, *args, repeat: int = 10, passes=None, **kwargs) -> Comparison:
    """Run ``fn(*args, **kwargs)`` eagerly and under jit ``repeat`` times each; line up
    every compiled step with the eager ops it replaced (see the module docstring)."""
    from execmode.profilers.memory import eager_peak

    repeat = max(int(repeat), 1)
    base = fn.fn if isinstance(fn, JitFunction) else fn
    name = getattr(base, "__qualname__", getattr(base, "__name__", "fn"))

    # Eager: per-op times from events (one op sequence per call), wall time without them.
    fn_call = lambda: base(*args, **kwargs)  # noqa: E731
    eager_peak_bytes = eager_peak(base, *args, **kwargs)
    ops = _OpTimes()
    with instrument.listening(ops):
        for _ in range(repeat):
            fn_call()
    per_call = len(ops.events) // repeat
    eager_ops = _average(ops.events, per_call, repeat)
    eager_wall = _wall(fn_call, repeat)

    # Graph: first call traces and compiles; then per-step times and wall time.
    jitted = JitFunction(base, passes=passes)
    t0 = time.perf_counter_ns()
    jitted(*args, **kwargs)
    first_call = time.perf_counter_ns() - t0
    kernels = _KernelTimes()
    with instrument.listening(kernels):
        for _ in range(repeat):
            jitted(*args, **kwargs)
    graph_wall = _wall(lambda: jitted(*args, **kwargs), repeat)

    cf = jitted.concrete_functions[-1]
    step_ns: dict = {}
    for graph_id, index, ns in kernels.steps:
        step_ns[(graph_id, index)] = step_ns.get((graph_id, index), 0) + ns / repeat
    rows, node_to_eager = [], _align(cf, eager_ops)
    planned = unplanned = kernel_count = 0
    for segment in cf.segments:
        compiled = segment.compiled
        plan, graph_id = compiled.plan, segment.graph.name
        used = set()
        for index, step in enumerate(plan.steps):
            members = step.member_ids
            matched = [node_to_eager[m] for m in members if m in node_to_eager]
            used.update(m for m in members if m in node_to_eager)
            rows.append(ComparisonRow(
                graph_id, step.name, step.kind, [e[0] for e in matched],
                sum(e[1] for e in matched), step_ns.get((graph_id, index), 0.0),
                sum(e[2] for e in matched),
                step.node.nbytes if step.buffer is None else 0, list(members)))
        for node_id, kind in _assigns_and_removed(segment.graph, compiled.lowered, used):
            if node_id in node_to_eager:
                e = node_to_eager[node_id]
                rows.append(ComparisonRow(graph_id, f"(%{node_id} {kind})", "removed",
                                          [e[0]], e[1], 0.0, e[2], 0, [node_id]))
        mem = compiled.record.memory if compiled.record is not None else None
        if mem is not None:
            planned += mem.planned_peak
            unplanned += mem.unplanned_peak
        kernel_count += len(plan.steps)
    result = Comparison(name, repeat, rows, eager_wall, graph_wall, first_call, per_call,
                        kernel_count, eager_peak_bytes, planned, unplanned)
    _store(result)
    return result


def _average(events, per_call, repeat):
    out = []
    for i in range(per_call):
        samples = [events[i + k * per_call] for k in range(repeat)]
        out.append((samples[0][0], sum(s[1] for s in samples) / repeat, samples[0][2]))
    return out


def _wall(call, repeat) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter_ns()
        for _ in range(repeat):
            call()
        best = min(best, (time.perf_counter_ns() - t0) / repeat)
    return best


def _align(cf, eager_ops) -> dict:
    """Traced node id -> (op, eager ns, eager bytes), pairing nodes and eager ops in order.
    The trace mirrors the eager run; the few nodes the tracer adds on its own (a full to
    broadcast an assigned scalar) are skipped by matching op names."""
    nodes = [n for seg in cf.segments for n in seg.graph.nodes if n.op != INPUT]
    out, j = {}, 0
    for n in nodes:
        k = j
        while k < len(eager_ops) and eager_ops[k][0] != n.op and k - j < 4:
            k += 1
        if k < len(eager_ops) and eager_ops[k][0] == n.op:
            out[n.id] = eager_ops[k]
            j = k + 1
    return out


def _assigns_and_removed(traced, lowered, used):
    lowered_ids = {n.id for n in lowered.nodes}
    for n in lowered.nodes:
        if n.op == FUSED:
            lowered_ids.update(m.id for m in n.body)
    for n in traced.nodes:
        if n.op == INPUT or n.id in used:
            continue
        if n.op == ASSIGN:
            yield n.id, "assign"
        elif n.id not in lowered_ids:
            yield n.id, "removed by passes"


def _store(result: Comparison) -> None:
    for listener in instrument.listeners():
        record = getattr(listener, "record_comparison", None)
        if record is None:
            continue
        for r in result.rows:
            record(function=result.function, graph_id=r.graph_id, kernel=r.kernel,
                   step_kind=r.step_kind, eager_ops=r.eager_ops, eager_ns=int(r.eager_ns),
                   kernel_ns=int(r.kernel_ns), eager_bytes=r.eager_bytes,
                   planned_bytes=r.planned_bytes, repeat=result.repeat)
