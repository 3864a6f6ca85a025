"""Tensor's ``+ - * /`` in C for plain eager calls: NumPy's own loop, without the ufunc's
per-call machinery.

An eager ``x + y`` on two 1-element tensors cost ~1.8x ``np.add`` through the Python
operator (dispatch.make_operator): a Python frame, a dozen attribute and global reads, the
ufunc's argument parsing, type resolution and error-state handling, and a new Tensor.
``eager_operators.c`` does the common case in C: with no tracer and no listener (or only
listeners that want events after ops, as the recorder: it hands them the op), CPU
float32/float64 tensors that autograd would not record (no requires_grad, or
``em.no_grad()``: a model's inference), the same shape (or one side a single
element, or a Python scalar), it allocates the output and calls the ufunc's 1-d loop for
the dtype: the function ``np.add`` itself runs, so the bits are NumPy's. Every other call
goes to the Python operator, which the C object holds.

The unary functions (``em.exp``, ``em.negative`` ...; dispatch.make_unary_function) get the
same kind of C version for a float32/float64 C-contiguous tensor, when the op's ufunc has
the dtype's loop and its impl is the registered one: the Python function calls it first,
and it hands every other call to the function's Python body. Listeners that want events
after ops get those ops from C as well (the op ring's ``general``, or an OpEvent built in
C).

* **When.** Nothing compiles at import. The operators installed by tensor_methods count
  the calls C would take (dispatch.counting_operator); after ``dispatch.HOT_CALLS`` of them
  :func:`install` replaces them with the C operators, or, when the extension cannot be
  built, with the uncounted Python operators. A short script never pays for a build; a
  loop pays it once per machine (~0.3 s; the kernel cache's ``extensions`` folder, like
  the jit's fast entry), then ~6 ms per process to load it.
* **Same answers** (tests/codegen/test_eager_operators.py). Floating-point warnings:
  NumPy's would be silenced (dispatch.py filters them for execmode's own frames), and the
  C path raises none. Errors, other dtypes, broadcasting, a debugger running before ops,
  traces and autograd are the Python operator's.
* **Forcing a path** (docs/architecture.md, "Paths"): ``EXECMODE_EAGER_PATH=python|c|auto``,
  read once at import, pins the Python operators and unary functions, or the C ones from
  the first call (built at import), or leaves the choice to the hot count (``auto``, the
  default). :func:`use_path` does the same from a test (jit_driver/paths.py ``pinned``).
  The older ``EXECMODE_EAGER_OPERATORS=0`` means ``python`` where ``EXECMODE_EAGER_PATH``
  is unset.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from .. import dispatch, tensor_methods
from .._tensor import Tensor
from ..dispatch import counting_operator
from ..native import source_path
from ..ops import OPS
from ..ops import erf as _erf
from ..ops import window_kernels as _window_kernels
from ..optim import plain as _plain_optim
from ..tensor_method_tables import FAST_OPERATORS
from . import eager_adam, eager_erf, eager_windows
from .extension_build import build_extension
from .factory import _note

EXTENSION = "_em_eager_operators"
SOURCE = source_path("eager_operators.c")

# CC value -> (module or None, status dict): one build attempt per compiler and process.
_loaded: dict[str, tuple] = {}


def enabled() -> bool:
    return os.environ.get("EXECMODE_EAGER_OPERATORS", "1").strip() not in ("0", "off", "no")


PATHS = ("python", "c", "auto")


def path_from_env() -> str:
    """``EXECMODE_EAGER_PATH`` (python, c or auto); unset: ``auto``, or ``python`` under
    ``EXECMODE_EAGER_OPERATORS=0``. Another value warns and means ``auto``."""
    text = os.environ.get("EXECMODE_EAGER_PATH", "").strip().lower()
    if not text:
        return "auto" if enabled() else "python"
    if text not in PATHS:
        warnings.warn(f"execmode: EXECMODE_EAGER_PATH={text!r} is not one of "
                      f"{', '.join(PATHS)}; using auto", UserWarning, stacklevel=2)
        return "auto"
    return text


def load_extension():
    """The compiled ``_em_eager_operators`` module, or None (then ``extension_status()``)."""
    cc = os.environ.get("CC", "").strip()
    hit = _loaded.get(cc)
    if hit is None:
        hit = _loaded[cc] = build_extension(EXTENSION, SOURCE, "eager_operators")
        if hit[0] is None:
            _note(f"eager operators stay in Python: {hit[1]['reason']}")
    return hit[0]


# erf in C once it has run on a few large arrays (eager_erf.py); max
# pooling, im2col and col2im from their first call (eager_windows.py); Adam's update after a
# few steps (eager_adam.py).
_erf.NATIVE.loader = eager_erf.load
_window_kernels.NATIVE.loader = eager_windows.load
_plain_optim.ADAM.loader = eager_adam.load


def extension_status() -> dict:
    """extension_build's status (``ok``, ``reason``, ``machine_lacks`` ...) for the current
    CC."""
    load_extension()
    return dict(_loaded[os.environ.get("CC", "").strip()][1])


def operator_names() -> list[str]:
    return [name for dunder in FAST_OPERATORS for name in (f"__{dunder}__", f"__r{dunder}__")]


def python_operator(method):
    """The Python operator under a counting wrapper or a C operator."""
    while hasattr(method, "__wrapped__"):
        method = method.__wrapped__
    return method


def install(tensor_class, native: bool | None = None) -> bool:
    """Replace ``tensor_class``'s arithmetic operators for good: with C operators (when
    ``native`` is not False, they are enabled and the extension builds), else with the
    Python operators. Returns whether the C operators were installed."""
    tensor_methods.install(tensor_class)  # the Python operators first (idempotent)
    ext = None
    if native is not False and (native or enabled()):
        ext = load_extension()
    flags = vars(dispatch)  # `_plain` is read from it at every call
    for dunder, op in FAST_OPERATORS.items():
        for name, reflected in ((f"__{dunder}__", False), (f"__r{dunder}__", True)):
            operator = python_operator(tensor_class.__dict__[name])
            if ext is not None:
                operator = ext.Operator(operator, OPS[op].name, OPS[op].ufunc, tensor_class,
                                        flags, reflected)
            setattr(tensor_class, name, operator)
    # The unary functions (dispatch.make_unary_function) in C as well, and the events of
    # the calls they hand to their Python body.
    for entry in dispatch.UNARY_FUNCTIONS.values():
        entry[0] = None if ext is None else unary_function(ext, entry, tensor_class, flags)
    dispatch._emit_unary = ext.emit_unary if ext is not None else dispatch.emit_unary_event
    return ext is not None


def unary_function(ext, entry, tensor_class, flags):
    """The C version of a unary function (``entry``: dispatch.UNARY_FUNCTIONS'), or None
    for an op with no one-operand ufunc that has float32 and float64 loops (em.copy)."""
    _, python_function, op, registered_impl = entry
    ufunc = op.float_ufunc if op.float_ufunc is not None else op.ufunc
    if not isinstance(ufunc, np.ufunc) or ufunc.nin != 1 or ufunc.nout != 1:
        return None
    try:  # the registered impl, not op.impl now: install may run while one is swapped
        return ext.Operator(python_function, op.name, ufunc, tensor_class, flags, False,
                            op, registered_impl)
    except ValueError:  # no float32 -> float32 or float64 -> float64 loop
        return None


def snapshot(tensor_class):
    """A callable that puts the operators, the unary functions and the hot count back as
    they are now (the profiler's calibration pins each path in turn with :func:`pin`)."""
    tensor_methods.install(tensor_class)  # the engine's operators, not its placeholders
    operators = {name: tensor_class.__dict__[name] for name in operator_names()}
    unary = {name: entry[0] for name, entry in dispatch.UNARY_FUNCTIONS.items()}
    emit_unary, until_hot = dispatch._emit_unary, dispatch._until_hot

    def restore() -> None:
        for name, operator in operators.items():
            setattr(tensor_class, name, operator)
        for name, first in unary.items():
            dispatch.UNARY_FUNCTIONS[name][0] = first
        dispatch._emit_unary, dispatch._until_hot = emit_unary, until_hot
    return restore


def pin(tensor_class, native: bool) -> bool:
    """The C operators and unary functions (``native``) or the Python ones, kept until a
    :func:`snapshot`'s restore: calls no longer count toward replacing them. Returns
    whether the C ones are in (False also when they cannot be built here)."""
    installed = install(tensor_class, native=native)
    dispatch._until_hot = 1 << 62
    return installed


def reset(tensor_class) -> None:
    """The operators as the engine installs them, counting from zero again (for tests)."""
    tensor_methods.install(tensor_class)
    dispatch._until_hot = dispatch.HOT_CALLS
    for entry in dispatch.UNARY_FUNCTIONS.values():
        entry[0] = None
    for name in operator_names():
        setattr(tensor_class, name, counting_operator(python_operator(tensor_class.__dict__[name])))


def use_path(tensor_class, path: str) -> str:
    """Put the eager operators and unary functions on ``path``: ``python`` or ``c`` pinned
    (calls stop counting), ``auto`` counting from zero again. Returns the path the calls
    now take ("python" or "c"; "python" when ``c`` cannot be built here: it warns)."""
    if path not in PATHS:
        raise ValueError(f"eager path must be one of {', '.join(PATHS)}, got {path!r}")
    if path == "auto":
        reset(tensor_class)
        return "python"
    if pin(tensor_class, native=path == "c") or path == "python":
        return path
    warnings.warn("execmode: the C eager operators cannot be built here "
                  f"({extension_status()['reason']}); eager ops stay in Python",
                  UserWarning, stacklevel=2)
    return "python"


def current_path(tensor_class) -> str:
    """"c" when the C operators are installed on ``tensor_class``, else "python"."""
    return "c" if type(tensor_class.__dict__["__add__"]).__name__ == "Operator" else "python"


def pinned_path() -> bool:
    """Whether the calls stopped counting (a pinned path, not the hot count's choice)."""
    return dispatch._until_hot > dispatch.HOT_CALLS


# EXECMODE_EAGER_PATH, read once: a forced path is in before the first op.
ENV_PATH = path_from_env()
if ENV_PATH != "auto":
    use_path(Tensor, ENV_PATH)
