"""``em.compare(fn, *args)``: the same function eagerly and under jit, row by row.

Every compiled step (a fused kernel, a library matmul, a single op) is lined up with the
eager ops it replaced: the traced graph mirrors the eager run op for op, and each step
knows its member nodes. Ops that the passes removed (folded, merged, dead) get rows of
their own, with no graph time.

Everything is measured with the one protocol (:mod:`execmode.profilers.measure`), in one
set of interleaved rounds of four candidates: the eager function and the jitted one as
they run for a user (the wall line), and each again with its timer attached (the rows):
the eager ops through an op listener, the kernels through the kernel clock
(execmode/kernel_clock.py), which a compiled program keeps in C. Every number is a median
over the rounds with its spread; a ratio is printed only when the spreads separate,
else *undecided* and why. The rows and the time they do not cover ("outside the rows":
eager, the Python and dispatch between ops and the op timer; graph, the call's checks,
copies and write-backs) come from the same rounds and add up to those rounds' wall time,
printed beside the plain wall line. Each call builds a fresh jitted function, so nothing
from an earlier call can go stale.

Running the function in each mode repeats its side effects (a training step trains):
compare on a copy of the state if that matters.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

from execmode.profilers import measure
from execmode.profilers.measure import Spread, Verdict

from execmode import instrument
from execmode.graph.ir import ASSIGN, FUSED, INPUT
from execmode.jit_driver.cache_policy import JitWarning
from execmode.jit_driver.jit import JitFunction


@dataclass
class ComparisonRow:
    graph_id: str
    kernel: str            # step name ("k0", "matmul") or "(%7 removed by passes)"
    step_kind: str         # fused | library | op | removed
    eager_ops: list        # op names, in order
    eager: Spread | None   # per call, summed over those ops, one sample per round
    graph: Spread | None   # per call of this step (None: removed)
    eager_bytes: int       # bytes the eager ops allocated (views: none)
    planned_bytes: int     # bytes of the step's output buffer (0 when pooled and reused)
    nodes: list = field(default_factory=list)

    @property
    def eager_ns(self) -> float:
        return self.eager.median if self.eager is not None else 0.0

    @property
    def kernel_ns(self) -> float:
        return self.graph.median if self.graph is not None else 0.0

    @property
    def verdict(self) -> Verdict | None:
        """eager over graph for this row (None for a removed op: nothing to compare)."""
        if self.eager is None or self.graph is None:
            return None
        return measure.decide(self.eager, self.graph, a_name="eager", b_name="the kernel")

    def verdict_cell(self) -> str:
        verdict = self.verdict
        if verdict is not None:
            return verdict.cell()
        # No graph time: an op the passes removed, or a step a whole-graph program never
        # runs per call (a view read through strides, a constant made at compile time).
        return "removed" if self.step_kind == "removed" else "not run per call"

    def to_json(self) -> dict:
        verdict = self.verdict
        return {"graph_id": self.graph_id, "kernel": self.kernel, "step_kind": self.step_kind,
                "eager_ops": self.eager_ops, "eager_ns": self.eager_ns,
                "kernel_ns": self.kernel_ns, "eager_bytes": self.eager_bytes,
                "planned_bytes": self.planned_bytes, "nodes": self.nodes,
                "eager": self.eager.to_json() if self.eager else None,
                "graph": self.graph.to_json() if self.graph else None,
                "speedup": verdict.ratio if verdict else None,
                "verdict": str(verdict) if verdict else "removed",
                "cell": self.verdict_cell()}


@dataclass
class Comparison:
    function: str
    rows: list[ComparisonRow]
    eager_wall: Spread | None      # per call, as a user runs it (nothing attached)
    graph_wall: Spread | None
    eager_timed: Spread | None     # per call with the op timer attached (the rows' rounds)
    graph_timed: Spread | None     # per call with the kernel clock running
    first_call_ns: float           # trace + passes + the C compiler (or the disk cache)
    first_call_compiled: str       # what the first call compiled, in words
    eager_op_count: int
    kernel_count: int
    eager_peak_bytes: int
    planned_peak_bytes: int
    unplanned_peak_bytes: int
    context: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)   # one line each: what could not be timed

    @property
    def rounds(self) -> int:
        return self.eager_wall.rounds if self.eager_wall else 0

    @property
    def calls_per_round(self) -> int:
        return self.eager_wall.calls if self.eager_wall else 0

    @property
    def eager_wall_ns(self) -> float:
        return self.eager_wall.median if self.eager_wall else 0.0

    @property
    def graph_wall_ns(self) -> float:
        return self.graph_wall.median if self.graph_wall else 0.0

    @property
    def verdict(self) -> Verdict:
        """Eager wall time over graph wall time, or undecided with the reason."""
        if self.eager_wall is None or self.graph_wall is None:
            return Verdict(None, "; ".join(self.problems) or "nothing was timed", "failed")
        return measure.decide(self.eager_wall, self.graph_wall, a_name="eager",
                              b_name="graph")

    @property
    def speedup(self) -> float | None:
        return self.verdict.ratio

    @property
    def totals(self) -> dict:
        return {
            "eager_ns": sum(r.eager_ns for r in self.rows),
            "kernel_ns": sum(r.kernel_ns for r in self.rows),
            "eager_bytes": sum(r.eager_bytes for r in self.rows),
            "planned_bytes": sum(r.planned_bytes for r in self.rows),
        }

    def outside_rows(self) -> tuple[Spread | None, Spread | None]:
        """(eager, graph) per call: the time of the rows' own rounds that the rows do not
        cover, round by round."""
        eager = [r.eager for r in self.rows if r.eager is not None]  # removed ones ran too
        graph = [r.graph for r in self.rows if r.graph is not None]
        return _uncovered(self.eager_timed, eager), _uncovered(self.graph_timed, graph)

    def table(self, limit: int | None = None) -> str:
        if self.eager_wall is None and self.graph_wall is None:  # nothing could be timed
            lines = [f"em.compare {self.function}: not measured"]
            lines += [f"note: {problem}" for problem in self.problems]
            if self.context:
                lines.append(f"measured on: {measure.context_line(self.context)}")
            return "\n".join(lines)
        head = (f"{'graph':<16} {'kernel':<18} {'eager ops':<30} {'eager us':>9} "
                f"{'graph us':>9} {'eager/graph':>27} {'eager B':>9} {'planned B':>9}")
        lines = [f"em.compare {self.function}: medians of {self.rounds} interleaved rounds "
                 f"of {self.calls_per_round} calls each", head, "-" * len(head)]
        for r in self.rows[:limit]:
            ops = " ".join(r.eager_ops)
            ops = ops if len(ops) <= 30 else ops[:27] + "..."
            graph = f"{r.kernel_ns / 1e3:9.2f}" if r.graph is not None else f"{'-':>9}"
            lines.append(f"{r.graph_id[-16:]:<16} {r.kernel[:18]:<18} {ops:<30} "
                         f"{r.eager_ns / 1e3:9.2f} {graph} {r.verdict_cell()[:27]:>27} "
                         f"{r.eager_bytes:9d} {r.planned_bytes:9d}")
        if limit is not None and len(self.rows) > limit:
            lines.append(f"... {len(self.rows) - limit} more rows")
        t = self.totals
        lines.append("-" * len(head))
        lines.append(f"{'sum of rows':<66} {t['eager_ns'] / 1e3:9.2f} {t['kernel_ns'] / 1e3:9.2f}")
        eager_out, graph_out = (s.median if s is not None else 0.0 for s in self.outside_rows())
        lines.append(f"{'outside the rows':<66} {eager_out / 1e3:9.2f} {graph_out / 1e3:9.2f}")
        lines.append("  (eager: Python and dispatch between its ops, and the op timer; graph: "
                     "the jitted call's checks, copies and write-backs)")
        if self.eager_timed is not None and self.graph_timed is not None:
            lines.append(f"the rows' rounds, timers attached: eager {self.eager_timed.text()}, "
                         f"graph {self.graph_timed.text()}")
        lines.append(self.wall_line())
        lines.append(f"first call (trace, passes, {self.first_call_compiled}): "
                     f"{self.first_call_ns / 1e6:.2f} ms")
        lines.append(f"ops: {self.eager_op_count} eager ops vs {self.kernel_count} kernels; "
                     f"peak memory: eager {self.eager_peak_bytes} B, graph planned "
                     f"{self.planned_peak_bytes} B (unplanned {self.unplanned_peak_bytes} B)")
        for problem in self.problems:
            lines.append(f"note: {problem}")
        if self.context:
            lines.append(f"measured on: {measure.context_line(self.context)}")
        return "\n".join(lines)

    def wall_line(self) -> str:
        if self.eager_wall is None or self.graph_wall is None:
            return f"wall time per call: not measured ({self.verdict.reason})"
        verdict = self.verdict
        if not verdict.decided:
            how = f"undecided: {verdict.reason}"
        elif verdict.ratio >= 1:
            how = f"graph {verdict.ratio:.2f}x as fast as eager"
        else:
            how = f"graph {1 / verdict.ratio:.2f}x slower than eager"
        return (f"wall time per call, nothing attached: eager {self.eager_wall.text()}, graph "
                f"{self.graph_wall.text()}: {how}")

    __str__ = table

    def to_json(self) -> dict:
        verdict = self.verdict
        return {
            "function": self.function, "rounds": self.rounds,
            "calls_per_round": self.calls_per_round,
            "rows": [r.to_json() for r in self.rows],
            "eager_wall": self.eager_wall.to_json() if self.eager_wall else None,
            "graph_wall": self.graph_wall.to_json() if self.graph_wall else None,
            "eager_wall_ns": self.eager_wall_ns, "graph_wall_ns": self.graph_wall_ns,
            "speedup": verdict.ratio, "verdict": str(verdict),
            "first_call_ns": self.first_call_ns,
            "first_call_compiled": self.first_call_compiled,
            "eager_op_count": self.eager_op_count, "kernel_count": self.kernel_count,
            "eager_peak_bytes": self.eager_peak_bytes,
            "planned_peak_bytes": self.planned_peak_bytes,
            "unplanned_peak_bytes": self.unplanned_peak_bytes,
            "context": self.context, "problems": self.problems,
        }


class _OpTimer:
    """Each eager op's time, in order, for the round being run."""

    def __init__(self):
        self.events: list = []

    def on_op(self, event, output):
        self.events.append((event.op, event.end_ns - event.start_ns, event.bytes_allocated))


