"""What a traced function wrote to Python state (issue 38).

A replay runs no Python, so a Python write inside a jitted function (``stats.steps += 1``,
``log.append(...)``, ``cfg["n"] = ...``, ``global calls; calls += 1``) would happen once,
at the trace, where eager makes it at every call. Guards (guards.py) catch changed values
of attributes that existed and that they watch; they miss an attribute the function
creates, which is what ``stats.steps += 1`` does when ``steps`` is a class attribute (the
read finds ``Stats.steps``, the write makes ``stats.steps``), writes to lists and dicts past
their first items, and writes deeper than the guards walk.

So, before a trace, :func:`snapshot` copies (shallowly) every container the function can
reach from Python: its module's globals and closure cells, and walking from there and from
its static arguments, the ``__dict__`` (and ``__slots__``) of objects, the ``__dict__`` of
their classes and of user classes named, lists, dicts, sets and deques; the globals of
user functions it can reach (helpers writing ``global``) and of user modules it names.
After the trace, :meth:`Snapshot.changes` names every container that changed. A function
with changes re-runs its Python at every call (jit.py, as one with graph breaks does), so
each write happens as often as eagerly; nothing is dropped silently. The cost is at trace
time only: replays of functions that write nothing check nothing more.

Not walked: what the items of a list, dict or tuple past its first WALK_ITEMS hold (the
container itself is compared whole), tensors (the tracer owns their state), execmode's own objects other than those
holding a user's state (modules, optimizers, schedulers: ``_em_user_state``), NumPy arrays (their values, written in
place by Python, are not watched: the docs say so), library modules and classes (NumPy's,
execmode's own; :func:`is_library_module`), weak containers (the garbage collector changes
them), a module's dunder names (``__warningregistry__``, torch dynamo's
``__builtins_dict___0``: bookkeeping that the garbage collector deletes at any time). Past
``MAX_CONTAINERS`` containers copied (or ``MAX_VISITS`` values looked at: tuples, being
immutable, are walked but not copied) the rest is not watched, and the jit says so with a
warning.
"""

from __future__ import annotations

import collections
import functools
import importlib.metadata
import itertools
import os
import site
import sys
import sysconfig
import types
import weakref

import numpy as np

from .._tensor import Tensor
from ..symbolic import SymbolicScalar

MAX_CONTAINERS = 20_000     # containers copied (objects' dicts, lists, dicts, sets)
MAX_VISITS = 200_000        # values looked at
# Items walked into per list, dict or tuple: a long list is copied whole (an append or a
# rebound item is seen), but what its items hold only for the first ones (a dataset held
# as a list of 60,000 tuples cost 0.24 s a trace walked whole).
WALK_ITEMS = 1000
_SCALARS = (int, float, bool, str, bytes, complex, type(None))
_WEAK = (weakref.WeakSet, weakref.WeakKeyDictionary, weakref.WeakValueDictionary)
# Values never walked (and not counted against MAX_CONTAINERS).
_LEAVES = (*_SCALARS, Tensor, SymbolicScalar, np.ndarray, np.generic, np.dtype,
           types.BuiltinFunctionType, types.CodeType, types.MethodWrapperType,
           types.WrapperDescriptorType, property, *_WEAK)


def _library_dirs() -> tuple:
    """Where the standard library and installed packages live: this interpreter's
    scheme, and the site directories (a user site, a venv's system site) besides."""
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    try:
        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    except AttributeError:  # an embedded interpreter's site module may lack them
        pass
    dirs = {p for d in dirs if d for p in (d, os.path.realpath(d))}
    return tuple(os.path.join(d, "") for d in sorted(dirs))


_LIBRARY_DIRS = _library_dirs()
_SITE_DIRNAMES = ("site-packages", "dist-packages")


@functools.cache
def _installed_here(entry: str, top: str) -> bool:
    """Whether an installer put package ``top`` into the directory ``entry`` (a wheel
    unpacked onto PYTHONPATH, PyTorch carried to a machine without an index): a
    ``.dist-info`` there whose RECORD lists its files. A person's own project, even
    installed editable, has its record elsewhere (in site-packages)."""
    try:
        for dist in importlib.metadata.distributions(path=[entry]):
            for f in dist.files or ():
                if f.parts and f.parts[0] == top:
                    return True
    except Exception:  # noqa: BLE001 - broken metadata must not break a trace
        return False
    return False


