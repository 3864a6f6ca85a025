"""One trace for every size of a dynamic dimension (dynamo's dynamic shapes, for the
plans that run their ops through NumPy).

A dimension of an argument that took a second size is dynamic (cache_policy.py). The next
traces of that signature's *shape family* (the same ranks, dtypes and static sizes) make
the dimension a symbolic size (symbolic_sizes.SymInt, ``s0``): ``x.shape[1]`` is ``s0``,
``pos[:t]`` and ``em.ones(t, t)`` keep it in their attributes, and comparisons record
their answers. When two such traces at different sizes give the same graph, as traced and
as lowered (every node's op, operands, attributes and shape written with the symbols), the
graph is trusted to be the function's at every size that answers the recorded comparisons
the same way, stays apart from 0 and 1, and equals the same other symbols: one plan over NumPy
then serves all of them, resolving the symbolic attributes per call, without tracing.

Where the two graphs differ (a Python loop over ``range(t)``, ``len(x)`` or ``int(t)``
baked into an attribute, a size used as an operand ``x * t``) or the trace has what a
replay cannot serve at another size (graph breaks, Python writes, a backward, results that
are views), the function keeps tracing per size, and the retrace reason says why.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..graph import pytree
from ..graph.ir import FUSED, Graph, Literal
from ..symbolic_sizes import SizeEnv, SymInt, sizes_bound, text, value_text
from .float_errors import run_plan
from .results import build_results

MISS = object()
_MAX_SYMBOLS = 8
_MAX_CANDIDATES = 4  # symbolic traces kept per family, waiting for one that agrees
_MAX_DIFFERENCES = 6  # traces unlike every candidate before a family traces per size for good


class SizeGeneric:
    """A trace that serves every size of its shape family that passes its guard."""

    def __init__(self, cf, plan, symbols, check, labels):
        self.cf, self.plan, self.symbols = cf, plan, symbols
        self.check = check            # sizes -> bool: the recorded answers and orders hold
        self.labels = labels          # "idx dim 1" per symbol
        self.calls = 0

    def replay(self, leaves):
        sizes = tuple(leaves[i]._data.shape[d] for i, d in self.symbols)
        try:
            if not self.check(sizes):
                return MISS
        except (ArithmeticError, ValueError):
            return MISS
        cf = self.cf
        segment = cf.segments[0]
        with sizes_bound(sizes):  # (a size read as a number reads this call's)
            # The globals, attributes and numbers' answers (one compiled check, as the
            # fast replays ask), then the tensor guards.
            if not cf.python_state_holds():
                return MISS
            for guard in cf.guards:
                if guard.failure(leaves) is not None:
                    return MISS
            arrays = [src.read(leaves) for src in segment.sources]
            outputs = run_plan(self.plan, arrays)
            results = build_results(cf.result_specs, leaves, outputs)  # (views: this size)
        self.calls += 1
        return pytree.unflatten(cf.out_structure, results[:cf.n_out])


class _Candidate:
    def __init__(self, texts, sizes, order, guards):
        self.texts, self.sizes, self.order, self.guards = texts, sizes, order, guards


def _same_answers(a: dict, b: dict) -> bool:
    """Did two traces answer every comparison they both made the same way?"""
    return all(b.get(k, v) == v for k, v in a.items())


class DynamicSizes:
    """A jitted function's size-generic traces, by shape family."""

    def __init__(self):
        self.generic: dict = {}       # family key -> [SizeGeneric] (one per decisions)
        self.candidates: dict = {}    # family key -> [_Candidate]: symbolic traces so far
        self.refused: dict = {}       # family key -> why it keeps tracing per size
        self.differences: dict = {}   # family key -> pairs of traces that differed

    # --- tracing ---------------------------------------------------------------------------
    @staticmethod
    def symbols_for(signature, dynamic_dims) -> list[tuple[int, int]]:
        """(leaf index, dim) of the dynamic dimensions to trace symbolically: sizes 0 and 1
        stay specialized (broadcasting and empty results depend on them, as in torch)."""
        index = {name: i for i, name in reversed(list(enumerate(signature.arg_names)))}
        out = []
        for name, dim in dynamic_dims:
            i = index.get(name)
            if i is not None and signature.leaves[i][0][dim] >= 2:
                out.append((i, dim))
        return out[:_MAX_SYMBOLS]

    @staticmethod
    def install(tracer, signature, symbols) -> SizeEnv:
        """Give the tracer's stand-ins their symbolic sizes."""
        labels = [f"{signature.arg_names[i]} dim {d}" for i, d in symbols]
        env = SizeEnv(labels)
        dims: dict = {}
        for k, (i, d) in enumerate(symbols):
            symbol = SymInt(signature.leaves[i][0][d], f"s[{k}]", env)
            dims.setdefault(i, {})[d] = symbol
            env.symbols.append(symbol)
        tracer.symbolic_dims, tracer.size_env = dims, env
        return env

    def family_key(self, signature, symbols):
        wild = set(symbols)
        leaves = tuple((tuple(None if (i, d) in wild else size
                              for d, size in enumerate(leaf[0])),) + tuple(leaf[1:])
                       for i, leaf in enumerate(signature.leaves))
        return (signature.structure, leaves, signature.grad_enabled, tuple(symbols))

    def observe(self, cf, tracer, signature, symbols, backend) -> str:
        """After a symbolic trace: keep it as a candidate, or promote it when it agrees
        with a candidate traced at another size that decided every recorded comparison
        the same way. Returns what happened, for the retrace's reason."""
        env = tracer.size_env
        env.open = False
        key = self.family_key(signature, symbols)
        names = ", ".join(env.labels)
        if key in self.refused:
            return f"; {names} traced per size: {self.refused[key]}"
        why = _unservable(cf, tracer, backend)
        if why is not None:
            self.refused[key] = why
            return f"; {names} traced per size: {why}"
        sizes = tuple(signature.leaves[i][0][d] for i, d in symbols)
        lowered = cf.segments[0].compiled.lowered
        statics = _static_sizes(lowered)
        order = _order(sizes, statics)
        texts = _graph_texts(cf, lowered)
        candidates = self.candidates.setdefault(key, [])
        alike = [c for c in candidates if c.order == order and c.sizes != sizes
                 and _same_answers(c.guards, env.guards)]
        before = next((c for c in alike if c.texts == texts), None)
        if before is None:
            candidates.append(_Candidate(texts, sizes, order, dict(env.guards)))
            del candidates[:-_MAX_CANDIDATES]
            if not alike:
                return f"; {names} traced with symbolic sizes (served at every size once " \
                       "a trace at another size gives the same graph)"
            # A size that coincided with a number of the program (t == 2 in x[::2])
            # differs once; a graph that depends on the size differs every time.
            why = (f"the graph at sizes {alike[-1].sizes} and at {sizes} differ "
                   f"({_first_difference(alike[-1].texts, texts)})")
            self.differences[key] = self.differences.get(key, 0) + 1
            if self.differences[key] >= _MAX_DIFFERENCES:
                self.refused[key] = why
                self.candidates.pop(key, None)
            return f"; {names} traced per size: {why}"
        # Every comparison either trace recorded (they answered the shared ones alike): a
        # size the check serves must answer all of them as both traces did.
        check = _compile_check({**before.guards, **env.guards}, statics, order)
        self.generic.setdefault(key, []).append(SizeGeneric(
            cf, _generic_plan(lowered), list(symbols), check, env.labels))
        candidates.remove(before)
        return f"; {names}: one graph now serves every size (two traces agree)"

    def traces_per_size(self, signature, symbols) -> bool:
        """Has this call's family given up on one graph for every size?"""
        return self.family_key(signature, symbols) in self.refused

    # --- calling ---------------------------------------------------------------------------
    def replay(self, signature, leaves):
        """The result from a size-generic trace of this call's family, or MISS."""
        for key, entries in self.generic.items():
            if key[0] == signature.structure and key[2] == signature.grad_enabled and \
                    _in_family(key[1], signature.leaves):
                for entry in entries:
                    out = entry.replay(leaves)
                    if out is not MISS:
                        return out
        return MISS


