"""What a jitted function does when shapes keep changing, and when graph mode is slower.

Three policies, each a small decision kept apart from the tracing machinery in jit.py:

* **Dynamic dimensions** (torch's automatic dynamic shapes). Kernels bake their sizes in
  (``for (i = 0; i < 4; ...)``), so every new size of a dimension is a new C compile
  (~0.2 s for a small transformer forward). Once a dimension of an argument has taken a
  second distinct size it is *dynamic*: traces for further sizes run their fused nodes
  through NumPy (the ``"numpy"`` kernel backend, where sizes are arguments), which costs a
  trace (~15 ms) instead of a compile. Sizes seen before still replay their compiled plan.
  Those traces make the dimension a symbolic size, and once two of them agree one graph
  serves every further size without tracing (symbolic_dims.py).
  ``em.jit(fn, dynamic=False)`` compiles every size; ``dynamic=True`` never compiles
  kernels for this function's shapes.
* **A retrace limit** (torch's ``cache_size_limit``, default 8). A function that keeps
  meeting new signatures (a sampling loop growing its context by one token per step)
  would trace at every call, each trace costing many eager calls. After ``limit`` traced
  signatures, calls that miss the cache run the Python eagerly, with one warning naming
  the argument and dimension that kept changing. Cached signatures keep replaying.
* **Graph breaks that cost more than they save.** A function with breaks re-runs its
  Python under the tracer at every call. After two warm calls, the next three calls run
  eagerly and are timed; if the fastest graph-mode call took longer than the fastest
  eager one, one warning gives both times and the first break's line and reason (minimums
  on both sides: one preemption on a loaded machine cannot decide it). Only when nobody listens (a profiler or debugger sees every op, so it
  must not see an unannounced eager call, and its timings are not representative).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

DEFAULT_CACHE_SIZE_LIMIT = 8
# Graph mode must be this much slower than eager, and by this many ns, before we say so:
# a warm call's time varies by tens of percent on a loaded machine.
SLOWER_FACTOR = 1.5
SLOWER_MIN_NS = 50_000
WARM_CALLS = 2  # calls timed under graph mode (after the tracing call) before comparing
EAGER_SAMPLES = 3  # calls then timed eagerly; the fastest of each side is compared


class JitWarning(UserWarning):
    """Graph mode fell back to eager, or runs slower than eager (em.jit)."""


@dataclass
class ShapeHistory:
    """The distinct sizes each dimension of each argument took, in the order first seen."""

    sizes: dict = field(default_factory=dict)  # (arg name, dim) -> [size, ...]

    def observe(self, signature) -> list[tuple[str, int]]:
        """Record this call's shapes; returns the dynamic dimensions it has."""
        dynamic = []
        for name, leaf in zip(signature.arg_names, signature.leaves):
            for dim, size in enumerate(leaf[0]):
                seen = self.sizes.setdefault((name, dim), [])
                if size not in seen:
                    seen.append(size)
                if len(seen) > 1:
                    dynamic.append((name, dim))
        return dynamic

    def most_varied(self) -> tuple[str, int, list] | None:
        """(argument, dim, sizes) of the dimension with the most distinct sizes, if any
        took more than one."""
        if not self.sizes:
            return None
        (name, dim), sizes = max(self.sizes.items(), key=lambda item: len(item[1]))
        return (name, dim, sizes) if len(sizes) > 1 else None


def changed_dims(dims: list[tuple[str, int]], signature, previous) -> list[tuple[str, int]]:
    """Those of ``dims`` whose size differs from the previous signature's (what a retrace
    reason should name; a dtype change on a dynamic shape names none)."""
    if previous is None:
        return dims
    before = {(name, d): size for name, leaf in zip(previous.arg_names, previous.leaves)
              for d, size in enumerate(leaf[0])}
    now = {(name, d): size for name, leaf in zip(signature.arg_names, signature.leaves)
           for d, size in enumerate(leaf[0])}
    return [key for key in dims if before.get(key) != now.get(key)]


def describe_dims(dims: list[tuple[str, int]]) -> str:
    return ", ".join(f"{name} dim {dim}" for name, dim in dims)


def _sizes_text(sizes: list) -> str:
    if len(sizes) > 6:
        return ", ".join(map(str, sizes[:3])) + f", ..., {sizes[-1]}"
    return ", ".join(map(str, sizes))


def warn_limit_reached(function: str, limit: int, history: ShapeHistory, reason: str) -> None:
    """The one warning when a function starts running new signatures eagerly."""
    varied = history.most_varied()
    if varied is not None:
        name, dim, sizes = varied
        why = (f"{name} dim {dim} took {len(sizes)} sizes ({_sizes_text(sizes)}); "
               f"the last retrace: {reason}")
    else:
        why = f"the last retrace: {reason}"
    warnings.warn(
        f"em.jit({function}): {limit} signatures traced, the cache_size_limit; calls with a "
        f"new signature now run eagerly (cached ones still replay). {why}. Raise the limit "
        f"with em.jit({function}, cache_size_limit=N) if the sizes recur.",
        JitWarning, stacklevel=5)  # the user's call of the jitted function


@dataclass
class BreakCost:
    """Timing of one signature's calls with graph breaks, to compare with one eager call."""

    jit_ns: list = field(default_factory=list)
    eager_ns: list = field(default_factory=list)
    decided: bool = False

    def wants_eager_sample(self) -> bool:
        return not self.decided and len(self.jit_ns) >= WARM_CALLS

    def add_eager_sample(self, ns: int) -> tuple[int, int] | None:
        """Record one eager call; once there are enough, decide: (fastest graph-mode call,
        fastest eager call)."""
        self.eager_ns.append(ns)
        if len(self.eager_ns) < EAGER_SAMPLES:
            return None
        self.decided = True
        return min(self.jit_ns), min(self.eager_ns)


def slower_than_eager(jit_ns: int, eager_ns: int) -> bool:
    return jit_ns > SLOWER_FACTOR * eager_ns and jit_ns - eager_ns > SLOWER_MIN_NS


def warn_slower(function: str, jit_ns: int, eager_ns: int, breaks: list,
                writes: list = ()) -> None:
    first = breaks[0] if breaks else None
    written = f" ({writes[0]}{', ...' if len(writes) > 1 else ''})" if writes else ""
    where = (f"; the first of {len(breaks)} graph break(s) is at {first.filename}:"
             f"{first.lineno}: {first.reason}" if first is not None else
             f"; the function writes Python state{written}, so its Python re-runs at "
             "every call")
    warnings.warn(
        f"em.jit({function}) is slower than eager: {jit_ns / 1e6:.3g} ms per call under "
        f"graph mode vs {eager_ns / 1e6:.3g} ms eagerly{where}. Remove the "
        f"{'break' if first is not None else 'write'} (see em.explain) or call the "
        "function without em.jit.",
        JitWarning, stacklevel=5)  # the user's call of the jitted function
