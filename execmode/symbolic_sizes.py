"""Sizes that stay symbolic while tracing (dynamo's SymInt), so that one trace serves
every size of a dynamic dimension.

When em.jit traces a call whose argument has a dynamic dimension (it took a second size),
that dimension of the argument's stand-in is a :class:`SymInt`: an ``int`` subclass that
holds the traced size *and* an expression over the call's sizes (``s0``). Being an int,
everything that needs a number (NumPy, shape rules, ``range``) gets the traced one; being
a SymInt, arithmetic on it (``t + 1``, ``t * t``, ``t // 2``) gives another SymInt, and an
attribute that holds it (``pos[:t]``'s slice, ``em.ones(t, t)``'s shape, a reshape) is
evaluated anew for each call's sizes when a size-generic plan runs
(:func:`resolve`, under :func:`sizes_bound`).

A comparison (``t > 8``, ``t == other``, a shape rule's ``d == 1``) answers for the traced
size and records its answer in the trace's :class:`SizeEnv`: the size-generic replay
checks every recorded answer against the call's sizes and retraces where one differs
(the Python control flow it decided may differ). What escapes as a plain int (``len(x)``,
``int(t)``, a shape rule that computes through NumPy) is not followed: the jit only
trusts a symbolic trace once a second trace at another size gives the same graph, so a
size baked into the graph shows up as a difference and stops the size-generic replay
(jit_driver/symbolic_dims.py), never as a wrong value.

The expressions are Python over ``s`` (the tuple of symbol values), compiled once each;
their text names symbols ``s0``, ``s1``.
"""

from __future__ import annotations

import operator
import re
import threading

_compiled: dict = {}
_BASE = re.compile(r"s\[\d+\]")  # a symbol itself, not an expression of symbols
_bound = threading.local()  # .sizes: the sizes a size-generic plan runs with now


class SizeEnv:
    """The symbols of one trace and the answers its comparisons gave."""

    def __init__(self, labels: list[str]):
        self.labels = labels            # "idx dim 1" per symbol
        self.symbols: list = []         # the SymInts s0, s1 ... themselves
        self.guards: dict = {}          # (left expr, op, right expr) -> answer
        self.open = True                # answers after the trace are not its decisions

    def record(self, left: str, op: str, right: str, answer: bool) -> None:
        if self.open:
            self.guards.setdefault((left, op, right), answer)