def is_library_module(name: str | None) -> bool:
    """Code whose Python state is not the user's to write under jit: execmode, the standard
    library, installed packages (by where they live, or, found elsewhere, by their
    record next to them: PyTorch found through PYTHONPATH was walked as the user's state,
    20,000 containers, and dynamo's bookkeeping globals, deleted by the garbage collector
    during a trace, read as the function's writes). A module without a file (a script's
    namespace run by exec, as the fuzzers do) is the user's."""
    if not name:
        return False
    if name == "execmode" or name.startswith("execmode.") or name in sys.builtin_module_names:
        return True
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    return bool(path) and _library_file(name, path)


@functools.lru_cache(maxsize=4096)
def _library_file(name: str, path: str) -> bool:
    real = os.path.realpath(path)
    if real.startswith(_LIBRARY_DIRS) or any(
            part in _SITE_DIRNAMES for p in (path, real) for part in p.split(os.sep)):
        return True
    top = name.partition(".")[0]
    root = getattr(sys.modules.get(top), "__file__", None)
    if not root:
        return False
    package_dir = os.path.dirname(root)
    entry = os.path.dirname(package_dir) if os.path.basename(root) == "__init__.py" \
        else package_dir
    return _installed_here(entry, top)


class Snapshot:
    """Shallow copies of the containers a function can reach, with a name for each."""

    def __init__(self):
        self.entries: list = []    # (container, kind, copy, label)
        self.complete = True       # False: a limit reached, the rest unwatched
        self._seen: set[int] = set()
        self._queue: collections.deque = collections.deque()

    # --- taking it ---------------------------------------------------------------------
    def add(self, value, label: str) -> None:
        """Watch ``value`` (and what it holds) under the name ``label``."""
        if id(value) not in self._seen and not isinstance(value, _LEAVES):
            self._queue.append((value, label))

    def walk(self) -> Snapshot:
        while self._queue:
            value, label = self._queue.popleft()
            if id(value) in self._seen:
                continue
            if len(self.entries) >= MAX_CONTAINERS or len(self._seen) >= MAX_VISITS:
                self.complete = False
                break
            self._seen.add(id(value))
            self._visit(value, label)
        return self

    def _visit(self, value, label: str) -> None:
        if getattr(type(value), "_em_guard_identity_only", False):
            return  # another jitted function: its caches are its own
        if isinstance(value, dict):
            self._record(value, "dict", dict(value), label)
            for key, item in itertools.islice(value.items(), WALK_ITEMS):
                self.add(item, f"{label}[{key!r}]")
        elif isinstance(value, list | collections.deque):
            self._record(value, "list", list(value), label)
            for i, item in enumerate(itertools.islice(value, WALK_ITEMS)):
                self.add(item, f"{label}[{i}]")
        elif isinstance(value, set):
            self._record(value, "set", set(value), label)
        elif isinstance(value, tuple | frozenset):
            for i, item in enumerate(itertools.islice(value, WALK_ITEMS)):
                self.add(item, f"{label}[{i}]")
        elif isinstance(value, types.ModuleType):
            if not is_library_module(value.__name__):
                self._visit_namespace(value.__dict__, "module", label)
        elif isinstance(value, type):
            self._visit_class(value, label)
        elif isinstance(value, types.FunctionType):
            self._visit_function(value, label)
        elif isinstance(value, types.MethodType):
            self.add(value.__self__, label)
            self._visit_function(value.__func__, label)
        elif isinstance(value, types.CellType):
            try:
                self.add(value.cell_contents, label)
            except ValueError:  # an empty cell
                pass
        else:
            self._visit_object(value, label)

    def _visit_class(self, cls: type, label: str) -> None:
        if is_library_module(getattr(cls, "__module__", None)):
            return
        attrs = dict(cls.__dict__)
        self._record(cls, "class", attrs, label)
        for key, item in attrs.items():
            if not key.startswith("__"):
                self.add(item, f"{label}.{key}")

    def _visit_function(self, fn, label: str) -> None:
        if is_library_module(getattr(fn, "__module__", None)):
            return
        g = getattr(fn, "__globals__", None)
        if isinstance(g, dict) and id(g) not in self._seen:
            # A helper writing `global n` writes its module's dict.
            self._seen.add(id(g))
            self._visit_namespace(g, "globals", "global")
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            self.add(cell, f"{label}.<{name}>")

    def _visit_object(self, obj, label: str) -> None:
        cls = type(obj)
        if cls.__module__.startswith("execmode") and not getattr(cls, "_em_user_state", False):
            return  # the engine's own objects (plans, graphs, jitted functions' caches)
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            self._visit_namespace(attrs, "attrs", label, owner=obj)
        slots = _slot_values(obj)
        if slots:
            self._record(obj, "slots", slots, label)
            for key, item in slots.items():
                self.add(item, f"{label}.{key}")
        self.add(type(obj), type(obj).__qualname__)

    def _visit_namespace(self, attrs: dict, kind: str, label: str, owner=None) -> None:
        """An object's, a module's or a function's globals' dict of names."""
        self._record(attrs, kind, dict(attrs), label, owner)
        for key, item in list(attrs.items()):
            if not (isinstance(key, str) and key.startswith("__")):
                self.add(item, f"global {key}" if kind == "globals" else f"{label}.{key}")

    def _record(self, container, kind: str, copy, label: str, owner=None) -> None:
        # The owner keeps an object's __dict__ alive with it (and names it in labels).
        self.entries.append((container, kind, copy, label, owner))

    # --- comparing -----------------------------------------------------------------------
    def changes(self) -> list[str]:
        """A sentence per container the trace changed ("stats.steps: created")."""
        out = []
        for container, kind, copy, label, _ in self.entries:
            if kind == "list":
                now = list(container)
                if len(now) != len(copy) or any(a is not b and not _same_scalar(a, b)
                                                for a, b in zip(now, copy)):
                    out.append(f"{label}: items written ({len(copy)} -> {len(now)} items)")
            elif kind == "set":
                if set(container) != copy:
                    out.append(f"{label}: items added or removed")
            else:
                now = dict(container.__dict__) if kind == "class" else \
                    _slot_values(container) if kind == "slots" else container
                out.extend(_dict_changes(copy, now, label, kind))
        return out