class _KernelTimer:
    """Asks for the kernel clock while attached (compiled programs time their steps)."""

    wants_kernel_times = True


def compare(fn, *args, rounds: int = measure.DEFAULT_ROUNDS, repeat: int | None = None,
            passes=None, **kwargs) -> Comparison:
    """Run ``fn(*args, **kwargs)`` eagerly and under jit over ``rounds`` interleaved
    rounds (``repeat`` calls each, default: sized to ~10 ms a round) and line up every
    compiled step with the eager ops it replaced (see the module docstring)."""
    from execmode.profilers.memory import eager_peak

    base = fn.fn if isinstance(fn, JitFunction) else fn
    name = getattr(base, "__qualname__", getattr(base, "__name__", "fn"))
    call_eager = lambda: base(*args, **kwargs)  # noqa: E731
    problems: list[str] = []
    context = measure.context()

    try:
        result = call_eager()
    except Exception as exc:  # the function itself fails: say so, time nothing
        problems.append(f"{name} raised {_error_line(exc)} when called eagerly; nothing "
                        "was timed")
        return _empty(name, problems, context)
    if not _has_tensors(result):
        problems.append(f"{name} returns {type(result).__name__}, not tensors: both modes "
                        "were timed as called")
    eager_peak_bytes = eager_peak(base, *args, **kwargs)

    jitted = JitFunction(base, passes=passes)
    t0 = time.perf_counter_ns()
    try:  # nothing attached: a listener would make the jit build events it then times
        jitted(*args, **kwargs)
    except Exception as exc:
        problems.append(f"em.jit({name}) raised {_error_line(exc)}; only eager was timed")
        eager = measure.measure({"eager": call_eager}, rounds=rounds, calls=repeat)["eager"]
        out = _empty(name, problems, context)
        out.eager_wall, out.eager_op_count = eager, 0
        return out
    first_call = time.perf_counter_ns() - t0
    call_graph = lambda: jitted(*args, **kwargs)  # noqa: E731
    traces_before = len(jitted.concrete_functions)

    op_timer, kernel_timer = _OpTimer(), _KernelTimer()
    attach = {"eager": None, "graph": None, "eager ops": op_timer, "graph kernels": kernel_timer}
    per_round: dict = {"eager ops": [], "graph kernels": []}
    baseline: dict = {}

    def before_round(candidate):  # also before each candidate's warm-up
        for listener in (op_timer, kernel_timer):
            instrument.remove_listener(listener)
        if attach[candidate] is not None:
            instrument.add_listener(attach[candidate])
        op_timer.events = []
        baseline.clear()
        baseline.update(_clock_sums(jitted))

    def after_round(candidate, index, calls):
        listener = attach[candidate]
        if listener is None:
            return
        instrument.remove_listener(listener)
        if candidate == "eager ops":
            per_round["eager ops"].append((list(op_timer.events), calls))
        else:
            per_round["graph kernels"].append((_clock_deltas(jitted, baseline), calls))

    candidates = {"eager": call_eager, "graph": call_graph, "eager ops": call_eager,
                  "graph kernels": call_graph}
    try:
        # The jit's own advice ("slower than eager: call it without em.jit") is for
        # programs; here it becomes a note of the comparison.
        with warnings.catch_warnings(record=True) as advice:
            warnings.simplefilter("always", JitWarning)
            spreads = measure.measure(candidates, rounds=rounds, calls=repeat,
                                      before_round=before_round, after_round=after_round)
    finally:
        for listener in (op_timer, kernel_timer):
            instrument.remove_listener(listener)
    for warning in advice[:1]:
        problems.append(f"em.jit says: {warning.message}")
    retraced = len(jitted.concrete_functions) - traces_before
    if retraced:
        problems.append(f"em.jit({name}) traced again {retraced} times while being timed "
                        f"({_retrace_reason(jitted)}): its graph times include tracing and "
                        "compiling, and its rows are the last trace's")

    cf = jitted.concrete_functions[-1]
    if cf.breaks:
        first = cf.breaks[0]
        problems.append(f"em.jit({name}) breaks its graph {len(cf.breaks)} time(s) per call "
                        f"(first: {first.reason} at {_where(first)}): the graph's time "
                        "includes the Python between its segments")
    # The rows' rounds are the timed candidates' rounds: a busy machine during them makes
    # a row as undecided as the wall line.
    eager_rows, per_call = _eager_op_spreads(per_round["eager ops"], problems, name,
                                             spreads["eager ops"])
    step_spreads = _step_spreads(per_round["graph kernels"], spreads["graph kernels"])
    rows, planned, unplanned, kernel_count = _rows(cf, eager_rows, step_spreads)
    result = Comparison(
        name, rows, spreads["eager"], spreads["graph"], spreads["eager ops"],
        spreads["graph kernels"], first_call, _compiled_words(jitted), per_call,
        kernel_count, eager_peak_bytes, planned, unplanned, context, problems)
    _store(result)
    return result


