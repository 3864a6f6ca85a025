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

Any other name is a **Python value of the frame where the op runs** (its locals, then its
globals), as are attributes and constant subscripts of one: ``nan and step > 100``,
``opt.lr < 1e-3``, ``losses[-1] > 2``, ``model.training == False``. Their type is known only
at run time, so a Python value may be compared with anything and tested for truth, but
not ordered against a string or true/false, and not be a whole condition alone (``nann``
is refused with "did you mean nan?", not silently a Python name). At run time a name the
frame lacks, or a tensor of more than one element, is missing: comparisons with it are
false. A one-element tensor reads as its number. Python values are read, never called.

Conditions are **typed when parsed**: nan/inf/finite are true/false, op/scope/dtype/device/
file are strings, the rest numbers. ``-op``, ``max and 3``, ``op == 3``, ``dtype < "f"``,
``op == "ad"`` (no such op) or a bare ``max`` are refused with the column of the mistake,
before the script runs. A condition has at most ``MAX_LENGTH`` characters and
``MAX_DEPTH`` levels of nesting: it is evaluated after every op, inside the script's own
stack. At run time a value may still be missing (``min`` of an empty tensor,
``shape[3]`` of a matrix): a comparison with it is false. Should evaluation fail anyway,
the agent disables that breakpoint, says so, and the script runs on (firing.py).
"""

from __future__ import annotations

import ast
import operator
import os

from ..errors import ExecmodeError

# What each name holds, for the type check at parse time.
BOOL, NUMBER, STRING, SHAPE = "true/false", "a number", "a string", "a shape"
PYTHON = "a Python value"  # of the script's frame: typed when the condition runs
NAME_TYPES = {
    "nan": BOOL, "inf": BOOL, "finite": BOOL,
    "min": NUMBER, "max": NUMBER, "mean": NUMBER, "std": NUMBER, "abs_max": NUMBER,
    "sum": NUMBER, "nan_count": NUMBER, "inf_count": NUMBER, "size": NUMBER, "ndim": NUMBER,
    "line": NUMBER, "shape": SHAPE,
    "op": STRING, "scope": STRING, "dtype": STRING, "device": STRING, "file": STRING,
}
STAT_NAMES = {"nan", "inf", "finite", "min", "max", "mean", "std", "abs_max", "sum",
              "nan_count", "inf_count", "size", "ndim", "shape"}
META_NAMES = {"op", "scope", "dtype", "device", "file", "line"}
NAMES = STAT_NAMES | META_NAMES
# Conditions on non-finite values fire where one appears, not where it is passed on.
NONFINITE_NAMES = {"nan", "inf", "finite", "nan_count", "inf_count"}
# Names that need the op's output (the rest can be decided before the op runs).
OUTPUT_NAMES = STAT_NAMES | {"dtype", "device"}
_MISSING = None  # what a comparison with a missing value sees (it never holds)

# Bounds, so that parsing and evaluating stay cheap and shallow: conditions are evaluated
# after every op, inside the script's own (possibly deep) stack.
MAX_LENGTH = 500
MAX_DEPTH = 16

_COMPARE = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_PLURAL = {BOOL: "true/false values", STRING: "strings"}
_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
           ast.NotEq: "!="}


class ConditionError(ExecmodeError, ValueError):
    """A malformed breakpoint condition; the message points at the column."""


def _fail(text: str, col: int, message: str):
    caret = " " * max(col, 0) + "^"
    raise ConditionError(f"{message} at column {col + 1}\n  {text}\n  {caret}")


class Condition:
    """A parsed, type-checked condition; ``evaluate(ctx)`` reads names from ``ctx`` (a
    TensorStats). Every mistake the grammar can catch is a ConditionError at parse time,
    with its column: unknown names, a minus on a string, ``and`` between numbers, a string
    compared with a number, a condition that is not true/false, too long or too deep."""

    def __init__(self, text: str):
        self.text = text.strip()
        if not self.text:
            raise ConditionError("empty condition: expected e.g. nan, inf, max > 1e3")
        if len(self.text) > MAX_LENGTH:
            raise ConditionError(f"condition of {len(self.text)} characters: at most "
                                 f"{MAX_LENGTH} are allowed")
        try:
            tree = ast.parse(self.text, mode="eval")
        except SyntaxError as exc:
            if not exc.offset:  # the text ended where more was expected
                _fail(self.text, len(self.text),
                      "unexpected end: expected a name or a number after the operator")
            _fail(self.text, exc.offset - 1,
                  f"syntax error ({exc.msg}): expected a comparison such as max > 1e3")
        except (RecursionError, MemoryError):  # the parser's own limits
            raise ConditionError(f"condition nested too deeply: at most {MAX_DEPTH} "
                                 "levels") from None
        self._check_depth(tree.body)
        self.names: set[str] = set()
        self.python_names: set[str] = set()
        self.notes: list[str] = []     # what a person may want to know (a likely typo)
        self.reads_attributes = False  # an attribute may be a property: code of the script
        kind = self._check(tree.body)
        if kind == PYTHON:
            _fail(self.text, 0, f"{_describe(self.text, tree.body)} is a Python value of "
                  "the script, not a condition: compare it, e.g. step > 100"
                  + _did_you_mean(tree.body))
        if kind != BOOL:
            _fail(self.text, 0, f"a condition must be true or false, this is {kind}: "
                  "compare it, e.g. max > 1e3 or op == \"exp\"")
        self._tree = tree.body

    @property
    def needs_output(self) -> bool:
        """Decided after the op ran (on its output's values) rather than before it."""
        return bool(self.names & OUTPUT_NAMES)

    def __repr__(self) -> str:
        return f"Condition({self.text!r})"

    def _check_depth(self, root) -> None:
        # Iterative, before the recursive checks below: they never go deeper than this.
        stack = [(root, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > MAX_DEPTH:
                _fail(self.text, getattr(node, "col_offset", 0),
                      f"condition nested too deeply: at most {MAX_DEPTH} levels")
            # Expressions only: operator and context nodes (Not, Gt, Load) are no level.
            stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node)
                         if isinstance(child, ast.expr))

    def _check(self, node) -> str:
        """Check ``node`` and return its type (BOOL, NUMBER, STRING or SHAPE)."""
        t = self.text
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And | ast.Or):
            word = "and" if isinstance(node.op, ast.And) else "or"
            for v in node.values:
                self._expect(v, BOOL, f"'{word}' joins conditions")
            return BOOL
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            self._expect(node.operand, BOOL, "'not' negates a condition")
            return BOOL
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return self._expect(node.operand, NUMBER, "'-' negates a number")
        if isinstance(node, ast.Compare):
            self._check_compare(node)
            return BOOL
        if isinstance(node, ast.Name):
            if node.id not in NAMES:
                self._python_name(node.id, node.col_offset)
                return PYTHON
            self.names.add(node.id)
            return NAME_TYPES[node.id]
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return STRING
            if isinstance(node.value, int | float) and not isinstance(node.value, bool):
                return NUMBER
            _fail(t, node.col_offset, "expected a number or a string")
        if isinstance(node, ast.Attribute):
            if self._check(node.value) != PYTHON:
                _fail(t, node.col_offset, f"{_describe(t, node.value)} has no attributes: "
                      "only Python values of the script do (opt.lr)")
            if node.attr.startswith("__"):
                _fail(t, node.end_col_offset - len(node.attr), f"attribute {node.attr!r}: "
                      "names starting with __ are not allowed")
            self.reads_attributes = True
            return PYTHON
        if isinstance(node, ast.Subscript) and not (isinstance(node.value, ast.Name)
                                                    and node.value.id == "shape"):
            if self._check(node.value) != PYTHON:
                _fail(t, node.col_offset, "only shape[i] and Python values can be indexed")
            if _constant_key(node.slice) is _NO_KEY:
                _fail(t, node.slice.col_offset, "an index of a Python value must be a "
                      "number or a string (losses[-1], config[\"lr\"])")
            self.reads_attributes = True  # __getitem__ is the script's code too
            return PYTHON
        if isinstance(node, ast.Subscript):
            idx = node.slice
            if isinstance(idx, ast.UnaryOp) and isinstance(idx.op, ast.USub):
                idx = idx.operand
            if not (isinstance(idx, ast.Constant) and type(idx.value) is int):
                _fail(t, node.col_offset, "shape[...] needs an integer index")
            self.names.add("shape")
            return NUMBER
        _fail(t, getattr(node, "col_offset", 0),
              f"{type(node).__name__} is not allowed here: expected a comparison, a name, "
              "a number, a string, and/or/not")

    def _python_name(self, name: str, col: int) -> None:
        if name.startswith("__"):
            _fail(self.text, col, f"name {name!r}: names starting with __ are not allowed")
        self.python_names.add(name)
        close = _close_name(name)
        if close:
            # Not refused (the script may well have a variable `means`), but said.
            self.notes.append(f"{name!r} is read from the script's frame, not a tensor "
                              f"statistic (did you mean {close}?)")

    def _expect(self, node, wanted: str, why: str) -> str:
        kind = self._check(node)
        if kind == PYTHON:
            return PYTHON  # its truth or its number is known when the condition runs
        if kind != wanted:
            _fail(self.text, node.col_offset,
                  f"{why}, but {_describe(self.text, node)} is {kind}{_hint(kind, wanted)}")
        return kind

    def _check_compare(self, node: ast.Compare) -> None:
        left_node, left = node.left, self._check(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            if type(op) not in _COMPARE:
                _fail(self.text, right_node.col_offset, f"operator {type(op).__name__} is "
                      "not allowed: expected one of < <= > >= == !=")
            right = self._check(right_node)
            symbol = _SYMBOL[type(op)]
            for side, kind in ((left_node, left), (right_node, right)):
                if kind == SHAPE:
                    _fail(self.text, side.col_offset, "shape is compared by dimension: "
                          "write shape[0] > 1024")
            python = PYTHON in (left, right)
            if python and isinstance(op, _ORDERING) and {left, right} & {STRING, BOOL}:
                known = left if right == PYTHON else right
                _fail(self.text, right_node.col_offset,
                      f"{symbol} orders numbers, not {_PLURAL[known]}: use == or !=")
            if left != right and not python:
                _fail(self.text, right_node.col_offset,
                      f"{symbol} compares {_describe(self.text, left_node)} ({left}) with "
                      f"{_describe(self.text, right_node)} ({right}): both sides must be "
                      "of one kind")
            if isinstance(op, _ORDERING) and left not in (NUMBER, PYTHON):
                _fail(self.text, right_node.col_offset,
                      f"{symbol} orders numbers, not {_PLURAL[left]}: use == or !=")
            self._check_op_name(left_node, right_node)
            left_node, left = right_node, right

    def _check_op_name(self, a, b) -> None:
        """``op == "ad"`` would never hold: name the typo now."""
        for name, const in ((a, b), (b, a)):
            if isinstance(name, ast.Name) and name.id == "op" and \
                    isinstance(const, ast.Constant) and isinstance(const.value, str):
                from ..ops import OPS

                if const.value not in OPS:
                    _fail(self.text, const.col_offset, f"unknown op {const.value!r}: ops "
                          "are " + ", ".join(sorted(OPS)))

    def evaluate(self, ctx, frame=None) -> bool:
        """True when the condition holds for ``ctx`` (a TensorStats, or a PlaceContext
        before an op) with Python names read from ``frame`` (the op's user frame)."""
        return _truth(self._eval(self._tree, ctx, frame))

    def _eval(self, node, ctx, frame):
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                return all(_truth(self._eval(v, ctx, frame)) for v in node.values)
            return any(_truth(self._eval(v, ctx, frame)) for v in node.values)
        if isinstance(node, ast.UnaryOp):
            value = self._eval(node.operand, ctx, frame)
            if isinstance(node.op, ast.Not):
                return not _truth(value)
            try:
                return None if value is None else -value  # a missing stat stays missing
            except TypeError:  # -"text": a Python value that is not a number
                return None
        if _is_python(node):
            return _python_value(node, frame)
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, ctx, frame)
            for op, right_node in zip(node.ops, node.comparators):
                right = self._eval(right_node, ctx, frame)
                if left is None or right is None:
                    return False  # a missing value (even != holds nothing about it)
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