class SymInt(int):
    """An int seen while tracing that is a function of the call's dynamic sizes."""

    def __new__(cls, value: int, expr: str, env: SizeEnv):
        obj = int.__new__(cls, value)
        obj.expr = expr
        obj.env = env
        return obj

    # --- staying symbolic ----------------------------------------------------------------
    def _arith(self, other, symbol: str, fn, reflected=False):
        if isinstance(other, SymInt):
            other_expr = other.expr
        elif other.__class__ is int:
            other_expr = repr(other)
        else:
            return fn(int(self), other) if not reflected else fn(other, int(self))
        value = fn(int(self), int(other)) if not reflected else fn(int(other), int(self))
        expr = f"({self.expr} {symbol} {other_expr})" if not reflected else \
            f"({other_expr} {symbol} {self.expr})"
        return SymInt(value, expr, self.env)

    def __add__(self, o): return self._arith(o, "+", operator.add)               # noqa: E704
    def __radd__(self, o): return self._arith(o, "+", operator.add, True)        # noqa: E704
    def __sub__(self, o): return self._arith(o, "-", operator.sub)               # noqa: E704
    def __rsub__(self, o): return self._arith(o, "-", operator.sub, True)        # noqa: E704
    def __mul__(self, o): return self._arith(o, "*", operator.mul)               # noqa: E704
    def __rmul__(self, o): return self._arith(o, "*", operator.mul, True)        # noqa: E704
    def __floordiv__(self, o): return self._arith(o, "//", operator.floordiv)    # noqa: E704
    def __rfloordiv__(self, o): return self._arith(o, "//", operator.floordiv, True)  # noqa: E704,E501
    def __mod__(self, o): return self._arith(o, "%", operator.mod)               # noqa: E704
    def __rmod__(self, o): return self._arith(o, "%", operator.mod, True)        # noqa: E704

    def __neg__(self):
        return SymInt(-int(self), f"(-{self.expr})", self.env)

    def __pos__(self):
        return self

    # --- answers, each recorded ----------------------------------------------------------
    def _compare(self, other, symbol: str, fn):
        if isinstance(other, SymInt):
            right = other.expr
        elif isinstance(other, int | float) and not isinstance(other, bool):
            right = repr(other)
        else:
            return NotImplemented
        answer = fn(int(self), other if not isinstance(other, SymInt) else int(other))
        if symbol in ("==", "!=") and answer == (symbol == "==") and \
                not isinstance(other, SymInt):
            # Equal to a plain number: a dict or cache lookup keyed by a shape asks this
            # of every entry whose hash matches, so it is not recorded. A decision on it
            # (``if t == 3``) holds at one size only: a second trace at another size
            # took the other branch, and the graphs differ where it mattered.
            return answer
        self.env.record(self.expr, symbol, right, answer)
        return answer

    def __eq__(self, o): return self._compare(o, "==", operator.eq)   # noqa: E704
    def __ne__(self, o): return self._compare(o, "!=", operator.ne)   # noqa: E704
    def __lt__(self, o): return self._compare(o, "<", operator.lt)    # noqa: E704
    def __le__(self, o): return self._compare(o, "<=", operator.le)   # noqa: E704
    def __gt__(self, o): return self._compare(o, ">", operator.gt)    # noqa: E704
    def __ge__(self, o): return self._compare(o, ">=", operator.ge)   # noqa: E704

    def __bool__(self):
        answer = int(self) != 0
        self.env.record(self.expr, "!=", "0", answer)
        return answer

    __hash__ = int.__hash__

    def __float__(self):
        # A float of the size (float(t // 3), a correction or a scale read as a number)
        # leaves the symbols: what follows holds for this value only, so the replay checks
        # it (another value traces again), as dynamo specializes a SymInt made concrete.
        # (int() and indexing cannot be followed alike: int's own conversions skip them.)
        value = int(self)
        decides_equal(self, value)
        return float(value)

    def __reduce__(self):  # a graph stored or copied holds the traced number
        return int, (int(self),)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def decides_equal(value, number: int) -> bool:
    """``value == number``, recorded as a decision where ``value`` is a SymInt, equal or
    not: a shortcut taken on it (``repeat``'s count of 1) holds at this value only.
    (``==`` with a plain number is not recorded when true: SymInt._compare says why.)"""
    if isinstance(value, SymInt):
        answer = int(value) == number
        value.env.record(value.expr, "==", repr(number), answer)
        return answer
    return value == number