def _in_family(family_leaves, leaves) -> bool:
    if len(family_leaves) != len(leaves):
        return False
    for fam, leaf in zip(family_leaves, leaves):
        shape = leaf[0]
        if fam[1:] != leaf[1:] or len(fam[0]) != len(shape):
            return False
        for want, size in zip(fam[0], shape):
            if want is not None and want != size:
                return False
    return True


def _unservable(cf, tracer, backend) -> str | None:
    """Why this trace cannot serve other sizes, or None."""
    if len(cf.segments) != 1 or cf.breaks:
        return "the function has graph breaks"
    if cf.python_writes:
        return "the function writes Python state"
    if cf.joint is not None or cf.grad_writes or cf.flag_writes:
        return "its results need a backward graph or it writes .grad"
    if tracer.baked:
        return "values were baked into the graph (on_break='bake')"
    if backend != "numpy":
        return f"its kernels ({backend}) are compiled for the traced sizes"
    spec = cf.out_spec
    if spec is None or any(kind not in ("out", "out_view", "arg", "const", "same")
                           for kind, _ in spec):
        return "a result has a history or is a view of an input, rebuilt per size"
    plan = cf.segments[0].compiled.plan
    if plan.collectives:
        return "the graph has collectives"
    return None


def _static_sizes(lowered: Graph) -> tuple:
    """The plain sizes a symbol must stay apart from: 0 and 1 (empty results and
    broadcasting depend on them). Equal to another static size (``t == C``) it runs the
    same ops, which NumPy computes as eager does; a decision the tracer or a pass made
    on that equality compared the SymInt, and is a recorded answer."""
    return (0, 1)