def _uncovered(timed: Spread | None, rows: list) -> Spread | None:
    if timed is None:
        return None
    samples = list(timed.samples)
    for row in rows:
        for r, value in enumerate(row.samples[:len(samples)]):
            samples[r] -= value
    return Spread.of(samples, timed.calls)


def _empty(name, problems, context) -> Comparison:
    return Comparison(name, [], None, None, None, None, 0.0, "nothing compiled", 0, 0, 0,
                      0, 0, context, problems)


def _error_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _has_tensors(value) -> bool:
    from execmode._tensor import Tensor
    from execmode.graph import pytree

    leaves, _ = pytree.flatten(value)
    return any(isinstance(leaf, Tensor) for leaf in leaves)


def _where(graph_break) -> str:
    import os

    return f"{os.path.basename(graph_break.filename)}:{graph_break.lineno}"


def _retrace_reason(jitted) -> str:
    retraces = jitted.retraces
    return retraces[-1].reason if retraces else "a new signature at every call"


def _compiled_words(jitted) -> str:
    """What the first call compiled: the libraries of every plan (its kernels' and its
    whole-graph program's), built by the C compiler or found in the disk cache."""
    libraries = {}
    for cf in jitted.concrete_functions:
        for segment in cf.segments:
            plan = segment.compiled.plan if segment.compiled is not None else None
            if plan is None:
                continue
            for step in plan.steps:
                library = getattr(step.fn, "library", None)
                if library is not None:
                    libraries[library.path] = library
            program_library = getattr(plan.program, "library", None)
            if program_library is not None:
                libraries[program_library.path] = program_library
    if not libraries:
        return "no C kernels"
    built = [lib for lib in libraries.values() if not lib.cache_hit]
    if not built:
        return f"{len(libraries)} kernel libraries from the disk cache"
    compile_ns = sum(lib.compile_ns for lib in built)
    return (f"the C compiler: {len(built)} of {len(libraries)} libraries built in "
            f"{compile_ns / 1e6:.0f} ms")


