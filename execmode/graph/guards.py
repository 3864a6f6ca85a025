"""Guards on the Python state a trace read (JAX's cache keys and dynamo's guards).

A replay runs no Python, so everything the trace took from Python besides its arguments
must still hold at the next call, or the call traces again:

* globals and closure variables the function names, by identity for objects and tensors
  (``w = em.zeros(3)`` at module level between calls: "global w rebound");
* Python numbers, strings and flags, by value, whether global or an attribute of an
  object the function reaches (``opt.lr``, ``self.training``, ``cfg.steps``), walked a few
  levels deep;
* every concrete answer a :class:`~execmode.symbolic.SymbolicScalar` gave.

Modules, functions and classes are not guarded (rebinding them between calls is rare and
checking them would cost every call), but what the user's functions it can reach read
is, as if the function read it itself (a helper closing over the model it runs). A number that changes becomes a graph input on the
next trace (``JitFunction`` promotes it) instead of retracing at every new value.
"""

from __future__ import annotations

import dis
import functools
import math
import types

from .._tensor import Tensor
from ..ops.registry import OpDef
from ..pysource import define
from ..symbolic import is_number
from .python_writes import is_library_module

_MISSING = object()
_SCALARS = (int, float, bool, str, type(None), complex)
# OpDef: the op registry's own entries, which the functions jit may be handed directly
# (``em.jit(em.exp)`` closes over one) - library definitions, not user state: guarding
# their dozen attributes put a Python check into every replay of a single op.
_UNGUARDED = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type,
              types.MethodType, types.CodeType, OpDef)
MAX_DEPTH = 3
# A cap on the values one trace guards (each costs ~30 ns per replay); reaching it is
# said once (jit_driver/trace_call.py), since later changes past it would go unseen.
MAX_GUARDS = 2048


def names_read(fn) -> dict[str, object]:
    """{name: holder}: the globals (holder: the globals dict) and closure cells (holder: the
    cell) that ``fn``'s code and its nested functions' code name. None for the engine's own
    functions (``em.jit(em.exp)``): what they read is execmode's state (dispatch's flags,
    the op registry), which no user rebinds and which a trace already accounts for (grad
    mode is in the signature); guarding it put Python checks, and retraces when a flag
    moved, into every replay of a jitted library function."""
    code = getattr(fn, "__code__", None)
    module = getattr(fn, "__module__", None) or ""
    if code is None or module == "execmode" or module.startswith("execmode."):
        return {}
    g = getattr(fn, "__globals__", {})
    found: dict[str, object] = {}
    for name in _global_loads(code):
        if name in g:
            found.setdefault(name, g)
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        found[name] = cell
    return found


@functools.lru_cache(maxsize=4096)
def _global_loads(code) -> tuple[str, ...]:
    """Names a code object (and the functions nested in it) loads as globals: not every
    name in co_names, which holds attribute names too (``opt.step()`` is no global)."""
    names: list[str] = []
    stack = [code]
    while stack:
        c = stack.pop()
        for ins in dis.get_instructions(c):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval not in names:
                names.append(ins.argval)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return tuple(names)


def read_holder(holder, name):
    if isinstance(holder, list):
        return holder[name] if name < len(holder) else _MISSING
    if isinstance(holder, dict):
        return holder.get(name, _MISSING)
    if isinstance(holder, types.CellType):
        try:
            return holder.cell_contents
        except ValueError:
            return _MISSING
    return getattr(holder, name, _MISSING)


