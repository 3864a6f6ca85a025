"""Compare the state two runs leave after a step (observe.py), path by path.

Everything that is not a float value must be equal, with no tolerance: dtypes, shapes,
``requires_grad``, which ``.grad`` is None, which ``.grad`` is the same object as after
the previous step, integer buffers (``num_batches_tracked``), hyperparameters (the
learning rates a schedule set), the scheduler, the Python counters on instances, classes
and dicts, the exception of a step that raised, NaN and +-Inf positions. Float values,
one step from the same state (runner.run_lockstep), may differ by rounding: within
:data:`TOLERANCE` per quantity plus :data:`SENSITIVITY_FACTOR` times what the perturbed
eager run moved (check.allowance), both justified below.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .observe import ErrorValue, TensorValue


@dataclass(frozen=True)
class Mismatch:
    step: int
    check: str      # exception | missing | structure | dtype | shape | requires_grad |
    #                 specials | values | python | identity
    path: str
    detail: str
    run: str = "jit"

    @property
    def key(self) -> tuple:
        """What the minimizer keeps and the report groups by."""
        return (self.check, _category(self.path))

    def __str__(self) -> str:
        return f"step {self.step} [{self.run}]: {self.check} {self.path}: {self.detail}"


def _category(path: str) -> str:
    word = re.split(r"[ .\[]", path, maxsplit=1)[0]
    return {"opt": "optimizer", "sched": "scheduler", "Counters": "counters",
            "counters": "counters", "stats": "counters", "model": "model"}.get(word, word)


# ``allow`` that compares no float values (their dtype, shape and flags still).
SKIP_FLOATS = "skip floats"


def compare_obs(step: int, eager: dict, other: dict, run: str, allow=None) -> list:
    """Mismatches between two observations of one step; ``allow(path, e, o)`` returns an
    array of allowed absolute differences for float values (None: exact; SKIP_FLOATS:
    none compared)."""
    out = []
    for path in list(eager) + [p for p in other if p not in eager]:
        if path not in other or path not in eager:
            where = "jit" if path not in other else "eager"
            out.append(Mismatch(step, "missing", path, f"not in the {where} run's state", run))
            continue
        out += _compare_value(step, path, eager[path], other[path], run, allow)
    return out


def _compare_value(step, path, e, o, run, allow) -> list:
    def miss(check, detail):
        return [Mismatch(step, check, path, detail, run)]

    if isinstance(e, ErrorValue) or isinstance(o, ErrorValue):
        if not (isinstance(e, ErrorValue) and isinstance(o, ErrorValue)) or e.type != o.type:
            return miss("exception", f"eager {_short(e)}, jit {_short(o)}")
        return []
    if isinstance(e, TensorValue) or isinstance(o, TensorValue):
        if not (isinstance(e, TensorValue) and isinstance(o, TensorValue)):
            return miss("structure", f"eager {_short(e)}, jit {_short(o)}")
        return _compare_tensor(path, e, o, allow, miss)
    if isinstance(e, list | tuple) and isinstance(o, list | tuple) and \
            any(isinstance(v, TensorValue) for v in (*e, *o)):
        if type(e) is not type(o) or len(e) != len(o):
            return miss("structure", f"eager {_short(e)}, jit {_short(o)}")
        found = []
        for i, (a, b) in enumerate(zip(e, o)):
            found += _compare_value(step, f"{path}[{i}]", a, b, run, allow)
        return found
    if type(e) is not type(o) or not _same_python(e, o):
        check = "identity" if path.startswith("grad-object") else "python"
        return miss(check, f"eager {e!r}, jit {o!r}")
    return []


def _compare_tensor(path, e: TensorValue, o: TensorValue, allow, miss) -> list:
    if e.dtype != o.dtype:
        return miss("dtype", f"eager {e.dtype}, jit {o.dtype}")
    if e.shape != o.shape:
        return miss("shape", f"eager {e.shape}, jit {o.shape}")
    if e.requires_grad != o.requires_grad:
        return miss("requires_grad", f"eager {e.requires_grad}, jit {o.requires_grad}")
    a, b = e.array, o.array
    if a.dtype.kind != "f":
        # A complex NaN in the same place is the same value (as for floats, below).
        if not np.array_equal(a, b, equal_nan=a.dtype.kind == "c"):
            return miss("values", _diff_text(a, b))
        return []
    if allow is SKIP_FLOATS:
        return []
    if not np.array_equal(np.isnan(a), np.isnan(b)) or \
            not np.array_equal(np.isposinf(a), np.isposinf(b)) or \
            not np.array_equal(np.isneginf(a), np.isneginf(b)):
        return miss("specials", "NaN or Inf in other places: " + _diff_text(a, b))
    finite = np.isfinite(a)
    if allow is None:
        if not np.array_equal(a[finite].view(np.uint8), b[finite].view(np.uint8)):
            return miss("values", _diff_text(a, b))
        return []
    bound = np.broadcast_to(allow(path, a, b), a.shape)
    with np.errstate(all="ignore"):
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    bad = finite & (diff > bound)
    if bad.any():
        i = np.unravel_index(np.argmax(np.where(bad, diff - bound, -np.inf)), a.shape)
        return miss("values", f"at {tuple(int(x) for x in i)} eager {a[i]!r}, jit {b[i]!r} "
                              f"(|diff| {diff[i]:.3g} > allowed {bound[i]:.3g}; "
                              f"{int(bad.sum())} of {a.size} elements)")
    return []


def _same_python(a, b) -> bool:
    if isinstance(a, float) and a != a:
        return b != b
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same_python(x, y) for x, y in zip(a, b))
    return a == b


def _diff_text(a, b) -> str:
    if a.shape == ():
        return f"eager {a!r}, jit {b!r}"
    with np.errstate(all="ignore"):
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    diff = np.where(np.isnan(diff), np.inf, diff)
    i = np.unravel_index(np.argmax(diff), a.shape)
    return f"first of the largest differences at {tuple(int(x) for x in i)}: eager " \
           f"{a[i]!r}, jit {b[i]!r}"


def _short(v) -> str:
    if isinstance(v, TensorValue):
        return f"tensor {v.dtype}{list(v.shape)}"
    if isinstance(v, ErrorValue):
        return f"raised {v.type}: {v.message}"
    text = repr(v)
    return text if len(text) < 60 else text[:57] + "..."


__all__ = ["SKIP_FLOATS", "Mismatch", "compare_obs"]
