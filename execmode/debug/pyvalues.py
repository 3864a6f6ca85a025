"""Python values of the paused script: the Variables pane, the evaluator and watches.

pudb shows the Python state (the step, ``opt.lr``, the locals) and evaluates expressions;
the agent does the same for its paused frame. Values are *described* here, never sent:
each becomes a short text (numbers, strings, container lengths, a tensor's shape, dtype
and statistics) and, for containers and objects, children that the TUI asks for by path
(names and keys as labels, resolved by walking the same children again: nothing a
controller sends is evaluated as a path).

The evaluator (``p expr`` in pdb) is the one place where the agent runs text it was sent:
an expression typed by the person debugging, run in the frame of their own script. It is
reached only over the control socket, which lives in a 0700 directory removed once the
agent connected; nothing read from a session file is ever evaluated. Evaluation has a
time limit, its result is truncated, an error is its result, and the debugger's own
hooks are detached meanwhile, so ops it runs are neither recorded nor paused at.
"""

from __future__ import annotations

import contextlib
import threading
import types

from .. import instrument
from .._tensor import Tensor
from ..source import is_internal_file
from .interrupt import raise_in_thread
from .summary import format_summary, summarize

MAX_TEXT = 200            # characters of a value's text
MAX_EVAL_TEXT = 2000      # characters of an evaluated result
MAX_CHILDREN = 200        # rows one expansion returns
MAX_EXPRESSION = 1000     # characters of an expression
EVAL_TIMEOUT_S = 2.0

_CALLABLE_KINDS = ("module", "function", "class")


# --- frames -------------------------------------------------------------------------------

def user_frames(start) -> list:
    """The user's frames from ``start`` outwards, innermost first (as ``user_stack``)."""
    out, f = [], start
    while f is not None:
        if not is_internal_file(f.f_code.co_filename):
            out.append(f)
        f = f.f_back
    return out


def scope_items(frame, scope: str) -> list[tuple[str, object]]:
    """A frame's ``locals`` or ``globals``: data first, then modules, functions and
    classes; dunder names left out (pudb's habit: what the script computed comes first)."""
    if scope == "locals":
        items = list(frame.f_locals.items())
    elif scope == "globals":
        items = list(frame.f_globals.items())
    else:
        raise ValueError(f"unknown scope {scope!r}: use locals or globals")
    items = [(str(k), v) for k, v in items if not str(k).startswith("__")]
    items.sort(key=lambda kv: (kind_of(kv[1]) in _CALLABLE_KINDS, kv[0]))
    return items


# --- describing values ------------------------------------------------------------------------

def kind_of(value) -> str:
    if isinstance(value, Tensor):
        return "tensor"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float | complex):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, bytes | bytearray):
        return "bytes"
    if isinstance(value, list | tuple | dict | set | frozenset):
        return type(value).__name__ if type(value).__name__ in (
            "list", "tuple", "dict", "set", "frozenset") else _base_container(value)
    if isinstance(value, types.ModuleType):
        return "module"
    if isinstance(value, types.FunctionType | types.BuiltinFunctionType | types.MethodType):
        return "function"
    if isinstance(value, type):
        return "class"
    if type(value).__module__ == "numpy" and hasattr(value, "shape"):
        return "array" if getattr(value, "ndim", 0) else "number"
    return "object"


def _base_container(value) -> str:
    for base in (dict, list, tuple, set, frozenset):
        if isinstance(value, base):
            return base.__name__
    return "object"


def describe(name: str, value) -> dict:
    """One row of the Variables pane: name, kind, type name, a short text, expandable."""
    kind = kind_of(value)
    row = {"name": name, "kind": kind, "type": type(value).__name__,
           "text": _text(value, kind), "expandable": _expandable(value, kind)}
    if kind in ("list", "tuple", "dict", "set", "frozenset", "str", "bytes"):
        row["length"] = len(value)
    return row


