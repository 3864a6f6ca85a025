"""``em.jit``: trace once per signature, then replay the compiled plan.

Stages follow JAX: ``f.trace(*args)`` -> :class:`Traced` (``.graph``), ``.lower()`` ->
:class:`Lowered` (the optimized graph and the per-pass record), ``.compile()`` ->
:class:`Compiled` (the executable plan). Calling ``f(*args)`` does all three, cached.

Semantics (tf.function's): a function without graph breaks runs its Python body only while
tracing; later calls with the same signature replay the plan, so Python side effects
(print, appending to a list, incrementing a counter) happen once per trace. A function with
graph breaks re-runs its Python on every call, but each segment compiles once (segments are
cached by a structural hash).

This module is the driver: the cache of traced signatures and what a call does with it.
Its parts: signature.py (what keys the cache), trace_call.py (tracing a call),
concrete.py (a traced signature, its guards and replay), results.py (the tensors a call
hands back), compiled_segment.py (passes and kernels), stages.py (trace/lower/compile),
fastcall.py (the generated and C replays), backward.py (backward through a call).
"""

from __future__ import annotations

import functools
import inspect
import sys
import time

from .. import dispatch, instrument
from ..errors import ArgumentError
from ..graph import pytree
from ..graph.ir import Graph
from ..graph.segments import Segment
from . import cache_policy, registry
from .compiled_segment import CompiledSegment, compile_segment
from .concrete import ConcreteFunction
from .fastcall import MISS, build_fast_call
from .float_errors import run_plan
from .module import is_module
from .signature import Retrace, Signature, retrace_reason, signature_of
from .stages import Lowered, Traced
from .symbolic_dims import MISS as SIZE_MISS
from .symbolic_dims import DynamicSizes
from .trace_call import trace_call

# Read by the generated replays (fastcall.py) and the C fast entry, in this module's dict.
_jit_disabled = False


class disable_jit:  # noqa: N801 - a context manager, as in JAX
    """Run jitted functions eagerly inside this block (for debugging)."""

    def __enter__(self):
        global _jit_disabled
        self._previous = _jit_disabled
        _jit_disabled = True
        return self

    def __exit__(self, *exc):
        global _jit_disabled
        _jit_disabled = self._previous
        return False


