"""``em.jit``: trace once per signature, then replay the compiled plan.

Stages follow JAX: ``f.trace(*args)`` -> :class:`Traced` (``.graph``), ``.lower()`` ->
:class:`Lowered` (the optimized graph and the per-pass record), ``.compile()`` ->
:class:`Compiled` (the executable plan). Calling ``f(*args)`` does all three, cached.

Semantics (tf.function's): a function without graph breaks runs its Python body only while
tracing; later calls with the same signature replay the plan, so Python side effects
(print, appending to a list, incrementing a counter) happen once per trace. A function with
graph breaks re-runs its Python on every call, but each segment compiles once (segments are
cached by a structural hash).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import sys
import time
import warnings
import weakref
from dataclasses import dataclass, field

from .. import dispatch, instrument
from .._tensor import Tensor
from ..errors import ArgumentError, BackwardError
from ..graph import guards as guards_mod
from ..graph import python_writes as python_writes_mod
from ..graph import pytree
from ..graph.guards import same_value
from ..graph.ir import ASSIGN, Graph
from ..graph.trace import GraphBreak, Segment, Tracer
from ..graph.views import replay
from ..symbolic import SymbolicScalar, is_number
from ..tape import GradNode
from . import backward as backward_mod
from . import cache_policy
from .fastcall import MISS, build_fast_call
from .float_errors import run_plan
from .module import is_module, state_roots

_jit_disabled = False
_UNREAD = object()  # a .grad the trace wrote before reading
# Every jitted function of the process, for `execmode explain SCRIPT` and the recorder.
_registry: weakref.WeakSet = weakref.WeakSet()
# While `execmode explain` runs a script: every jitted function it made, held strongly (a
# step jitted inside a loop body or a helper is garbage before the report; issue 38).
_kept: list | None = None
_creation_order = itertools.count()


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


# --- signatures -----------------------------------------------------------------------

@dataclass(frozen=True)
class Signature:
    structure: object
    leaves: tuple          # (shape, dtype, device, requires_grad, alias) per tensor leaf
    grad_enabled: bool
    # path -> readable name ("[0][1]" -> "scale"): names are only needed to trace and to
    # explain a retrace, so they are derived on first use, not at every call.
    namer: object = field(default=str, compare=False, repr=False)

    @property
    def key(self):
        return (self.structure, self.leaves, self.grad_enabled)

    @functools.cached_property
    def arg_names(self) -> tuple:
        """Readable names of the tensor leaves ("x", "batch['y']")."""
        return tuple(self.namer(p) for p in pytree.leaf_paths(self.structure))

    @functools.cached_property
    def statics(self) -> tuple:
        """(readable name, value) of every static argument."""
        return tuple((self.namer(p), v) for p, v in pytree.static_paths(self.structure))

    def __str__(self) -> str:
        from ..dtypes import type_text

        # The device only where it is not the default one.
        parts = [f"{name}: {type_text(shape, dt, None if str(dev) == 'cpu' else dev)}"
                 for name, (shape, dt, dev, _, _) in zip(self.arg_names, self.leaves)]
        parts.extend(f"{name}={value!r}" for name, value in self.statics)
        return "(" + ", ".join(parts) + ")"


def retrace_reason(old: Signature, new: Signature) -> str:
    """A human sentence for why ``new`` needs a new trace ("x: shape (64, 512) -> ...")."""
    if old.structure != new.structure:
        old_s = dict(old.statics)
        for name, value in new.statics:
            if name in old_s and old_s[name] != value:
                return f"static arg {name}: {old_s[name]!r} -> {value!r}"
        return "argument structure changed (different nesting, keys or static arguments)"
    if old.grad_enabled != new.grad_enabled:
        return f"grad mode: {'on' if old.grad_enabled else 'off'} -> " \
               f"{'on' if new.grad_enabled else 'off'}"
    for name, a, b in zip(new.arg_names, old.leaves, new.leaves):
        if a[0] != b[0]:
            return f"{name}: shape {a[0]} -> {b[0]}"
        if a[1] != b[1]:
            return f"{name}: dtype {a[1]} -> {b[1]}"
        if a[2] != b[2]:
            return f"{name}: device {a[2]} -> {b[2]}"
        if a[3] != b[3]:
            return f"{name}: requires_grad {a[3]} -> {b[3]}"
        if a[4] != b[4]:
            return f"{name}: aliasing changed (the same tensor passed in two places, or not)"
    return "new signature"


@dataclass
class Retrace:
    reason: str
    signature: str
    time_ns: int

    def __str__(self) -> str:
        return f"retrace {self.signature}: {self.reason}"


# --- compiled segments ------------------------------------------------------------------

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


def compile_graph(lowered: Graph, graph_id: str, backend=None):
    from ..codegen import kernel_factory_for
    from ..plan import build_plan

    factory = kernel_factory_for(lowered, graph_id, backend)
    plan = build_plan(lowered, graph_id, factory)
    if backend in (None, "c") and len(plan.steps) > 1:
        # Graphs of many small steps (matpow) and training steps run as one C function
        # when nobody listens; it calls the kernels the plan compiled.
        from ..codegen.program import program_or_reason

        plan.program, plan.program_reason = program_or_reason(
            lowered, graph_id, getattr(factory, "kernels", None), plan.clock)
    return plan


# --- concrete functions -----------------------------------------------------------------

@dataclass
class ConcreteFunction:
    """One traced signature: its segments, breaks and (without breaks) the replay plan."""

    signature: Signature
    segments: list[Segment]
    breaks: list[GraphBreak]
    guards: list                     # [(tensor ref, "grad_none" | "strides" | ...)]
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
        for ref, kind, expected in self.guards:
            tensor = resolve(ref, leaves)
            if kind == "grad_none" and (tensor._grad is None) != expected:
                state = "None" if expected else "a tensor"
                now = "a tensor" if expected else "None"
                return f".grad of {_short(tensor)} was {state} when traced, now {now}"
            if kind == "is_arg_memory" and \
                    memory_owner(tensor._data) is not memory_owner(leaves[expected]._data):
                return (f"captured {_short(tensor)} was the memory of argument {expected} "
                        "when traced, now it is not")
            if kind == "not_arg_memory" and any(
                    memory_owner(tensor._data) is memory_owner(t._data) for t in leaves):
                return (f"captured {_short(tensor)} is now also passed as an argument "
                        "(the graph writes inputs, so that sharing matters)")
            if kind == "grad_type":
                reason = _grad_type_failure(tensor, expected)
                if reason is not None:
                    return reason
            if kind == "grads_apart" and distinct_grads(expected[0], leaves) != expected[1]:
                return ("the .grad tensors share memory differently from when traced (the "
                        "graph writes them in place: p1.grad is p2.grad, or not)")
            if kind == "non_leaf" and tensor._grad_fn is None:
                return f"{_short(tensor)} had a history (not a leaf) when traced, now it is a leaf"
            if kind == "strides" and tensor._data.strides != expected:
                return (f"memory layout of {_short(tensor)}: strides {expected} when traced, "
                        f"now {tensor._data.strides} (a reshape of it is a view or a copy "
                        "depending on them)")
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
        """The results in the fast replays' terms (("out", k), ("arg", i), ("const", x)),
        or None when a result is a view or repeats another (the general replay does it)."""
        simple, seen = [], set()
        for spec in self.result_specs:
            if spec[0] == "out" and not spec[2] and spec[1] not in seen:
                seen.add(spec[1])
                simple.append(("out_rg" if spec[3] else "out", spec[1]))
            elif spec[0] in ("arg", "const"):
                simple.append(spec)
            else:
                return None
        return simple


def build_results(specs, leaves, outputs) -> list:
    """The tensors a call hands back, rebuilt as eager would have them (trace.result_spec):
    fresh tensors for graph outputs, the caller's own objects for returned arguments and
    captures, NumPy views where eager returns views (so that aliasing matches)."""
    results = []
    for spec in specs:
        kind = spec[0]
        if kind == "out":
            array = outputs[spec[1]]
            results.append(_wrap(replay(spec[2], array) if spec[2] else array, spec[3]))
        elif kind == "arg":
            results.append(leaves[spec[1]])
        elif kind == "same":
            results.append(results[spec[1]])
        elif kind == "grad":
            results.append(resolve(spec[1], leaves)._grad)
        elif kind == "view":
            results.append(_wrap(replay(spec[2], spec[1].read(leaves)), spec[3]))
        else:
            results.append(spec[1])
    return results


def _capture_flag_guards(tracer) -> list:
    """A guard on each capture's requires_grad as the trace began: the results'
    requires_grad and the gradients that flow into captures depend on it, and it changes between calls (the
    function's own write ``g *= w`` gives g a history; a user freezes a layer).
    Python guards, so the compiled check (and the C entry) test them at every replay
    (fuzz 1795535866-9082)."""
    out, seen = [], set()
    for segment in tracer.segments:
        for src in segment.sources:
            t = src.tensor if src.kind == "capture" else None
            if t is None or id(t) in seen:
                continue
            seen.add(id(t))
            before = tracer.flags_before.get(id(t))
            requires_grad = before[1] if before is not None else t.requires_grad
            out.append(guards_mod.Guard(t, "requires_grad", requires_grad, True,
                                        f"requires_grad of captured {src.label}"))
    return out


def apply_flag_writes(flag_writes, leaves) -> None:
    for ref, requires_grad, took_history in flag_writes:
        t = resolve(ref, leaves)
        t.requires_grad = requires_grad
        t._grad_fn = JIT_RESULT if took_history else None


class _JitResultOp:
    """The grad_fn of a jitted function's result that eager would have differentiable but
    that has no backward graph (backward.py gives every result with a history of the call
    one; what is left is rare: a tensor made inside the function with requires_grad=True
    and returned): backward through it says so instead of computing something else."""

    name = "em.jit"
    saves_output = False

    @staticmethod
    def vjp(*args, **kwargs):
        raise BackwardError(
            "backward() through the result of an em.jit function: the ops that made it ran "
            "in the compiled graph, and it has no backward graph. Call backward() inside "
            "the jitted function (a whole training step is one graph), or compute this "
            "result eagerly")


JIT_RESULT = GradNode(_JitResultOp, (), {}, None)


def _uninstall_dynamic(installed) -> list[str]:
    """Put the numbers back; returns the labels the function itself wrote meanwhile (its
    new value, made concrete, stays, as eager would leave it)."""
    written = []
    for holder, name, value, symbol, label in installed:
        now = guards_mod.read_holder(holder, name)
        if now is symbol:
            guards_mod.write_holder(holder, name, value)
        else:
            written.append(label)
            if isinstance(now, SymbolicScalar):
                guards_mod.write_holder(holder, name, now.value)
    return written


def _grad_type_failure(tensor: Tensor, expected) -> str | None:
    """Why ``tensor``'s .grad is not of the type the trace read (None: it is). The
    grad_none guard before this one has already checked it is a tensor."""
    kind, shape, dtype = expected
    data = tensor._grad._data
    if type(data) is not kind or data.shape != shape or data.dtype != dtype:
        return (f".grad of {_short(tensor)} was a {kind.__name__} {dtype}{list(shape)} "
                f"when traced, now a {type(data).__name__} {data.dtype}{list(data.shape)}")
    return None


def distinct_grads(refs, leaves) -> int:
    """How many memories the .grad tensors of ``refs`` live in (a guard compares it with
    the trace's count when the graph writes grads in place: two that became one memory,
    ``p1.grad is p2.grad``, would each be written once where eager writes it twice).
    Grads sharing a parameter's or optimizer state's memory are not looked for."""
    return _distinct([resolve(ref, leaves)._grad for ref in refs])


def _distinct(grads) -> int:
    owners = set()
    for grad in grads:
        data = grad._data
        base = data.base
        owners.add(id(data if base is None else base))
    return len(owners)


def _writes_a_grad(tracer) -> bool:
    """Does the function's graph write a .grad in place (clip_grad_norm_)?"""
    for segment in tracer.segments[:1]:  # (a function with breaks re-runs its Python)
        graph = segment.graph
        written = {node.inputs[0] for node in graph.nodes if node.op == ASSIGN}
        if any(src.kind == "grad" and node_id in written
               for node_id, src in zip(graph.inputs, segment.sources)):
            return True
    return False


def memory_owner(array):
    """The array owning ``array``'s memory (NumPy points a view's ``base`` at it)."""
    base = getattr(array, "base", None)
    return array if base is None else base


def resolve(ref, leaves) -> Tensor:
    """A tensor reference of a trace: ("arg", i) is this call's i-th tensor leaf."""
    return leaves[ref[1]] if isinstance(ref, tuple) else ref


def _wrap(array, requires_grad: bool = False) -> Tensor:
    t = object.__new__(Tensor)
    t._data = array
    t.requires_grad = requires_grad
    if requires_grad:
        t._grad_fn = JIT_RESULT
    return t


def _short(t: Tensor) -> str:
    return f"tensor {t.dtype}{list(t.shape)}"


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
        self.eager_fallbacks = 0           # calls run eagerly past the cache_size_limit
        self._warned_limit = False
        self._warned_unwatched = False      # python_writes.MAX_CONTAINERS reached
        self._break_costs: dict = {}        # id(ConcreteFunction) -> cache_policy.BreakCost
        self.name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or \
            type(fn).__qualname__  # a module or another callable object: its class
        self._cache: dict = {}               # signature key -> [ConcreteFunction]
        self._segments: dict[tuple, CompiledSegment] = {}  # (structural hash, backend)
        self._signature_ids: dict = {}
        self._fast = None  # the generated replay of the newest signature
        # (id(holder), name) -> (holder, name, label): numbers traced as graph inputs.
        self._dynamic: dict = {}
        _registry.add(self)
        if _kept is not None:
            _kept.append(self)
        self.retraces: list[Retrace] = []
        self.trace_count = 0
        self.compile_count = 0
        self._created = next(_creation_order)
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
        if reason is not None and self._warned_limit:
            return self._run_eagerly(args, kwargs, reason)  # (shapes no longer recorded)
        dynamic_dims = self._shapes.observe(signature)
        if reason is not None and self.cache_size_limit is not None and \
                len(self.concrete_functions) >= self.cache_size_limit:
            return self._run_eagerly(args, kwargs, reason)
        backend = self.backend
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
        if reason is not None:
            self.retraces.append(Retrace(reason, str(signature), time.perf_counter_ns()))
            if instrument._on_event:
                instrument.emit(instrument.Event("retrace", {
                    "function": self.name, "reason": reason, "signature": str(signature),
                }, time.perf_counter_ns(), time.perf_counter_ns()))
        cf, result = self._trace(args, kwargs, leaves, signature, backend=backend)
        self._cache.setdefault(signature.key, []).append(cf)
        self._latest_signature = signature
        # The newest signature gets the generated replay (a loop over shapes alternates).
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
        if cost.decided or instrument.is_listening():
            return self._trace(args, kwargs, leaves, signature, reuse=cf)[1]
        t0 = time.perf_counter_ns()
        if cost.wants_eager_sample():
            result = self.fn(*args, **kwargs)
            decision = cost.add_eager_sample(time.perf_counter_ns() - t0)
            if decision is not None and cache_policy.slower_than_eager(*decision):
                cache_policy.warn_slower(self.name, *decision, cf.breaks, cf.python_writes)
            return result
        result = self._trace(args, kwargs, leaves, signature, reuse=cf)[1]
        cost.jit_ns.append(time.perf_counter_ns() - t0)
        return result

    def _signature(self, structure, leaves) -> Signature:
        # Tensors sharing memory (one tensor passed twice, w and w.detach(), x and a view
        # of x) see each other's writes: the aliasing pattern keys the cache too (first
        # position of each leaf's memory, the array that owns it).
        first: dict = {}
        aliases = tuple(first.setdefault(id(memory_owner(t._data)), i)
                        for i, t in enumerate(leaves))
        described = tuple((t.shape, t.dtype, t.device, t.requires_grad, a)
                          for t, a in zip(leaves, aliases))
        return Signature(structure, described, dispatch.grad_enabled(), self._path_name)

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

    # --- tracing -------------------------------------------------------------------------
    def _trace(self, args, kwargs, leaves, signature, reuse=None, execute=True, backend=None):
        """Run the Python body under a tracer; returns (ConcreteFunction, result).
        ``backend``: the kernel backend for this trace's segments (a dynamic dimension's
        new size runs without compiled kernels); the function's own by default."""
        self.trace_count += 1
        labels = capture_labels(self.fn)
        # Graph ids name the function, its signature's number and the segment: "step#1:0".
        sig_index = self._signature_ids.setdefault(signature.key, len(self._signature_ids))
        run_segment = self._run_segment if backend in (None, self.backend) else \
            functools.partial(self._run_segment, backend=backend)
        tracer = Tracer(self.name, run_segment, labels,
                        {"split": False, "error": True, "bake": "bake"}[self.on_break], execute,
                        signature=str(signature), graph_prefix=f"{self.name}#{sig_index}")
        stand_ins, seen = [], {}
        for i, t in enumerate(leaves):  # one stand-in per tensor, however often it is passed
            if id(t) not in seen:
                seen[id(t)] = tracer.stand_in(t, i, signature.arg_names[i])
            stand_ins.append(seen[id(t)])
        # A module's (or a bound method's) own object is read like a static argument:
        # its flags and numbers are guarded (model.eval() retraces), its writes watched.
        code_fn, roots = state_roots(self.fn)
        statics = signature.statics + roots
        python_guards = guards_mod.collect(code_fn, statics)
        if len(python_guards) >= guards_mod.MAX_GUARDS:
            warnings.warn(f"em.jit({self.name}): the Python state it can read holds more than "
                          f"{guards_mod.MAX_GUARDS} values; changes past the first "
                          f"{guards_mod.MAX_GUARDS} are not watched between calls (pass "
                          "what changes as arguments)", cache_policy.JitWarning, stacklevel=4)
        # What the Python can write (python_writes.py): a re-run of a function known to
        # write runs its Python anyway, so only a first trace needs to look.
        before = None if reuse is not None else python_writes_mod.snapshot(
            code_fn, statics)
        if before is not None and not before.complete and not self._warned_unwatched:
            self._warned_unwatched = True
            warnings.warn(f"em.jit({self.name}): the Python state it can reach holds more "
                          f"than {python_writes_mod.MAX_CONTAINERS} containers; writes to "
                          "those past them would not be noticed (a replay would skip them)",
                          cache_policy.JitWarning, stacklevel=4)
        installed = self._install_dynamic(tracer)
        began = backward_mod.tape_clock()  # the autograd nodes this trace makes come after
        try:
            with tracer:
                (s_args, s_kwargs) = _replace_leaves((args, kwargs), stand_ins)
                result = self.fn(*s_args, **s_kwargs)
                out_leaves, out_structure = pytree.flatten(result)
                grad_entries = []  # (owner ref, new grad or None, grad first read)
                for owner, value in tracer.grad_state.values():
                    grad_entries.append((tracer.owner_ref(owner), value,
                                         tracer.grad_read.get(id(owner), _UNREAD)))
                # A .grad rebound to a tensor the trace made is a result; the .grad it read
                # and wrote in place (clip_grad_norm_) is not: it is a graph input, written
                # back into whatever tensor is the caller's .grad at each call.
                grads = [v for _, v, first in grad_entries
                         if v is not first and _traced_node(v, tracer) is not None]
                # Results eager would hand back differentiable: their backward graph, and
                # the values it reads, which the forward returns too ("saved").
                joint = backward_mod.prepare(
                    self, build_results, tracer, list(out_leaves), len(out_leaves) + len(grads),
                    f"{tracer.prefix}:{len(tracer.segments)}", backend, began)
                saved = joint.saved_tensors if joint is not None else []
                segment, specs = tracer.finish(list(out_leaves) + grads + saved)
                specs = backward_mod.take_saved_specs(joint, specs)
        except BaseException as exc:
            # An op error at trace time, after an op eager would have failed on first?
            # (any error: the Python after a failing gather may fail differently, e.g. on a
            # .grad that stayed None, where eager never got that far)
            first = tracer.value_error_so_far() if execute and isinstance(
                exc, Exception) else None
            tracer.abort()  # leave the user's tensors as they were
            _uninstall_dynamic(installed)
            if first is not None:
                raise first from None
            raise
        # .trace() that met a graph break ran its segments: finish as a call does (grads,
        # flags), or the state after it would differ from eager's.
        execute = tracer.execute
        python_writes = _uninstall_dynamic(installed)
        python_writes += [g.label for g in python_guards
                          if (id(g.holder), g.name) not in self._dynamic and g.failure()]
        # The snapshot's sentences name what changed and how; the guards' labels say the
        # same of what they watch (and stand in past the snapshot's limit).
        changes = before.changes() if before is not None else reuse.python_writes
        python_writes = list(dict.fromkeys(changes or python_writes))
        if joint is not None and joint.per_call:
            # Its results' gradients flow into histories that change at every call (a
            # capture rewritten from its own earlier value): re-run Python, so that each
            # call's backward links to that call's histories (backward.py).
            python_writes = list(dict.fromkeys(python_writes + [joint.per_call]))
        python_guards = [g for g in python_guards
                         if (id(g.holder), g.name) not in tracer.dynamic_reads
                         and (id(g.holder), g.name) not in self._dynamic]
        n_out = len(out_leaves)
        flag_writes = []
        for stand_in_id, i in tracer.stand_in_index.items():
            user = leaves[i]
            stand_in = tracer.user_stand_in.get(id(user))
            if stand_in is not None and id(stand_in) == stand_in_id and (
                    stand_in.requires_grad != user.requires_grad
                    or (stand_in._grad_fn is None) != (user._grad_fn is None)):
                flag_writes.append((("arg", i), stand_in.requires_grad,
                                    stand_in._grad_fn is not None))
        # A written capture's flags as the write left them, at every call: they depend
        # on the write, not on what they were before (g1[...] = w makes g1 take a history
        # whether or not an earlier call already did).
        for t, requires_grad, no_history in tracer.flags_before.values():
            took_history = t._grad_fn is not None
            if took_history or t.requires_grad != requires_grad or not no_history:
                flag_writes.append((t, t.requires_grad, took_history))
        grad_index = {id(v): n_out + k for k, v in enumerate(grads)}
        grad_writes = []
        for ref, value, first_read in grad_entries:
            if value is None:
                grad_writes.append((ref, None))
            elif value is first_read:
                # Read and never rebound (perhaps written in place: the assign node writes
                # the caller's current .grad). Rebinding it to the tensor seen while tracing
                # left a stale .grad at every replay (issue 38).
                continue
            elif id(value) in grad_index:
                grad_writes.append((ref, grad_index[id(value)]))
            # else: set before a graph break (now concrete): written below, not replayable,
            # which is fine, since a function with breaks re-runs its Python every call.
            elif execute:
                resolve(ref, leaves)._grad = value
        if execute:
            outputs = tracer.last_outputs
            results = build_results(specs, leaves, outputs) if outputs is not None else \
                [leaves[s[1]] if s[0] == "arg" else t for s, t in zip(specs, out_leaves)]
            for ref, j in grad_writes:
                resolve(ref, leaves)._grad = None if j is None else results[j]
            apply_flag_writes(flag_writes, leaves)
            if joint is not None and outputs is not None:
                joint.attach(results, leaves, outputs)
            # What the caller gets: graph results are fresh tensors (differentiable ones
            # share the call's node), returned arguments and captures the caller's own.
            result = pytree.unflatten(out_structure, results[:n_out])
        guards = [(tracer.owner_ref(owner), "grad_none", was_none)
                  for owner, was_none, _ in tracer.grad_guards.values()]
        # A tensor .grad is a graph input of the traced type (another shape or dtype
        # would reach compiled kernels), and one the graph writes in place must still
        # have memory of its own (p1.grad is p2.grad: eager scales it twice).
        guards += [(tracer.owner_ref(owner), "grad_type", kind)
                   for owner, _, kind in tracer.grad_guards.values() if kind is not None]
        if _writes_a_grad(tracer):
            owners = [o for o, none, _ in tracer.grad_guards.values() if not none]
            # Counted on the grads the call began with (it may have set some to None).
            entry = [tracer.grad_read[id(o)] for o in owners]
            guards.append((tracer.owner_ref(owners[0]), "grads_apart",
                           ([tracer.owner_ref(o) for o in owners], _distinct(entry))))
        guards += [(("arg", i), "strides", leaves[i]._data.strides) for i in tracer.layout_args]
        guards += [(("arg", i), "non_leaf", True) for i in tracer.non_leaf_args]
        # A capture that was an argument's memory (f(obj.buf) reading obj.buf) is one
        # graph input; a later call must pass it again, and, when the graph writes inputs,
        # no other capture may turn out to be an argument's memory.
        guards += [(t, "is_arg_memory", i) for t, i in tracer.arg_aliases.values()]
        if tracer.wrote_inputs:
            guards += [(t, "not_arg_memory", None) for t in tracer.captures_seen.values()]
        cf = reuse or ConcreteFunction(signature, tracer.segments, tracer.breaks, guards,
                                       out_structure, specs, n_out, grad_writes)
        cf.baked = list(tracer.baked)
        cf.python_guards, cf._python_check = python_guards + _capture_flag_guards(tracer), None
        # One guard per distinct answer (a loop over parameters asks `if decay:` often).
        cf.scalar_guards = list({(label, repr(answer)): (read, answer, label)
                                 for read, answer, label in tracer.scalar_guards}.values())
        cf.python_writes = python_writes
        cf.flag_writes = flag_writes
        cf.joint = joint
        if reuse is None and not tracer.breaks:
            cf.segments[0].output_tensors = []  # replay builds fresh outputs
        if reuse is not None:
            cf.segments, cf.breaks = tracer.segments, tracer.breaks
        self._last_tracer = tracer
        return cf, result

    def _install_dynamic(self, tracer) -> list:
        """Put a SymbolicScalar where each promoted number lives, for this trace."""
        installed = []
        for holder, name, label in self._dynamic.values():
            value = guards_mod.read_holder(holder, name)
            if not is_number(value):
                continue
            symbol = tracer.scalar_input(holder, name, label)
            try:
                guards_mod.write_holder(holder, name, symbol)
            except (AttributeError, TypeError):  # read-only: stays guarded by value
                continue
            installed.append((holder, name, value, symbol, label))
        return installed

    def _run_segment(self, segment: Segment, arrays: list, backend=None) -> list:
        compiled = self.compile_segment(segment.graph, backend)
        segment.compiled = compiled
        return run_plan(compiled.plan, arrays)

    def compile_segment(self, graph: Graph, backend=None) -> CompiledSegment:
        backend = backend or self.backend
        key = graph.structural_hash()
        hit = self._segments.get((key, backend))
        if hit is not None:
            return hit
        t0 = time.perf_counter_ns()
        lowered, record = lower_graph(graph, self.passes)
        plan = compile_graph(lowered, graph.name, backend)
        plan.source_graph, plan.record = graph, record
        compiled = CompiledSegment(graph, lowered, record, plan, key,
                                   time.perf_counter_ns() - t0)
        self._segments[(key, backend)] = compiled
        self.compile_count += 1
        if instrument._on_event:
            _emit_compiled(self.name, graph, compiled, t0)
        return compiled

    # --- stages --------------------------------------------------------------------------
    def trace(self, *args, **kwargs) -> Traced:
        """Trace without running (a function with graph breaks must run its segments)."""
        leaves, structure = pytree.flatten((args, kwargs))
        signature = self._signature(structure, leaves)
        cf, _ = self._trace(args, kwargs, leaves, signature, execute=False)
        return Traced(self, cf)

    def lower(self, *args, **kwargs) -> Lowered:
        """Trace, then run the passes: the optimized graph(s) and what each pass did."""
        return self.trace(*args, **kwargs).lower()


def _emit_compiled(function: str, graph: Graph, compiled: CompiledSegment, t0: int) -> None:
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


def _traced_node(t, tracer):
    """The node id computing ``t`` in the tracer's current segment, or None."""
    if isinstance(t, Tensor):
        d = t._data
        if getattr(d, "tracer", None) is tracer:
            return d.node_id
    return None


def _replace_leaves(tree, new_leaves):
    _, structure = pytree.flatten(tree)
    return pytree.unflatten(structure, new_leaves)


def capture_labels(fn) -> dict[int, str]:
    """Names for captured tensors: globals and closure variables the function reads, and
    the parameters and state of modules and optimizers among them."""
    from ..nn import Module
    from ..optim import Optimizer

    labels: dict[int, str] = {}
    scopes: dict = {}
    owner = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
    if isinstance(owner, Module):  # em.jit(model), em.jit(model.forward): "fc1.weight"
        for pname, p in owner.named_parameters():
            labels.setdefault(id(p), pname)
        for bname, b in owner.named_buffers():
            labels.setdefault(id(b), bname)
    code = getattr(fn, "__code__", None)
    if code is not None:
        g = getattr(fn, "__globals__", {})
        for name in code.co_names:
            if name in g:
                scopes[name] = g[name]
        if fn.__closure__:
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    scopes[name] = cell.cell_contents
                except ValueError:
                    pass
    # Module parameter names win over an optimizer's lists of the same tensors.
    ordered = sorted(scopes.items(), key=lambda kv: not isinstance(kv[1], Module | Tensor))
    for name, value in ordered:
        if isinstance(value, Tensor):
            labels.setdefault(id(value), name)
        elif isinstance(value, Module):
            for pname, p in value.named_parameters(prefix=f"{name}."):
                labels.setdefault(id(p), pname)
        elif isinstance(value, Optimizer):
            _label_tensors(labels, vars(value), name, depth=3)
    return labels


def _label_tensors(labels: dict, obj, path: str, depth: int) -> None:
    """Label the tensors an optimizer holds (``opt.state[0]['exp_avg']``, ``opt.m[0]``)."""
    if isinstance(obj, Tensor):
        labels.setdefault(id(obj), path)
        return
    if depth == 0:
        return
    if isinstance(obj, dict):
        for key, item in obj.items():
            if isinstance(key, str | int):
                sub = f"{path}.{key}" if depth == 3 else f"{path}[{key!r}]"
                _label_tensors(labels, item, sub, depth - 1)
    elif isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            _label_tensors(labels, item, f"{path}[{i}]", depth - 1)


# --- stage objects ----------------------------------------------------------------------

class Traced:
    """The result of ``f.trace(*args)``: the graph(s) as traced."""

    def __init__(self, jitted: JitFunction, cf: ConcreteFunction):
        self.jitted = jitted
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


_on_break_override: str | None = None


def override_on_break(mode: str | None) -> None:
    """Make every em.jit created from now on use ``on_break=mode`` whatever it asks for
    (``execmode explain --on-break bake`` shows what a plain tracer makes of a script);
    ``None`` gives each em.jit its own choice back."""
    global _on_break_override
    if mode not in (None, "split", "error", "bake"):
        raise ArgumentError(f"on_break must be 'split', 'error' or 'bake', got {mode!r}")
    _on_break_override = mode


def all_jit_functions() -> list[JitFunction]:
    """Every live jitted function, in creation order (with ``keep_jit_functions``
    active, every one made meanwhile, live or not)."""
    found = set(_registry) | set(_kept or ())
    return sorted(found, key=lambda f: f._created)


class keep_jit_functions:  # noqa: N801 - a context manager
    """Hold every jitted function created inside the block, so that a report made after
    it (``execmode explain SCRIPT``) lists those the script no longer references."""

    def __enter__(self):
        global _kept
        self._previous, _kept = _kept, []
        return self

    def __exit__(self, *exc):
        global _kept
        _kept = self._previous
        return False


def forget(jitted: JitFunction) -> None:
    """Leave ``jitted`` out of the reports (em.explain's throwaway copies)."""
    _registry.discard(jitted)
    if _kept is not None and jitted in _kept:
        _kept.remove(jitted)


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


__all__ = ["Compiled", "ConcreteFunction", "JitFunction", "Lowered", "Traced",
           "disable_jit", "jit"]