def decides_same(a: tuple, b: tuple) -> bool:
    """``a == b`` for two shapes, each size's equality with a plain number recorded as
    a decision (decides_equal): a shortcut taken on it (``broadcast_to`` or ``reshape``
    to the shape it has returns its input) holds at these sizes only."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, SymInt) and not isinstance(y, SymInt):
            same = decides_equal(x, y)
        elif isinstance(y, SymInt) and not isinstance(x, SymInt):
            same = decides_equal(y, x)
        else:
            same = x == y
        if not same:
            return False
    return True


def evaluate(expr: str, sizes: tuple) -> int:
    fn = _compiled.get(expr)
    if fn is None:
        fn = _compiled[expr] = eval(compile(f"lambda s: {expr}", "<size>", "eval"))  # noqa: S307 - our own text
    return fn(sizes)


def text(expr: str) -> str:
    """``(s[0] + 1)`` as people read it: ``(s0 + 1)``."""
    return re.sub(r"s\[(\d+)\]", r"s\1", expr)


def value_text(value) -> str:
    """A value with its symbolic sizes named (for comparing traces and for errors)."""
    if isinstance(value, SymInt):
        return text(value.expr)
    if isinstance(value, tuple | list):
        inner = ",".join(value_text(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if isinstance(value, slice):
        return f"slice({value_text(value.start)},{value_text(value.stop)},{value_text(value.step)})"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{value_text(v)}" for k, v in value.items()) + "}"
    return repr(value)


def has_symbolic(value) -> bool:
    """Does ``value`` (an attribute: a shape, an index, a slice, nested) hold a SymInt?"""
    if isinstance(value, SymInt):
        return True
    if isinstance(value, tuple | list):
        return any(has_symbolic(v) for v in value)
    if isinstance(value, slice):
        return has_symbolic(value.start) or has_symbolic(value.stop) or \
            has_symbolic(value.step)
    if isinstance(value, dict):
        return any(has_symbolic(v) for v in value.values())
    return False


def resolve(value, sizes: tuple | None = None):
    """``value`` with each SymInt replaced by its plain int for ``sizes`` (default: the
    sizes bound now, else the traced ones)."""
    if sizes is None:
        sizes = getattr(_bound, "sizes", None)
    if isinstance(value, SymInt):
        return int(value) if sizes is None else evaluate(value.expr, sizes)
    if isinstance(value, tuple):
        return tuple(resolve(v, sizes) for v in value)
    if isinstance(value, list):
        return [resolve(v, sizes) for v in value]
    if isinstance(value, slice):
        return slice(resolve(value.start, sizes), resolve(value.stop, sizes),
                     resolve(value.step, sizes))
    if isinstance(value, dict):
        return {k: resolve(v, sizes) for k, v in value.items()}
    return value


def bound_sizes() -> tuple | None:
    return getattr(_bound, "sizes", None)


class sizes_bound:  # noqa: N801 - used as a context manager, like a function
    """Run a size-generic plan with these sizes: symbolic attributes resolve to them."""

    __slots__ = ("sizes", "before")

    def __init__(self, sizes: tuple):
        self.sizes = sizes

    def __enter__(self):
        self.before = getattr(_bound, "sizes", None)
        _bound.sizes = self.sizes
        return self

    def __exit__(self, *exc):
        _bound.sizes = self.before
        return False


def _symbols_among(operands, attrs: dict, env: SizeEnv | None = None) -> tuple[dict, set]:
    """value -> SymInt of the symbolic sizes among the operands' shapes and attributes
    (and ``env``'s own symbols), and the plain sizes there (a value that is both is
    ambiguous)."""
    found: dict = {}
    plain: set = set()

    def visit(v):
        if isinstance(v, SymInt):
            other = found.setdefault(int(v), v)
            if other.expr != v.expr:
                if _BASE.fullmatch(other.expr) and _BASE.fullmatch(v.expr):
                    # Two symbols of one value (duck sizing): the guard keeps them equal,
                    # so either names it; the first, whatever the order met.
                    found[int(v)] = min(other, v, key=lambda x: int(x.expr[2:-1]))
                else:
                    plain.add(int(v))
        elif v.__class__ is int:
            plain.add(v)
        elif isinstance(v, tuple | list):
            for x in v:
                visit(x)
        elif isinstance(v, slice):
            visit(v.start)
            visit(v.stop)
            visit(v.step)

    if env is not None:
        for symbol in env.symbols:
            visit(symbol)
    for x in operands:
        dims = getattr(x, "shape", None)
        if dims is not None:
            visit(tuple(dims))
    for v in attrs.values():
        visit(v)
    return found, plain


def attach_attrs(attrs: dict, operands, env: SizeEnv) -> dict:
    """An op's size attributes with the plain ints that equal exactly one symbolic size
    given its expression: the front ends normalize ``pos[:t]``'s bounds and ``ones(t, t)``'s
    shape with ``int()``, which drops the symbol. Only sizes are looked at (a ``shape``, a
    slice's bounds in an ``index``), never axes or integer indices; a second trace at
    another size checks every attachment (a coincidence there is a difference)."""
    shape, index = attrs.get("shape"), attrs.get("index")
    if not (isinstance(shape, tuple) or isinstance(index, tuple)):
        return attrs
    found, plain = _symbols_among(operands, {}, env)
    if isinstance(shape, tuple) and operands and hasattr(operands[0], "shape"):
        # A reshape's sizes are often products of the operand's (x.reshape(t * C)).
        dims = tuple(operands[0].shape)
        for i in range(len(dims)):
            run = dims[i]
            for j in range(i + 1, len(dims)):
                run = run * dims[j]
                if isinstance(run, SymInt):
                    found.setdefault(int(run), run)
    if not found:
        return attrs

    def size(d):
        return found[d] if d.__class__ is int and d in found and d not in plain else d

    out = dict(attrs)
    if isinstance(shape, tuple):
        out["shape"] = tuple(size(d) for d in shape)
    if isinstance(index, tuple):
        out["index"] = tuple(  # (a slice's bounds; never its step)
            ("slice", size(item[1]), size(item[2]), item[3])
            if isinstance(item, tuple) and len(item) == 4 and item[0] == "slice" else item
            for item in index)
    return out


def _slice_bound(i, d, default):
    """A slice bound (step > 0) within 0 .. d, as slice.indices gives it."""
    if i is None:
        return default
    if i < 0:
        i = i + d
        return 0 if i < 0 else i
    return d if i > d else i


def sliced_length(d, start, stop, step):
    """``len(range(d)[start:stop:step])`` with symbolic sizes staying symbolic (Python's
    slice.indices, step > 0); its comparisons are recorded like any other."""
    step = 1 if step is None else step
    if step <= 0:
        return None
    start = _slice_bound(start, d, 0)
    stop = _slice_bound(stop, d, d)
    if stop <= start:
        return 0
    return (stop - start + (step - 1)) // step


def getitem_shape(shape: tuple, index: tuple):
    """The shape of ``x[index]`` (ints, slices, None, Ellipsis) with symbolic sizes kept;
    None where an index tensor takes part (the rule's plain answer stands)."""
    if any(item[0] not in ("int", "slice", "none", "ellipsis") for item in index):
        return None
    used = sum(item[0] in ("int", "slice") for item in index)
    out, dim = [], 0
    for item in index:
        kind = item[0]
        if kind == "none":
            out.append(1)
        elif kind == "ellipsis":
            keep = len(shape) - used
            out.extend(shape[dim:dim + keep])
            dim += keep
        elif kind == "int":
            dim += 1
        else:
            length = sliced_length(shape[dim], *item[1:])
            if length is None:
                return None
            out.append(length)
            dim += 1
    out.extend(shape[dim:])
    return tuple(out)


def attach(shape: tuple, operands, attrs: dict, op_name: str = "") -> tuple:
    """A shape rule's result with its plain dims that equal exactly one symbolic size among
    the operands' shapes and the attributes given that size's expression (rules that
    compute through NumPy or ``slice.indices`` hand back plain ints). A value that is also
    a plain size of an operand is ambiguous and stays plain; a second trace at another size
    checks every attachment (jit_driver/symbolic_dims.py)."""
    if op_name == "getitem" and operands and hasattr(operands[0], "shape"):
        symbolic = getitem_shape(tuple(operands[0].shape), attrs["index"])
        if symbolic is not None and len(symbolic) == len(shape) and \
                all(int(a) == int(b) for a, b in zip(symbolic, shape)):
            return tuple(b if isinstance(b, SymInt) or not isinstance(a, SymInt) else a
                         for a, b in zip(symbolic, shape))
    found, plain = _symbols_among(operands, attrs)
    if not found:
        return shape
    return tuple(found[d] if d.__class__ is int and d in found and d not in plain else d
                 for d in shape)


__all__ = ["SizeEnv", "SymInt", "attach", "attach_attrs", "evaluate", "has_symbolic", "resolve",
           "sizes_bound", "text", "value_text"]