class JitFunction:
    """The callable ``em.jit(fn)`` returns."""

    # Another jitted function read as a global is guarded by identity; its caches are its
    # own business, not state of the caller's trace (graph/guards.py).
    _em_guard_identity_only = True
    # The replay tier changed since _fast was built (paths.py): _call rebuilds it.
    _fast_stale = False

    def __init__(self, fn, passes=None, fullgraph: bool = False, backend: str | None = None,
                 on_break: str = "split", *,
                 cache_size_limit: int | None = cache_policy.DEFAULT_CACHE_SIZE_LIMIT,
                 dynamic: bool | None = None):
        if not callable(fn):
            raise ArgumentError(f"em.jit needs a function, got {type(fn).__name__}")
        if cache_size_limit is not None and (
                not isinstance(cache_size_limit, int) or cache_size_limit < 1):
            raise ArgumentError(f"em.jit: cache_size_limit must be a positive int or None, "
                                f"got {cache_size_limit!r}")
        if dynamic not in (None, True, False):
            raise ArgumentError(f"em.jit: dynamic must be None, True or False, got {dynamic!r}")
        # A function's attributes are copied, as functools.wraps does; an object's (a
        # module's layers and flags) are not: they change, and __getattr__ reads them live.
        functools.update_wrapper(self, fn, updated=functools.WRAPPER_UPDATES if
                                 inspect.isfunction(fn) or inspect.ismethod(fn) else ())
        self.fn = fn
        self.passes = passes
        if on_break not in ("split", "error", "bake"):
            raise ArgumentError(f"em.jit: on_break must be 'split', 'error' or 'bake', "
                                f"got {on_break!r}")
        if _on_break_override is not None:  # `execmode explain --on-break`: for every em.jit
            on_break, fullgraph = _on_break_override, False
        self.on_break = "error" if fullgraph else on_break
        self.fullgraph = self.on_break == "error"
        self.backend = backend
        self.cache_size_limit, self.dynamic = cache_size_limit, dynamic
        self._shapes = cache_policy.ShapeHistory()
        self._sizes = DynamicSizes()        # one trace for every size (symbolic_dims.py)
        self.eager_fallbacks = 0           # calls run eagerly past the cache_size_limit
        self._warned_limit = False
        self._warned_unwatched = False      # python_writes.MAX_CONTAINERS reached
        self._break_costs: dict = {}        # id(ConcreteFunction) -> cache_policy.BreakCost
        self.name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or \
            type(fn).__qualname__  # a module or another callable object: its class
        self._cache: dict = {}               # signature key -> [ConcreteFunction]
        self._segments: dict[tuple, CompiledSegment] = {}  # (structural hash, backend)
        self._signature_ids: dict = {}
        self._signature_texts: dict = {}   # signature key -> its text (a trace names it)
        self._fast = None  # the generated replay of the newest signature
        # (id(holder), name) -> (holder, name, label): numbers traced as graph inputs.
        self._dynamic: dict = {}
        self.retraces: list[Retrace] = []
        self.trace_count = 0
        self.compile_count = 0
        self._created = registry.register(self)
        try:
            self._parameters = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            self._parameters = []
        self._built = True  # from now on, new public attributes go to a jitted module

    def __get__(self, obj, objtype=None):
        # Jitted methods: bind self as a static argument, like functools.partial.
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __repr__(self) -> str:
        return f"<em.jit {self.name}: {len(self.concrete_functions)} signature(s)>"

    def __getattr__(self, name):
        # A jitted module is still the module (module.py): what the jitted function lacks
        # is the module's, read live (parameters(), train(), state_dict(), its layers).
        fn = self.__dict__.get("fn")
        if fn is not None and not name.startswith("__") and is_module(fn):
            return getattr(fn, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name, value):
        # ... and an attribute set on a jitted module lands on the module, as on PyTorch's
        # OptimizedModule (d2l's Trainer sets model.trainer, read by the model's methods).
        # Once built: __init__'s own attributes stay the jitted function's.
        d = self.__dict__
        if d.get("_built") and not name.startswith("_") and name not in d and \
                not hasattr(type(self), name) and is_module(d["fn"]):
            setattr(d["fn"], name, value)
        else:
            object.__setattr__(self, name, value)

    @property
    def _orig_mod(self):
        """The function or module jitted (PyTorch's name for a compiled module's own)."""
        return self.fn

    @property
    def concrete_functions(self) -> list[ConcreteFunction]:
        return [cf for entries in self._cache.values() for cf in entries]

    # --- calling -------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        fast = self._fast
        if fast is not None and not kwargs:
            out = fast(*args)
            if out is not MISS:
                return out
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if _jit_disabled or dispatch.current_tracer() is not None:
            # Disabled, or called inside another trace: inline the Python.
            return self.fn(*args, **kwargs)
        if self._fast_stale:
            self._rebuild_fast()
        leaves, structure = pytree.flatten((args, kwargs))
        signature = self._signature(structure, leaves)
        entries = self._cache.get(signature.key)
        reason = None
        if entries:
            for cf in entries:
                reason = cf.guards_hold(leaves)
                if reason is None:
                    cf.calls += 1
                    if cf.has_breaks:
                        return self._call_with_breaks(cf, args, kwargs, leaves, signature)
                    return cf.replay(leaves)
                guard = cf.failed_guard
                if guard is not None and guard.numeric:
                    # A number that changed between calls (a schedule's lr, a step count):
                    # the next trace reads it as a graph input instead of retracing at
                    # every new value (dynamo's automatic dynamic).
                    self._dynamic[(id(guard.holder), guard.name)] = (guard.holder, guard.name,
                                                                     guard.label)
        elif self._cache:
            reason = retrace_reason(self._latest_signature, signature)
        if self._sizes.generic:
            # A trace with the dynamic dimensions symbolic serves this size.
            out = self._sizes.replay(signature, leaves)
            if out is not SIZE_MISS:
                return out
        if reason is not None and self._warned_limit:
            return self._run_eagerly(args, kwargs, reason)  # (shapes no longer recorded)
        dynamic_dims = self._shapes.observe(signature)
        if reason is not None and self.cache_size_limit is not None and \
                len(self.concrete_functions) >= self.cache_size_limit:
            return self._run_eagerly(args, kwargs, reason)
        backend = self.backend
        symbols = []
        if self.dynamic or (dynamic_dims and self.dynamic is None):
            if backend in (None, "auto", "c"):
                # Kernels bake sizes in: a dynamic dimension's new sizes run the fused
                # nodes through NumPy rather than compiling per size (cache_policy.py).
                backend = "numpy"
                changed = cache_policy.changed_dims(dynamic_dims, signature,
                                                    getattr(self, "_latest_signature", None))
                if reason is not None and changed:
                    reason += (f"; dynamic: {cache_policy.describe_dims(changed)} "
                               "(no kernels compiled for this size)")
            if backend == "numpy":
                symbols = self._sizes.symbols_for(signature, dynamic_dims)
        if reason is not None:
            self.retraces.append(Retrace(reason, str(signature), time.perf_counter_ns()))
            if instrument._on_event:
                instrument.emit(instrument.Event("retrace", {
                    "function": self.name, "reason": reason, "signature": str(signature),
                }, time.perf_counter_ns(), time.perf_counter_ns()))
        cf, result = trace_call(self, args, kwargs, leaves, signature, backend=backend,
                                symbols=symbols)
        if symbols:
            note = self._sizes.observe(cf, self._last_tracer, signature, symbols, backend)
            if reason is not None and note and "; dynamic: " in reason:  # (a size changed)
                self.retraces[-1].reason += note
        self._cache.setdefault(signature.key, []).append(cf)
        self._latest_signature = signature
        # The newest signature gets the generated replay (a loop over shapes alternates),
        # unless its sizes were symbolic: their further sizes come from one graph
        # (symbolic_dims.py), and the replay of this one size would rarely serve.
        if not symbols or self._sizes.traces_per_size(signature, symbols):
            self._fast = build_fast_call(cf, sys.modules[__name__])
        return result

    def _rebuild_fast(self) -> None:
        """The newest signature's fast replay again, for the tier now forced (paths.py)."""
        self._fast_stale = False
        signature = getattr(self, "_latest_signature", None)
        entries = self._cache.get(signature.key) if signature is not None else None
        if entries:
            self._fast = build_fast_call(entries[-1], sys.modules[__name__])

    def _run_eagerly(self, args, kwargs, reason: str):
        """Past the cache_size_limit: a new signature runs the Python as it is."""
        self.eager_fallbacks += 1
        if not self._warned_limit:
            self._warned_limit = True
            cache_policy.warn_limit_reached(self.name, self.cache_size_limit, self._shapes,
                                            reason)
            if instrument._on_event:
                now = time.perf_counter_ns()
                instrument.emit(instrument.Event("retrace", {
                    "function": self.name, "signature": "",
                    "reason": f"cache_size_limit={self.cache_size_limit} reached: new "
                              f"signatures run eagerly ({reason})"}, now, now))
        return self.fn(*args, **kwargs)

    def _call_with_breaks(self, cf, args, kwargs, leaves, signature):
        """A function with breaks re-runs its Python under the tracer. Warm calls are
        timed, and a few are run eagerly to compare (cache_policy.py): breaks can cost more
        than graph mode saves, and the person should hear it once."""
        cost = self._break_costs.get(id(cf))
        if cost is None:
            cost = self._break_costs[id(cf)] = cache_policy.BreakCost()
        # Beside a debugger (or another listener that sees each op) every call traces; a
        # recorder alone lets the eager samples run, so that a profile records the calls
        # the program makes unrecorded.
        if cost.decided or (instrument.is_listening() and not dispatch.fused_path_open()):
            return trace_call(self, args, kwargs, leaves, signature, reuse=cf)[1]
        t0 = time.perf_counter_ns()
        if cost.wants_eager_sample():
            if instrument._on_event:  # a recorder sees why these ops ran eagerly
                _announce_eager_sample(self.name, len(cost.eager_ns) + 1, t0)
            result = self.fn(*args, **kwargs)
            decision = cost.add_eager_sample(time.perf_counter_ns() - t0)
            if decision is not None and cache_policy.slower_than_eager(*decision):
                cache_policy.warn_slower(self.name, *decision, cf.breaks, cf.python_writes)
            return result
        result = trace_call(self, args, kwargs, leaves, signature, reuse=cf)[1]
        cost.jit_ns.append(time.perf_counter_ns() - t0)
        return result

    def _signature(self, structure, leaves) -> Signature:
        return signature_of(structure, leaves, dispatch.grad_enabled(), self._path_name)

    def _path_name(self, path: str) -> str:
        """"[0][1]['w']" over (args, kwargs) -> "scale['w']" with the parameter's name."""
        if path.startswith("[0]["):
            pos, _, tail = path[4:].partition("]")
            if pos.isdigit() and int(pos) < len(self._parameters):
                return self._parameters[int(pos)] + tail
            return f"arg {pos}{tail}"
        if path.startswith("[1]["):
            key, _, tail = path[4:].partition("]")
            return key.strip("'") + tail
        return path

    # --- segments ------------------------------------------------------------------------
    def _run_segment(self, segment: Segment, arrays: list, backend=None) -> list:
        same = segment.same_as  # the previous call traced this very graph: its plan serves
        if same is not None and same.compiled is not None and same.backend == backend:
            compiled = same.compiled
        else:
            compiled = self.compile_segment(segment.graph, backend)
        segment.compiled, segment.backend = compiled, backend
        return run_plan(compiled.plan, arrays)

    def compile_segment(self, graph: Graph, backend=None) -> CompiledSegment:
        backend = backend or self.backend
        key = graph.structural_hash()
        hit = self._segments.get((key, backend))
        if hit is not None:
            return hit
        compiled = compile_segment(self.name, graph, key, self.passes, backend)
        self._segments[(key, backend)] = compiled
        self.compile_count += 1
        return compiled

    # --- stages --------------------------------------------------------------------------
    def trace(self, *args, **kwargs) -> Traced:
        """Trace without running (a function with graph breaks must run its segments)."""
        leaves, structure = pytree.flatten((args, kwargs))
        signature = self._signature(structure, leaves)
        cf, _ = trace_call(self, args, kwargs, leaves, signature, execute=False)
        return Traced(self, cf)

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace, then run the passes: the optimized graph(s) and what each pass did."""
        return self.trace(*args, **kwargs).lower()


_on_break_override: str | None = None


def override_on_break(mode: str | None) -> None:
    """Make every em.jit created from now on use ``on_break=mode`` whatever it asks for
    (``execmode explain --on-break bake`` shows what a plain tracer makes of a script);
    ``None`` gives each em.jit its own choice back."""
    global _on_break_override
    if mode not in (None, "split", "error", "bake"):
        raise ArgumentError(f"on_break must be 'split', 'error' or 'bake', got {mode!r}")
    _on_break_override = mode


def jit(fn=None, *, passes=None, fullgraph: bool = False, backend: str | None = None,
        on_break: str = "split",
        cache_size_limit: int | None = cache_policy.DEFAULT_CACHE_SIZE_LIMIT,
        dynamic: bool | None = None):
    """Trace ``fn`` into a graph on first call per signature, optimize and compile it.

    ``passes``: names of the passes to run (default: all). Where Python needs a concrete
    value, ``on_break`` says what to do: "split" (default) breaks the graph there and goes
    on in a new segment; "error" (or ``fullgraph=True``) raises GraphBreakError with the
    line; "bake" freezes the value seen while tracing into the graph, as a plain tracer
    (torch.jit.trace) does: later calls silently follow the traced branch. ``backend``:
    "c", "interpreter" or "numpy" (no kernels).

    Shapes that change (jit_driver/cache_policy.py): a dimension that took a second size is
    dynamic, and its further sizes run without compiling kernels (``dynamic=False``:
    compile every size; ``dynamic=True``: never compile kernels for this function).
    After ``cache_size_limit`` traced signatures (default 8, as torch's), calls with a
    new signature run eagerly, with one warning naming the dimension that kept changing
    (``None``: no limit).

    Results that eager would hand back with a history backpropagate: ``backward()``
    outside the function runs a backward graph compiled from the same trace
    (``model = em.jit(model); loss_fn(model(x), y).backward()``). A jitted module is still
    the module: ``parameters()``, ``train()``/``eval()`` (which retrace), ``state_dict()``.
    """
    options = dict(cache_size_limit=cache_size_limit, dynamic=dynamic)
    if fn is None:
        return lambda f: JitFunction(f, passes, fullgraph, backend, on_break, **options)
    return JitFunction(fn, passes, fullgraph, backend, on_break, **options)


__all__ = ["JitFunction", "disable_jit", "jit"]


def _announce_eager_sample(function: str, index: int, now: int) -> None:
    instrument.emit(instrument.Event("retrace", {
        "function": function, "signature": "",
        "reason": f"eager sample {index} of {cache_policy.EAGER_SAMPLES}: this call runs "
                  "eagerly, timed against graph mode (its graph breaks re-run the Python "
                  "at every call; cache_policy.py)"}, now, now))
