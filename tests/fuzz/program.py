"""A fuzz program: Python source text, kept as parts so the minimizer can drop them.

A program is a module-level *setup* (globals, a captured object, parameters, an
optimizer), a function ``f`` (straight-line statements and a ``return``), the line that
makes ``F`` (``F = em.jit(f, ...)`` under jit, ``F = f`` eagerly) and a list of *calls*:
each a few module-level statements (the arguments, and changes of state between calls)
then ``outK = F(...)``. ``render`` prints it as a script one can run or paste into a
regression test; ``parse`` reads such a script back (tests/fuzz/README in __init__.py).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace

from execmode.pysource import ast_lock

from .program_model import INEXACT_UNARY

PRELUDE = 'import execmode as em\n\nnan, inf = float("nan"), float("inf")\n'
SETUP_MARK = "# --- setup ---"
FUNCTION_MARK = "# --- function ---"
CALL_MARK = "# --- call {} ---"
_CALL_RE = re.compile(r"^# --- call (\d+) ---$")
_OPTIONS_RE = re.compile(r"^# fuzz options: (.*)$")


@dataclass(frozen=True)
class Stmt:
    """One statement (one line, or a one-line compound such as ``with ...: ...``)."""

    text: str
    tags: frozenset = frozenset()


@dataclass
class Call:
    before: list            # Stmt: module-level statements run before the call
    args: list              # argument expressions (names defined by ``before`` or globals)


@dataclass
class Program:
    setup: list                          # Stmt
    params: list                         # the function's parameter names
    body: list                           # Stmt
    returns: list                        # Stmt: the returned expressions
    calls: list                          # Call
    single_return: bool = False          # ``return a`` instead of ``return (a,)``
    passes: list | None = None           # em.jit(f, passes=...)
    backend: str | None = None           # em.jit(f, backend=...)
    listener: str | None = None          # None | "events" | "all"
    threads: bool = False                # two jitted instances from two threads
    seed: object = None                  # what generated it (for the messages)
    notes: dict = field(default_factory=dict)

    # --- what it uses --------------------------------------------------------------------
    def statements(self):
        yield from self.setup
        yield from self.body
        for call in self.calls:
            yield from call.before

    def tags(self) -> set:
        out = set()
        for s in list(self.statements()) + list(self.returns):
            out |= s.tags
        if self.passes is not None:
            out.add("passes_subsets")
        if self.backend is not None:
            out.add("backends")
        if self.listener:
            out.add("listener")
        if self.threads:
            out.add("threads")
        return out

    @property
    def exact(self) -> bool:
        """True when every float result must be bit-exact (see compare.py)."""
        return not any(is_inexact_text(s.text) for s in self.statements())

    @property
    def zero_sign_exact(self) -> bool:
        """False when a max/min reduction may meet 0.0 and -0.0 together: which zero it
        returns depends on the loop's vector lanes (NumPy's own SIMD loops and a compiled
        kernel's ``omp simd reduction(max)`` both pick either), so the sign of such a
        zero is not compared (fuzz 1795535866-2802)."""
        return not any(_MAX_MIN_REDUCTION.search(s.text) for s in self.statements())

    def copy(self, **changes) -> Program:
        changes.setdefault("passes", None if self.passes is None else list(self.passes))
        return replace(self, setup=list(self.setup), params=list(self.params),
                       body=list(self.body), returns=list(self.returns),
                       notes=dict(self.notes),
                       calls=[Call(list(c.before), list(c.args)) for c in self.calls],
                       **changes)

    # --- text ----------------------------------------------------------------------------
    def jit_line(self) -> str:
        kwargs = []
        if self.passes is not None:
            kwargs.append(f"passes={list(self.passes)!r}")
        if self.backend is not None:
            kwargs.append(f"backend={self.backend!r}")
        return "F = em.jit(f" + "".join(", " + k for k in kwargs) + ")"

    def function_text(self) -> str:
        lines = [f"def f({', '.join(self.params)}):"]
        declared = sorted(rebound_names(self.body) & bound_names(self.setup))
        if declared:
            lines.append("    global " + ", ".join(declared))
        lines.extend("    " + s.text for s in self.body)
        if self.single_return and len(self.returns) == 1:
            lines.append(f"    return {self.returns[0].text}")
        elif self.returns:
            items = ", ".join(r.text for r in self.returns)
            lines.append(f"    return ({items},)" if len(self.returns) == 1 else
                         f"    return {items}")
        else:
            lines.append("    return None")
        return "\n".join(lines) + "\n"

    def options_line(self) -> str:
        opts = []
        if self.listener:
            opts.append(f"listener={self.listener}")
        if self.threads:
            opts.append("threads=True")
        return "# fuzz options: " + " ".join(opts) if opts else ""

    def prelude_text(self) -> str:
        """Setup and function: what both modes execute first."""
        parts = [PRELUDE, SETUP_MARK]
        parts.extend(s.text for s in self.setup)
        parts.append("")
        parts.append(FUNCTION_MARK)
        parts.append(self.function_text())
        return "\n".join(parts)

    def call_text(self, k: int, callee: str = "F") -> str:
        call = self.calls[k]
        lines = [CALL_MARK.format(k + 1)]
        lines.extend(s.text for s in call.before)
        lines.append(f"out{k + 1} = {callee}({', '.join(call.args)})")
        return "\n".join(lines) + "\n"

    def render(self) -> str:
        """The whole program as a script (jit form; ``F = f`` runs it eagerly)."""
        head = self.options_line()
        parts = ([head] if head else []) + [self.prelude_text(), self.jit_line()]
        parts.extend(self.call_text(k) for k in range(len(self.calls)))
        return "\n".join(parts)

    __str__ = render


# --- reading the text --------------------------------------------------------------------

def _names(node, ctx) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _parse(text: str):
    # Under the AST lock: the threads of a threaded program render their text at once, and
    # CPython 3.11's AST construction is not thread-safe (execmode/pysource.py).
    with ast_lock:
        return ast.parse(text)


def bound_names(stmts) -> set:
    out = set()
    for s in stmts:
        tree = _parse(s.text)
        out |= _names(tree, ast.Store)
        out |= {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef | ast.FunctionDef)}
    return out


def rebound_names(stmts) -> set:
    """Names a statement of ``f`` binds (``g0 += 1``): globals among them need ``global``."""
    return bound_names(stmts)


# opt.step: an update chain (lr 0.5, momentum 0.5, gradients that accumulate over calls)
# adds fractional bits at every call until float32's 24 run out, and then the order of a
# sum decides the last bits: a kernel's float64 accumulator against NumPy's pairwise
# float32 (program 1795537145-6688: 600.40723 against 600.40741 in the third call).
# em.linalg: LAPACK's results, and their vjps' products summed in another order by a
# jitted backward's kernels (program 10606-2315: w.grad through inv off by an ulp).
# Any value that is not a small dyadic rational makes a later sum's last bit depend on
# the order of its terms, so every unary function the generator draws as inexact is here
# from its own table (program_model.INEXACT_UNARY: atan and asinh were missing, and
# atan(z) @ atan(z).T, a 4-term dot product in a generated kernel's order against
# NumPy's, differed in the last bit: program 20261198-2573), and em.fft (its twiddle
# factors are sines and cosines).
_INEXACT_NAMES = ("log1p", "expm1", "cos", "erf", "softmax", "gelu", "mean", "var", "std",
                  "reciprocal", "Adam", "power", "linalg", "fft") + INEXACT_UNARY
_INEXACT_CALLS = re.compile(
    r"\b(" + "|".join(_INEXACT_NAMES) + r")\b|/|\*\*|\bopt\.step\(")
_MAX_MIN_REDUCTION = re.compile(r"(\.|\bem\.)(max|min|amax|amin)\(")
_FLOAT = re.compile(r"(?<![\w.])(\d+\.\d*(?:e[-+]?\d+)?|\d+e[-+]?\d+)")


def is_inexact_text(text: str) -> bool:
    """Whether a statement may round: a transcendental, a division, a mean, a power, an
    optimizer step, or a float literal that is not a small multiple of 1/4 (0.1, 0.37,
    momentum=0.9)."""
    if _INEXACT_CALLS.search(text):
        return True
    if "complex" in text and "em.abs(" in text:
        return True  # a complex value's modulus is a hypot (more_dtypes.COMPLEX_TO_REAL)
    for m in _FLOAT.finditer(text):
        v = float(m.group(1))
        if v * 4 != int(v * 4) or abs(v) > 2**20:
            return True
    return False


def _segment(source: str, node) -> str:
    return ast.get_source_segment(source, node)


def _statements(source: str, nodes=None) -> list:
    """The top-level statements of ``source`` and its whole-line comments, in order."""
    nodes = _parse(source).body if nodes is None else nodes
    items = [(node.lineno, Stmt(_segment(source, node))) for node in nodes]
    covered = {i for node in nodes for i in range(node.lineno, node.end_lineno + 1)}
    for i, line in enumerate(source.splitlines(), start=1):
        if line.strip().startswith("#") and i not in covered:
            items.append((i, Stmt(line.strip())))
    return [stmt for _, stmt in sorted(items, key=lambda item: item[0])]


def parse(text: str) -> Program:
    """Read a rendered program back (a regression test pastes a repro and calls check)."""
    lines = text.splitlines()
    options = {}
    for line in lines:
        m = _OPTIONS_RE.match(line.strip())
        if m:
            for item in m.group(1).split():
                key, _, value = item.partition("=")
                options[key] = value
    try:
        i_setup = lines.index(SETUP_MARK)
        i_func = lines.index(FUNCTION_MARK)
    except ValueError:
        raise ValueError("not a fuzz program: the setup and function markers are missing") from None
    call_starts = [i for i, line in enumerate(lines) if _CALL_RE.match(line)]
    setup = _statements("\n".join(lines[i_setup + 1:i_func]))
    func_src = "\n".join(lines[i_func + 1:call_starts[0] if call_starts else len(lines)])
    tree = _parse(func_src)
    fdef = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    jit_assign = [n for n in tree.body if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == "F" for t in n.targets)]
    passes = backend = None
    if jit_assign and isinstance(jit_assign[0].value, ast.Call):
        for kw in jit_assign[0].value.keywords:
            if kw.arg == "passes":
                passes = ast.literal_eval(kw.value)
            elif kw.arg == "backend":
                backend = ast.literal_eval(kw.value)
    body, returns, single = [], [], False
    for node in fdef.body:
        if isinstance(node, ast.Global):
            continue
        if isinstance(node, ast.Return):
            if node.value is None or (isinstance(node.value, ast.Constant)
                                      and node.value.value is None):
                returns = []
            elif isinstance(node.value, ast.Tuple):
                returns = [Stmt(_segment(func_src, e)) for e in node.value.elts]
            else:
                returns, single = [Stmt(_segment(func_src, node.value))], True
            continue
        body.append(Stmt(_segment(func_src, node)))
    calls = []
    bounds = call_starts + [len(lines)]
    for a, b in zip(bounds, bounds[1:]):
        src = "\n".join(lines[a + 1:b])
        nodes = _parse(src).body
        last = nodes[-1]
        if not (isinstance(last, ast.Assign) and isinstance(last.value, ast.Call)
                and isinstance(last.value.func, ast.Name) and last.value.func.id == "F"):
            raise ValueError(f"call section must end with outK = F(...): {src!r}")
        before_src = "\n".join(src.splitlines()[:last.lineno - 1])
        calls.append(Call(_statements(before_src, nodes[:-1]),
                          [_segment(src, e) for e in last.value.args]))
    return Program(setup=setup, params=[a.arg for a in fdef.args.args], body=body,
                   returns=returns, calls=calls, single_return=single, passes=passes,
                   backend=backend, listener=options.get("listener"),
                   threads=options.get("threads") == "True", seed="parsed")