class PlaceContext:
    """What a condition decided before an op sees: the op's name, scope and line (no
    output yet; conditions that name a statistic wait for the output)."""

    def __init__(self, op: str, scope: str, location):
        self.op, self.scope, self.location = op, scope, location


_NO_KEY = object()


def _constant_key(node):
    """A subscript's constant key (3, -1, "lr"), or _NO_KEY."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
        return -node.operand.value
    if isinstance(node, ast.Constant) and type(node.value) in (int, str):
        return node.value
    return _NO_KEY


def _is_python(node) -> bool:
    """A Python value of the script (a name not in the language, or a chain on one)."""
    if isinstance(node, ast.Name):
        return node.id not in NAMES
    if isinstance(node, ast.Attribute):
        return True  # only Python values have attributes (checked at parse time)
    if isinstance(node, ast.Subscript):
        return not (isinstance(node.value, ast.Name) and node.value.id == "shape")
    return False


def _python_value(node, frame):
    """Read a name / attribute / constant subscript in ``frame``; missing is None."""
    if frame is None:
        return _MISSING
    try:
        if isinstance(node, ast.Name):
            if node.id in frame.f_locals:
                value = frame.f_locals[node.id]
            elif node.id in frame.f_globals:
                value = frame.f_globals[node.id]
            else:
                return _MISSING
        elif isinstance(node, ast.Attribute):
            base = _python_value(node.value, frame)
            if base is _MISSING:
                return _MISSING
            value = getattr(base, node.attr)
        else:
            base = _python_value(node.value, frame)
            if base is _MISSING:
                return _MISSING
            value = base[_constant_key(node.slice)]
    except (AttributeError, KeyError, IndexError, TypeError):
        return _MISSING
    return _plain(value)


def _plain(value):
    """A tensor or array of one element as its number; a bigger one is missing (comparing
    it would run an op, and its truth is ambiguous)."""
    from .._tensor import Tensor

    if isinstance(value, Tensor):
        if value.is_traced:
            return _MISSING
        value = value._data
    if hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "reshape"):
        size = 1
        for d in value.shape:
            size *= int(d)
        return value.reshape(-1)[0].item() if size == 1 else _MISSING
    return value


def _truth(value) -> bool:
    try:
        return bool(value)
    except Exception:  # noqa: BLE001 - an object whose truth is ambiguous is not true
        return False


def _close_name(name: str) -> str | None:
    import difflib

    close = difflib.get_close_matches(name.lower(), sorted(NAMES), n=1, cutoff=0.75)
    return close[0] if close else None


def _did_you_mean(node) -> str:
    close = _close_name(node.id) if isinstance(node, ast.Name) else None
    return f" (or did you mean {close}?)" if close else ""


def _describe(text: str, node) -> str:
    return repr(ast.get_source_segment(text, node) or type(node).__name__)


def _hint(kind: str, wanted: str) -> str:
    if wanted == BOOL and kind == NUMBER:
        return " (compare it, e.g. max > 1e3)"
    if wanted == BOOL and kind == STRING:
        return " (compare it, e.g. op == \"exp\")"
    return ""


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
    if len(src) > MAX_LENGTH:
        raise ConditionError(f"index of {len(src)} characters: at most {MAX_LENGTH}")
    if src.startswith("[") and src.endswith("]"):
        src = src[1:-1]
    if not src:
        return ()
    try:
        tree = ast.parse(f"_[{src}]", mode="eval").body
    except SyntaxError as exc:
        raise ConditionError(f"bad index {text!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ConditionError(f"bad index {text!r}: nested too deeply") from None
    if not isinstance(tree, ast.Subscript):  # "0] + x[1": the text closed our bracket
        raise ConditionError(f"bad index {text!r}: expected integers, slices, None and ...")
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