def _text(value, kind: str) -> str:
    try:
        if kind == "tensor":
            return _tensor_text(value)
        if kind == "array":
            return format_summary(summarize(value)) + "  (numpy)"
        if kind in ("list", "tuple", "set", "frozenset", "dict"):
            return _truncate(_safe_repr(value))  # the row's length says how many
        if kind == "module":
            return f"module {value.__name__}"
        if kind == "class":
            return f"class {value.__module__}.{value.__qualname__}"
        if kind == "function":
            return f"{type(value).__name__} {getattr(value, '__qualname__', '?')}"
        if kind == "object" and type(value).__repr__ is object.__repr__:
            # The default repr says only the address: the attributes say more.
            attrs = ", ".join(f"{k}={_safe_repr(v)}" for k, v in _attributes(value)[:8])
            return _truncate(f"{type(value).__name__}({attrs})")
        return _truncate(_safe_repr(value))
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ is the value's text
        return f"<repr failed: {type(exc).__name__}: {exc}>"


def _tensor_text(t: Tensor) -> str:
    if t.is_traced:
        return f"traced {t.dtype} {tuple(t.shape)} (a value inside em.jit: no data yet)"
    text = format_summary(summarize(t._data))
    if t.requires_grad:
        text += "  grad" if t.grad is not None else "  requires_grad"
    return text


