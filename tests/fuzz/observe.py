"""What one call leaves behind, recorded so that two runs can be compared.

After every call the runner records the call's outputs and the state of everything the
program holds: every tensor reachable from the module namespace (globals, this call's and
earlier calls' arguments, earlier outputs), the captured object's attributes, the
parameters and the optimizer's state, and each tensor's ``.grad``. For each tensor: shape,
dtype, a copy of its values and requires_grad. Across all of them: which paths are the same
object (identity) and which distinct objects share memory (aliasing).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field

import numpy as np

import execmode as em
from execmode._tensor import Tensor
from execmode.pysource import ast_lock

SKIP_NAMES = frozenset({"em", "nan", "inf", "Obj", "f", "F"})
SCALARS = (int, float, bool, str, type(None))


@dataclass
class TensorObs:
    shape: tuple
    dtype: str
    values: np.ndarray | None
    requires_grad: bool
    unreadable: str | None = None   # the error reading it raised (an escaped tracer)


@dataclass
class ErrorObs:
    type: str
    message: str
    trace: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message.splitlines()[0] if self.message else ''}"


@dataclass
class CallObs:
    call: int                              # 1-based
    exception: ErrorObs | None = None      # what the call raised
    before_error: ErrorObs | None = None   # a statement before the call raised
    items: dict = field(default_factory=dict)      # path -> TensorObs | ('py', repr)
    output_paths: list = field(default_factory=list)
    identity: set = field(default_factory=set)     # frozensets of paths: one object
    aliasing: set = field(default_factory=set)     # frozensets of two paths: shared memory


def error_obs(exc: BaseException) -> ErrorObs:
    # Python 3.11 parses the failing line to draw a traceback's carets: under the AST lock
    # (execmode/pysource.py), since the threads of a threaded program compile meanwhile.
    with ast_lock:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return ErrorObs(type(exc).__name__, str(exc), text)


def tensor_obs(t: Tensor) -> TensorObs:
    try:
        values = np.array(t.numpy(), copy=True)
        return TensorObs(tuple(t.shape), str(t.dtype), values, bool(t.requires_grad))
    except Exception as exc:  # noqa: BLE001 - a tensor that cannot be read is an observation
        return TensorObs(tuple(t.shape), str(t.dtype), None, bool(t.requires_grad),
                         unreadable=f"{type(exc).__name__}: {exc}".splitlines()[0])


def walk(path: str, obj, out: list, depth: int = 0) -> None:
    """(path, leaf) for every tensor and Python scalar reachable from ``obj``."""
    if depth > 6:
        return
    if isinstance(obj, Tensor):
        out.append((path, obj))
        grad = obj._grad
        if grad is not None:
            out.append((path + ".grad", grad))
    elif isinstance(obj, SCALARS):
        out.append((path, obj))
    elif isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            walk(f"{path}[{i}]", item, out, depth + 1)
    elif isinstance(obj, dict):
        for key in sorted(obj, key=repr):
            walk(f"{path}[{key!r}]", obj[key], out, depth + 1)
    elif isinstance(obj, em.optim.Optimizer) or type(obj).__name__ == "Obj":
        for key, value in sorted(vars(obj).items()):
            walk(f"{path}.{key}", value, out, depth + 1)


def namespace_leaves(ns: dict, output_name: str) -> tuple[list, list]:
    """(output leaves, state leaves) of a program's namespace after a call."""
    outputs, state = [], []
    for name in sorted(ns):
        if name.startswith("__") or name in SKIP_NAMES:
            continue
        walk(name, ns[name], outputs if name == output_name else state)
    return outputs, state


def observe(ns: dict, call: int, exception: ErrorObs | None = None) -> CallObs:
    obs = CallObs(call, exception=exception)
    outputs, state = namespace_leaves(ns, f"out{call}")
    obs.output_paths = [p for p, _ in outputs]
    leaves = outputs + state
    tensors = []
    for path, leaf in leaves:
        if isinstance(leaf, Tensor):
            obs.items[path] = tensor_obs(leaf)
            tensors.append((path, leaf))
        else:
            obs.items[path] = ("py", repr(leaf))
    # identity: paths that are one object
    groups: dict[int, list] = {}
    for path, t in tensors:
        groups.setdefault(id(t), []).append(path)
    obs.identity = {frozenset(ps) for ps in groups.values() if len(ps) > 1}
    # aliasing: distinct objects whose arrays share memory, as every pair of their paths
    reps = []
    for ps in groups.values():
        t = next(t for p, t in tensors if p == ps[0])
        try:
            arr = t.numpy()
        except Exception:  # noqa: BLE001 - unreadable tensors are reported by the items
            continue
        if arr.size:
            reps.append((ps, arr))
    for i in range(len(reps)):
        for j in range(i + 1, len(reps)):
            a, b = reps[i][1], reps[j][1]
            if np.may_share_memory(a, b) and np.shares_memory(a, b):
                obs.aliasing |= {frozenset((p, q)) for p in reps[i][0] for q in reps[j][0]}
    return obs