# --- rows ---------------------------------------------------------------------------------

def _eager_op_spreads(rounds: list, problems: list, name: str, timed: Spread):
    """(per op position: (op, Spread of its ns per call, bytes), ops per call); each
    Spread carries how busy the machine was in ``timed``'s rounds."""
    if not rounds:
        return [], 0
    counts = {len(events) // calls for events, calls in rounds if calls}
    per_call = min(counts) if counts else 0
    if len(counts) != 1 or any(len(events) != per_call * calls for events, calls in rounds):
        problems.append(f"{name} ran a different number of eager ops from call to call: "
                        "rows follow the first call's ops")
    out = []
    for position in range(per_call):
        samples = []
        for events, calls in rounds:
            picked = [events[position + k * per_call] for k in range(calls)
                      if position + k * per_call < len(events)]
            samples.append(sum(e[1] for e in picked) / max(len(picked), 1))
        first = rounds[0][0][position]
        out.append((first[0], Spread.of(samples, rounds[0][1], timed.runnable, timed.waited),
                    first[2]))
    return out, per_call


def _clock_sums(jitted) -> dict:
    """(clock number, step index) -> (calls, ns) of every plan of the latest trace, for
    round deltas (a retrace between rounds brings plans the baseline has not seen: 0)."""
    sums = {}
    for segment in _segments(jitted):
        clock = segment.compiled.plan.clock
        for i in range(clock.n_steps):
            sums[(clock.number, i)] = clock.step_totals(i)[:2]
    return sums


def _clock_deltas(jitted, baseline: dict) -> dict:
    """(graph id, step index) -> ns per call of that step over the round just run."""
    out = {}
    for segment in _segments(jitted):
        clock = segment.compiled.plan.clock
        for i in range(clock.n_steps):
            calls, ns = clock.step_totals(i)[:2]
            before_calls, before_ns = baseline.get((clock.number, i), (0, 0))
            if calls > before_calls:
                out[(segment.graph.name, i)] = (ns - before_ns) / (calls - before_calls)
    return out


def _segments(jitted) -> list:
    if not jitted.concrete_functions:
        return []
    return [s for s in jitted.concrete_functions[-1].segments if s.compiled is not None]


def _step_spreads(rounds: list, timed: Spread) -> dict:
    keys = {key for deltas, _ in rounds for key in deltas}
    return {key: Spread.of([deltas.get(key, 0.0) for deltas, _ in rounds], rounds[0][1],
                           timed.runnable, timed.waited)
            for key in keys}


def _rows(cf, eager_ops: list, step_spreads: dict):
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
                _sum_spreads([e[1] for e in matched]), step_spreads.get((graph_id, index)),
                sum(e[2] for e in matched),
                step.node.nbytes if step.buffer is None else 0, list(members)))
        for node_id, kind in _assigns_and_removed(segment.graph, compiled.lowered, used):
            if node_id in node_to_eager:
                op, spread, nbytes = node_to_eager[node_id]
                rows.append(ComparisonRow(graph_id, f"(%{node_id} {kind})", "removed",
                                          [op], spread, None, nbytes, 0, [node_id]))
        mem = compiled.record.memory if compiled.record is not None else None
        if mem is not None:
            planned += mem.planned_peak
            unplanned += mem.unplanned_peak
        kernel_count += len(plan.steps)
    return rows, planned, unplanned, kernel_count


def _sum_spreads(spreads: list) -> Spread | None:
    """Round by round sums (the ops of one row ran in the same rounds)."""
    if not spreads:
        return None
    samples = [sum(values) for values in zip(*(s.samples for s in spreads))]
    return Spread.of(samples, spreads[0].calls, spreads[0].runnable, spreads[0].waited)


def _align(cf, eager_ops) -> dict:
    """Traced node id -> (op, eager Spread, eager bytes), pairing nodes and eager ops in
    order. The trace mirrors the eager run; the few nodes the tracer adds on its own (a
    full to broadcast an assigned scalar) are skipped by matching op names."""
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
            verdict = r.verdict
            record(function=result.function, graph_id=r.graph_id, kernel=r.kernel,
                   step_kind=r.step_kind, eager_ops=r.eager_ops, eager_ns=int(r.eager_ns),
                   kernel_ns=int(r.kernel_ns), eager_bytes=r.eager_bytes,
                   planned_bytes=r.planned_bytes, repeat=result.calls_per_round,
                   rounds=result.rounds, verdict=None if verdict is None else verdict.cell())