def _dict_changes(before: dict, now, label: str, kind: str) -> list[str]:
    def name(key):
        if kind == "globals":
            return f"global {key}"
        return f"{label}[{key!r}]" if kind == "dict" else f"{label}.{key}"

    out = []
    if kind in ("globals", "module"):
        # A module's dunder names are the interpreter's and tools' bookkeeping, not a
        # person's state: warnings' __warningregistry__, and torch dynamo's
        # __builtins_dict___0 and __compiled_fn_1 in the globals of code it compiled,
        # deleted by the garbage collector whenever that code dies (during a trace too).
        before = {k: v for k, v in before.items() if not _dunder(k)}
        now = {k: v for k, v in now.items() if not _dunder(k)}
    for key, value in before.items():
        if key not in now:
            out.append(f"{name(key)}: deleted")
        elif now[key] is not value and not _same_scalar(now[key], value):
            out.append(f"{name(key)}: {_short(value)} -> {_short(now[key])}")
    for key in now.keys() - before.keys():
        out.append(f"{name(key)}: created")
    return out


def _dunder(key) -> bool:
    return isinstance(key, str) and key.startswith("__")


def _same_scalar(a, b) -> bool:
    return type(a) is type(b) and isinstance(a, _SCALARS) and (a == b or a != a and b != b)


def _short(value) -> str:
    if isinstance(value, _SCALARS):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a {type(value).__name__}"


def _slot_values(obj) -> dict:
    out = {}
    for cls in type(obj).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                out[name] = getattr(obj, name)
    return out


def snapshot(fn, statics=()) -> Snapshot:
    """The Python state ``fn`` can write, as it is before a trace."""
    snap = Snapshot()
    snap.add(fn, getattr(fn, "__qualname__", "function"))
    for label, value in statics:
        snap.add(value, label)
    return snap.walk()


__all__ = ["MAX_CONTAINERS", "Snapshot", "is_library_module", "snapshot"]
