"""The breakpoint condition language: a small grammar parsed with ``ast``, never eval'ed.

    nan                              the output has a NaN
    inf or max > 1e3                 any Inf, or a large maximum
    abs_max > 100 and op == "exp"    stats and metadata together
    shape[0] > 1024                  shape dims by index
    dtype == "float64"               metadata as strings
    mean < 0 and not finite

Names are tensor statistics (nan, inf, finite, min, max, mean, std, abs_max, sum,
nan_count, inf_count, size, ndim, shape) and op metadata (op, scope, dtype, device, file,
line). Only comparisons, and/or/not, unary minus, numbers, strings and ``shape[i]`` are
allowed; anything else is a ConditionError that says where and what was expected.
"""

from __future__ import annotations

import ast
import operator
import os

from ..errors import ExecmodeError

STAT_NAMES = {"nan", "inf", "finite", "min", "max", "mean", "std", "abs_max", "sum",
              "nan_count", "inf_count", "size", "ndim", "shape"}
META_NAMES = {"op", "scope", "dtype", "device", "file", "line"}
NAMES = STAT_NAMES | META_NAMES

_COMPARE = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}


class ConditionError(ExecmodeError, ValueError):
    """A malformed breakpoint condition; the message points at the column."""


def _fail(text: str, col: int, message: str):
    caret = " " * max(col, 0) + "^"
    raise ConditionError(f"{message} at column {col + 1}\n  {text}\n  {caret}")


class Condition:
    """A parsed condition; ``evaluate(ctx)`` reads names from ``ctx`` (a TensorStats)."""

    def __init__(self, text: str):
        self.text = text.strip()
        if not self.text:
            raise ConditionError("empty condition: expected e.g. nan, inf, max > 1e3")
        try:
            tree = ast.parse(self.text, mode="eval")
        except SyntaxError as exc:
            if not exc.offset:  # the text ended where more was expected
                _fail(self.text, len(self.text),
                      "unexpected end: expected a name or a number after the operator")
            _fail(self.text, exc.offset - 1,
                  f"syntax error ({exc.msg}): expected a comparison such as max > 1e3")
        self.names: set[str] = set()
        self._check(tree.body)
        self._tree = tree.body

    def __repr__(self) -> str:
        return f"Condition({self.text!r})"

    def _check(self, node) -> None:
        t = self.text
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And | ast.Or):
            for v in node.values:
                self._check(v)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
            self._check(node.operand)
        elif isinstance(node, ast.Compare):
            for op in node.ops:
                if type(op) not in _COMPARE:
                    _fail(t, node.col_offset, f"operator {type(op).__name__} is not allowed: "
                          "expected one of < <= > >= == !=")
            self._check(node.left)
            for c in node.comparators:
                self._check(c)
        elif isinstance(node, ast.Name):
            if node.id not in NAMES:
                _fail(t, node.col_offset, f"unknown name {node.id!r}: expected one of "
                      + ", ".join(sorted(NAMES)))
            self.names.add(node.id)
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, int | float | str) or isinstance(node.value, bool):
                _fail(t, node.col_offset, "expected a number or a string")
        elif isinstance(node, ast.Subscript):
            if not (isinstance(node.value, ast.Name) and node.value.id == "shape"):
                _fail(t, node.col_offset, "only shape[i] can be indexed")
            idx = node.slice
            if isinstance(idx, ast.UnaryOp) and isinstance(idx.op, ast.USub):
                idx = idx.operand
            if not (isinstance(idx, ast.Constant) and isinstance(idx.value, int)):
                _fail(t, node.col_offset, "shape[...] needs an integer index")
            self.names.add("shape")
        else:
            _fail(t, getattr(node, "col_offset", 0),
                  f"{type(node).__name__} is not allowed here: expected a comparison, a name, "
                  "a number, a string, and/or/not")

    def evaluate(self, ctx) -> bool:
        return bool(self._eval(self._tree, ctx))

    def _eval(self, node, ctx):
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                return all(self._eval(v, ctx) for v in node.values)
            return any(self._eval(v, ctx) for v in node.values)
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, ctx)
            return (not value) if isinstance(node.op, ast.Not) else -value
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, ctx)
            for op, right_node in zip(node.ops, node.comparators):
                right = self._eval(right_node, ctx)
                try:
                    if not _COMPARE[type(op)](left, right):
                        return False
                except TypeError:  # e.g. dtype > 3: a mismatch never holds
                    return False
                left = right
            return True
        if isinstance(node, ast.Name):
            return _lookup(ctx, node.id)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Subscript):
            shape = _lookup(ctx, "shape")
            idx = node.slice
            i = -idx.operand.value if isinstance(idx, ast.UnaryOp) else idx.value
            return shape[i] if -len(shape) <= i < len(shape) else None
        raise ConditionError(f"cannot evaluate {ast.dump(node)}")  # unreachable after _check


def _lookup(ctx, name):
    if name == "file":
        loc = ctx.location
        return os.path.basename(loc.filename) if loc else ""
    if name == "line":
        loc = ctx.location
        return loc.lineno if loc else 0
    return getattr(ctx, name)


def parse_index(text: str):
    """A user's index text ("[3, :10]", "0", "..., -1") as a NumPy index, never eval'ed."""
    src = text.strip()
    if src.startswith("[") and src.endswith("]"):
        src = src[1:-1]
    if not src:
        return ()
    try:
        tree = ast.parse(f"_[{src}]", mode="eval").body
    except SyntaxError as exc:
        raise ConditionError(f"bad index {text!r}: {exc.msg}") from None
    items = tree.slice.elts if isinstance(tree.slice, ast.Tuple) else [tree.slice]
    return tuple(_index_item(item, text) for item in items)


def _index_item(node, text):
    if isinstance(node, ast.Slice):
        return slice(*(None if v is None else _int(v, text) for v in (node.lower, node.upper,
                                                                        node.step)))
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return Ellipsis
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    return _int(node, text)


def _int(node, text):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_int(node.operand, text)
    if isinstance(node, ast.Constant) and isinstance(node.value, int) \
            and not isinstance(node.value, bool):
        return node.value
    raise ConditionError(f"bad index {text!r}: only integers, slices, None and ... are allowed")