def _safe_repr(value, items: int = 12) -> str:
    # reprlib keeps a huge list from being rendered whole before it is cut.
    import reprlib

    r = reprlib.Repr()
    r.maxstring, r.maxother = 160, 160
    r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdeque = items
    r.maxdict = max(8, items // 2)
    return r.repr(value)


def _truncate(text: str, limit: int = MAX_TEXT) -> str:
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _expandable(value, kind: str) -> bool:
    if kind in ("list", "tuple", "dict", "set", "frozenset"):
        return len(value) > 0
    if kind in ("tensor", "module", "class"):
        return True
    if kind == "object":
        return bool(_attributes(value))
    return False


def children(value) -> list[tuple[str, object]]:
    """The labelled children of a container or object (at most MAX_CHILDREN)."""
    kind = kind_of(value)
    if kind in ("list", "tuple"):
        pairs = [(f"[{i}]", v) for i, v in enumerate(value[:MAX_CHILDREN])]
    elif kind == "dict":
        pairs = []
        for i, (k, v) in enumerate(value.items()):
            if i >= MAX_CHILDREN:
                break
            pairs.append((f"[{_truncate(_safe_repr(k), 60)}]", v))
    elif kind in ("set", "frozenset"):
        pairs = [(f"{{{i}}}", v) for i, v in enumerate(list(value)[:MAX_CHILDREN])]
    elif kind == "tensor":
        pairs = [("shape", tuple(value.shape)), ("dtype", str(value.dtype)),
                 ("device", str(value.device)), ("requires_grad", value.requires_grad)]
        if not value.is_traced and value.grad is not None:
            pairs.append(("grad", value.grad))
    elif kind in ("module", "class"):
        pairs = sorted((k, v) for k, v in vars(value).items() if not k.startswith("__"))
        pairs = pairs[:MAX_CHILDREN]
    else:
        pairs = _attributes(value)[:MAX_CHILDREN]
    return pairs


def _attributes(value) -> list[tuple[str, object]]:
    """An object's own attributes (its ``__dict__`` and slots): no property runs."""
    out = []
    d = getattr(value, "__dict__", None)
    if isinstance(d, dict):
        out.extend((str(k), v) for k, v in d.items() if not str(k).startswith("__"))
    seen = {k for k, _ in out}
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot.startswith("__") or slot in seen:
                continue
            try:
                out.append((slot, object.__getattribute__(value, slot)))
            except AttributeError:  # a slot never assigned
                continue
            seen.add(slot)
    return out


def variables(frame, scope: str, path: list[str]) -> list[dict]:
    """The rows under ``path`` (labels from earlier replies) in a frame's locals/globals."""
    with hooks_detached():  # a user's __repr__ may run ops: not the script's
        return _variables(frame, scope, path)


def _variables(frame, scope: str, path: list[str]) -> list[dict]:
    items = scope_items(frame, scope)
    for depth, label in enumerate(path):
        for name, value in items:
            if name == label:
                items = children(value)
                break
        else:
            where = ".".join(path[:depth]) or scope
            raise KeyError(f"no {label!r} under {where} (it changed: refresh)")
    return [describe(name, value) for name, value in items[:MAX_CHILDREN]]


# --- evaluating ---------------------------------------------------------------------------

class EvaluationTimeout(BaseException):
    """Raised in the script's thread when an expression runs past its time limit."""


def evaluate(expr: str, frame, timeout: float = EVAL_TIMEOUT_S) -> dict:
    """``expr`` evaluated in ``frame``: {expr, ok, text, kind, type}; never raises."""
    if len(expr) > MAX_EXPRESSION:
        return _failed(expr, f"expression of {len(expr)} characters: at most "
                             f"{MAX_EXPRESSION}")
    if frame is None:
        return _failed(expr, "no frame of the script to evaluate in")
    try:
        code = compile(expr.strip(), "<execmode expression>", "eval")
    except SyntaxError as exc:
        return _failed(expr, f"SyntaxError: {exc.msg} (column {exc.offset or 0})")
    try:
        with hooks_detached():
            value, kind, text = _with_time_limit(
                lambda: _evaluated(code, frame), timeout)
    except EvaluationTimeout:
        return _failed(expr, f"TimeoutError: no result within {timeout:g} s (stopped)")
    except Exception as exc:  # noqa: BLE001 - an error is the expression's result
        return _failed(expr, _truncate(f"{type(exc).__name__}: {exc}", MAX_EVAL_TEXT))
    return {"expr": expr, "ok": True, "kind": kind, "type": type(value).__name__,
            "text": text}


def _evaluated(code, frame):
    value = eval(code, frame.f_globals, frame.f_locals)  # noqa: S307 - see the docstring
    kind = kind_of(value)
    if kind in ("tensor", "array", "module", "class", "function"):
        text = _text(value, kind)
    else:
        text = _truncate(_safe_repr(value, items=100), MAX_EVAL_TEXT)
    return value, kind, text


def _failed(expr: str, message: str) -> dict:
    return {"expr": expr, "ok": False, "kind": "error", "type": "error", "text": message}


@contextlib.contextmanager
def hooks_detached():
    """No listener sees what an expression runs: not the debugger (no pause inside an
    evaluation), not the recorder (the session holds the script's ops only); and no tracer
    (paused at a graph break inside em.jit, an expression must not add nodes to the
    graph being traced: it runs eagerly)."""
    from .. import dispatch

    attached = list(instrument.listeners())
    for listener in attached:
        instrument.remove_listener(listener)
    tracer = dispatch.set_tracer(None)
    try:
        yield
    finally:
        dispatch.set_tracer(tracer)
        for listener in attached:
            instrument.add_listener(listener)


def _with_time_limit(fn, timeout: float):
    """``fn()`` in this thread, interrupted after ``timeout`` s at a bytecode boundary (a
    long NumPy call ends first). The timer's exception is withdrawn if ``fn`` finished
    first, so it can never land in the agent's own code."""
    lock = threading.Lock()
    state = {"done": False, "fired": False}
    thread = threading.get_ident()

    def fire() -> None:
        with lock:
            if not state["done"]:
                state["fired"] = True
                raise_in_thread(thread, EvaluationTimeout)

    timer = threading.Timer(timeout, fire)
    timer.daemon = True
    timer.start()
    try:
        return fn()
    finally:
        with lock:
            state["done"] = True
            if state["fired"]:
                raise_in_thread(thread, None)
        timer.cancel()