def same_value(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if a is b:
        return True
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


class Guard:
    """One thing read from Python: ``holder``'s ``name`` must still be ``expected``."""

    __slots__ = ("holder", "name", "expected", "by_value", "label")

    def __init__(self, holder, name, expected, by_value: bool, label: str):
        self.holder, self.name, self.expected = holder, name, expected
        self.by_value, self.label = by_value, label

    def failure(self) -> str | None:
        now = read_holder(self.holder, self.name)
        if self.by_value:
            if same_value(now, self.expected):
                return None
            if now is _MISSING:
                return f"{self.label} was deleted"
            return f"{self.label}: {self.expected!r} -> {now!r}"
        if now is self.expected:
            return None
        return f"{self.label} rebound" if now is not _MISSING else f"{self.label} was deleted"

    @property
    def numeric(self) -> bool:
        return self.by_value and is_number(self.expected) and \
            is_number(read_holder(self.holder, self.name))


def collect(fn, statics=()) -> list[Guard]:
    """The guards for what ``fn`` can read from Python, as it is now (before the trace)."""
    guards: list[Guard] = []
    seen: set[int] = set()
    for name, holder in names_read(fn).items():
        value = read_holder(holder, name)
        kind = "global" if isinstance(holder, dict) else "closure variable"
        _guard(guards, seen, holder, name, value, f"{kind} {name}", name, 0)
    for label, value in statics:
        if not isinstance(value, _SCALARS):  # scalar statics key the cache already
            _walk(guards, seen, value, label, 1)
    return guards


def _guard(guards, seen, holder, name, value, label, path, depth) -> None:
    """Guard ``holder[name]`` (by value for scalars, else by identity), then walk it."""
    if len(guards) >= MAX_GUARDS or value is _MISSING:
        return
    if isinstance(value, types.FunctionType | types.MethodType):
        _walk_function(guards, seen, value, path, depth)
        return
    if isinstance(value, _UNGUARDED):
        return
    if isinstance(value, _SCALARS):
        guards.append(Guard(holder, name, value, True, label))
        return
    guards.append(Guard(holder, name, value, False, label))
    if not isinstance(value, Tensor):  # a tensor's values are read at every call
        # A tree of state (an nn.Module) is walked whole: the depth limit starts again
        # at each of its nodes (nested layers are the normal case, not a stray graph).
        deep = getattr(type(value), "_em_guard_deep", False)
        _walk(guards, seen, value, path, 0 if deep else depth + 1)


def _walk(guards, seen, obj, path: str, depth: int) -> None:
    """Guard the scalars (and the identity of the objects) that ``obj`` holds."""
    if depth > MAX_DEPTH or id(obj) in seen or isinstance(obj, (Tensor, *_UNGUARDED)) \
            or getattr(type(obj), "_em_guard_identity_only", False):
        return
    seen.add(id(obj))
    if isinstance(obj, list):
        for i, item in enumerate(obj[:64]):
            _guard(guards, seen, obj, i, item, f"{path}[{i}]", f"{path}[{i}]", depth)
        return
    if isinstance(obj, tuple):  # its items cannot be rebound, only changed inside
        for i, item in enumerate(obj[:64]):
            _walk(guards, seen, item, f"{path}[{i}]", depth + 1)
        return
    if isinstance(obj, dict):
        for key, item in list(obj.items())[:64]:
            if isinstance(key, str | int):
                _guard(guards, seen, obj, key, item, f"{path}[{key!r}]", f"{path}[{key!r}]",
                       depth)
        return
    attrs = getattr(obj, "__dict__", None)
    if not isinstance(attrs, dict):
        return
    for key, item in list(attrs.items()):
        if key.startswith("__"):
            continue
        _guard(guards, seen, obj, key, item, f"{path}.{key}", f"{path}.{key}", depth)
    _walk_class(guards, seen, type(obj), attrs, path, depth)


def _walk_function(guards, seen, fn, path: str, depth: int) -> None:
    """What a helper the function can call reads, guarded as the function's own reads
    (not the helper itself: rebinding one is rare). ``loss = fwd_bwd(x)`` where
    ``fwd_bwd`` closes over ``model``: ``model.eval()`` between calls replayed the
    training graph (issue 38, the independent model fuzzer). A chain of helpers costs no
    depth (each function is walked once); the objects they read are walked as deep as the
    function's own."""
    if isinstance(fn, types.MethodType):
        _walk(guards, seen, fn.__self__, path, depth + 1)
        fn = fn.__func__
    if id(fn) in seen or is_library_module(getattr(fn, "__module__", None)):
        return
    seen.add(id(fn))
    owner = getattr(fn, "__qualname__", path)
    for name, holder in names_read(fn).items():
        value = read_holder(holder, name)
        kind = "global" if isinstance(holder, dict) else f"{owner}'s closure variable"
        _guard(guards, seen, holder, name, value, f"{kind} {name}", name, depth)


def _walk_class(guards, seen, cls: type, attrs: dict, path: str, depth: int) -> None:
    """Guard the class attributes ``obj.name`` reads when the instance has no ``name`` of
    its own (``class Cfg: scale = 2.0``; ``Cfg.scale = 3.0`` between calls must retrace).
    User classes only: the engine's and libraries' class attributes are not user state."""
    for klass in cls.__mro__:
        if id(klass) in seen or is_library_module(klass.__module__):
            continue
        seen.add(id(klass))
        for key, item in list(klass.__dict__.items()):
            if key.startswith("__") or key in attrs or hasattr(type(item), "__get__"):
                continue  # dunders, shadowed names, methods and other descriptors
            label = f"{path}.{key}" if klass is cls else f"{klass.__qualname__}.{key}"
            _guard(guards, seen, klass, key, item, label, label, depth)




def write_holder(holder, name, value) -> None:
    if isinstance(holder, dict | list):
        holder[name] = value
    elif isinstance(holder, types.CellType):
        holder.cell_contents = value
    else:
        setattr(holder, name, value)


__all__ = ["Guard", "collect", "names_read", "read_holder", "same_value", "write_holder"]


def compile_check(guards: list[Guard], scalar_guards: list):
    """One function ``() -> bool`` checking every guard (True: all hold), generated as
    straight-line code with the holders, names and expected values bound as constants:
    the check runs at every replay, so it must cost tens of nanoseconds per guard.
    The source is built from our own guard list, never from user text."""
    ns: dict = {"MISSING": _MISSING, "same_value": same_value, "CellType": types.CellType}
    lines = ["def check():"]
    for k, g in enumerate(guards):
        ns[f"H{k}"], ns[f"N{k}"], ns[f"E{k}"] = g.holder, g.name, g.expected
        if isinstance(g.holder, dict):
            read = f"H{k}.get(N{k}, MISSING)"
        elif isinstance(g.holder, list):
            read = f"(H{k}[N{k}] if N{k} < len(H{k}) else MISSING)"
        elif isinstance(g.holder, types.CellType):
            lines.append("    try:")
            lines.append(f"        v = H{k}.cell_contents")
            lines.append("    except ValueError:")
            lines.append("        return False")
            read = "v"
        else:
            read = f"getattr(H{k}, N{k}, MISSING)"
        if not g.by_value:
            lines.append(f"    if {read} is not E{k}:")
        elif isinstance(g.expected, float) and math.isnan(g.expected):
            lines.append(f"    if not same_value({read}, E{k}):")
        else:
            ns[f"T{k}"] = type(g.expected)
            lines.append(f"    v = {read}")
            lines.append(f"    if v.__class__ is not T{k} or v != E{k}:")
        lines.append("        return False")
    for k, (read, answer, _) in enumerate(scalar_guards):
        ns[f"R{k}"], ns[f"A{k}"] = read, answer
        lines.append("    try:")
        lines.append(f"        if not same_value(R{k}(), A{k}):")
        lines.append("            return False")
        lines.append("    except Exception:")
        lines.append("        return False")
    lines.append("    return True")
    define("\n".join(lines) + "\n", "<execmode guards>", ns)
    return ns["check"]