def _order(sizes: tuple, statics: tuple) -> tuple:
    """Which static sizes and which other symbols each size equals (broadcasting, and
    what the passes made of equal shapes, depend on it; order does not: NumPy clamps a
    slice past a static length at every size, as eager does)."""
    return tuple((tuple(s == c for c in statics), tuple(s == o for o in sizes))
                 for s in sizes)


def _compile_check(guards: dict, statics: tuple, order: tuple):
    """One function of the sizes: every recorded comparison answers as traced, and each
    size equals the static sizes and the other symbols it equalled."""
    terms = []
    for (left, op, right), answer in guards.items():
        terms.append(f"(({left}) {op} ({right})) is {answer!r}")
    for k, (against_statics, against_symbols) in enumerate(order):
        for c, equal in zip(statics, against_statics):
            terms.append(f"s[{k}] {'==' if equal else '!='} {c}")
        for j, equal in enumerate(against_symbols):
            if j != k:
                terms.append(f"s[{k}] {'==' if equal else '!='} s[{j}]")
    body = " and ".join(dict.fromkeys(terms)) or "True"
    return eval(compile(f"lambda s: {body}", "<size guard>", "eval"))  # noqa: S307 - our own text


def _generic_plan(lowered: Graph):
    """The lowered graph's plan with no pooled buffers (their sizes are the traced ones):
    each step allocates its result, as NumPy does for every size."""
    from ..plan import build_plan

    graph = lowered.copy()
    graph.meta = {k: v for k, v in lowered.meta.items() if k != "memory_plan"}
    return build_plan(graph, f"{lowered.name}:sizes", None)


# --- comparing two traces ----------------------------------------------------------------
def _graph_texts(cf, lowered: Graph) -> list[str]:
    """The traces' graphs as text with sizes written symbolically, line per node."""
    segment = cf.segments[0]
    lines = [_node_lines(segment.graph, "traced"), _node_lines(lowered, "lowered")]
    flat = [line for part in lines for line in part]
    flat.append("sources: " + "; ".join(
        f"{s.kind} {s.leaf_index} {id(s.tensor) if s.tensor is not None else ''} "
        f"{s.label if s.scalar is not None else ''}" for s in segment.sources))
    flat.append("results: " + value_text(tuple(tuple(s) for s in cf.result_specs)))
    return flat


def _node_lines(graph: Graph, part: str) -> list[str]:
    renumber: dict = {}
    out = []
    for n in graph.nodes:
        renumber[n.id] = len(renumber)
        out.append(f"{part} {_node_text(n, renumber)}")
    out.append(f"{part} in {[renumber[i] for i in graph.inputs]} "
               f"out {[renumber[i] for i in graph.outputs]}")
    return out


def _node_text(n, renumber: dict) -> str:
    ins = ",".join(f"%{renumber[i]}" if isinstance(i, int) else
                   f"lit{value_text(i.value) if isinstance(i, Literal) else i!r}"
                   for i in n.inputs)
    attrs = ",".join(f"{k}={_attr_text(v)}" for k, v in n.attrs)
    body = ""
    if n.op == FUSED:
        inner = dict(renumber)
        parts = []
        for m in n.body:
            inner[m.id] = len(inner)
            parts.append(_node_text(m, inner))
        body = "{" + ";".join(parts) + "}"
    return f"{n.op}({ins})[{attrs}]:{value_text(tuple(n.shape))}:{n.dtype.str}@{n.device}{body}"


def _attr_text(v) -> str:
    if isinstance(v, np.ndarray):
        return hashlib.sha256(v.tobytes() + str(v.dtype).encode()).hexdigest()[:16]
    return value_text(v)


def _first_difference(a: list, b: list) -> str | None:
    if a == b:
        return None
    for x, y in zip(a, b):
        if x != y:
            return f"{text(x)[:120]} vs {text(y)[:120]}"
    return f"{len(a)} vs {len(b)} lines"


__all__ = ["MISS", "DynamicSizes", "SizeGeneric"]
