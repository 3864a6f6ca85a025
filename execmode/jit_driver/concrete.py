"""One traced signature of a jitted function: its segments, its guards and its replay.

A ``ConcreteFunction`` is what a trace left for later calls with the same signature: the
segments and graph breaks, the guards on the state the trace read (tensor guards from
tensor_guards.py, Python guards from graph/guards.py, symbolic numbers' answers), and how
a call rebuilds its results (results.py). ``guards_hold`` says why a guard fails, in a
sentence that becomes the retrace's reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graph import guards as guards_mod
from ..graph import pytree
from ..graph.guards import same_value
from ..graph.ir import Graph
from ..graph.segments import GraphBreak, Segment
from .float_errors import run_plan
from .results import apply_flag_writes, build_results, resolve
from .signature import Signature


@dataclass
class ConcreteFunction:
    """One traced signature: its segments, breaks and (without breaks) the replay plan."""

    signature: Signature
    segments: list[Segment]
    breaks: list[GraphBreak]
    guards: list                     # tensor_guards.TensorGuard: .grad, strides, memory
    out_structure: object = None
    # How each result is rebuilt (trace.result_spec): the returned leaves, then the grads.
    result_specs: list = field(default_factory=list)
    n_out: int = 0
    grad_writes: list = field(default_factory=list)   # [(owner ref, result index | None)]
    calls: int = 0
    baked: list = field(default_factory=list)  # on_break="bake": values frozen at trace time
    python_guards: list = field(default_factory=list)  # guards.Guard: globals, attributes
    scalar_guards: list = field(default_factory=list)  # (read, answer, label): symbolic.py
    # Python state the function itself writes (self.step += 1): a replay would skip the
    # write, so such a function re-runs its Python at every call, as one with breaks does.
    python_writes: list = field(default_factory=list)
    failed_guard: object = None        # the guards.Guard that failed last (for promotion)
    _python_check: object = None       # guards.compile_check of the two lists above
    # Arguments and captures whose autograd flags the function changes (x[...] = w * 2
    # makes x take w's history, as eagerly): (ref, requires_grad, took a history) set at
    # every replay.
    flag_writes: list = field(default_factory=list)
    # The backward of the results eager would hand back differentiable (backward.py):
    # each call gives them one shared autograd node.
    joint: object = None

    @property
    def has_breaks(self) -> bool:
        return bool(self.breaks) or bool(self.python_writes)

    @property
    def graphs(self) -> list[Graph]:
        return [s.graph for s in self.segments]

    def python_state_holds(self) -> bool:
        """The globals, attributes and symbolic numbers' answers are as traced (the fast
        replays ask this; the general path asks guards_hold, which says why not)."""
        if self.python_writes:
            return True
        check = self._python_check
        if check is None:
            check = self._python_check = guards_mod.compile_check(self.python_guards,
                                                                  self.scalar_guards)
        return check()

    def guards_hold(self, leaves) -> str | None:
        """None if every guard holds for this call's arguments, else why not."""
        self.failed_guard = None
        if not self.python_writes:  # (a function that writes them re-runs Python anyway)
            for guard in self.python_guards:
                reason = guard.failure()
                if reason is not None:
                    self.failed_guard = guard
                    return reason
        for read, answer, label in self.scalar_guards:
            try:
                now = read()
            except Exception as exc:  # noqa: BLE001 - the attribute is gone or no number
                return f"{label}: {type(exc).__name__} when read again"
            if not same_value(now, answer):
                return f"{label} was {answer!r} when traced, now {now!r}"
        for guard in self.guards:
            reason = guard.failure(leaves)
            if reason is not None:
                return reason
        return None

    def replay(self, leaves):
        segment = self.segments[0]
        compiled = segment.compiled
        arrays = [src.read(leaves) for src in segment.sources]
        outputs = run_plan(compiled.plan, arrays)
        results = build_results(self.result_specs, leaves, outputs)
        for ref, j in self.grad_writes:
            resolve(ref, leaves)._grad = None if j is None else results[j]
        apply_flag_writes(self.flag_writes, leaves)
        if self.joint is not None:  # (after the flags: written arguments are outputs too)
            self.joint.attach(results, leaves, outputs)
        return pytree.unflatten(self.out_structure, results[:self.n_out])

    @property
    def out_spec(self) -> list | None:
        """The results in the fast replays' terms, or None when a result needs the general
        replay: ("out", k) and ("out_rg", k) a graph output (``out_rg``: with eager's
        history, results.JIT_RESULT); ("out_view", (k, steps, rg)) a view of graph output
        k, as eager hands back a gradient computed transposed; ("same", j) result j again;
        ("arg", i) the caller's argument; ("const", x) x itself."""
        simple, seen = [], set()
        for spec in self.result_specs:
            kind = spec[0]
            if kind == "out" and spec[2]:
                simple.append(("out_view", (spec[1], spec[2], spec[3])))
            elif kind == "out" and spec[1] not in seen:
                seen.add(spec[1])
                simple.append(("out_rg" if spec[3] else "out", spec[1]))
            elif kind in ("arg", "const", "same"):
                simple.append((kind, spec[1]))
            else:
                return None
        return simple
