"""A probe of common PyTorch spellings (issue 32): each case is one ordinary use of a name
(a function, a Tensor method, an nn layer, an F function, an optimizer or scheduler,
utils.data), written once against a ``torch``-like module, run on ``execmode.torch`` and on
PyTorch from the same small inputs, and compared: values (to a tolerance), shapes and
dtypes. Random draws compare shape and dtype only; layers copy PyTorch's weights first.

The list is what PyTorch tutorials, examples and the programs in docs/pytorch.md
("Programs tried") write, taken area by area, not chosen by what execmode has.

    PYTHONPATH=tests python -m torch_front.spellings_probe   # the failures and a count

tests/torch_front/test_spellings_probe.py runs every case as a test. The cases live by
area in spellings_tensors.py, spellings_nn.py and spellings_training.py; their inputs in
spelling_inputs.py.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from torch_front import spellings_nn, spellings_tensors, spellings_training  # noqa: F401 - they add the cases
from torch_front.spelling_inputs import CASES

__all__ = ["CASES", "check", "compare"]


# --- running and comparing -----------------------------------------------------------------
def to_plain(value):
    """A comparable form: arrays for tensors, tuples for sequences, numbers as they are."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        return np.asarray(value.detach().numpy())
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, tuple | list):
        return tuple(to_plain(x) for x in value)
    if hasattr(value, "_fields"):  # a named tuple
        return tuple(to_plain(x) for x in value)
    return value


def compare(got, want, path="result") -> str | None:
    """None when ``got`` (execmode) matches ``want`` (PyTorch), else what differs."""
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"{path}: {type(got).__name__}, PyTorch gives an array"
        if got.shape != want.shape:
            return f"{path}: shape {got.shape}, PyTorch {want.shape}"
        if got.dtype != want.dtype:
            return f"{path}: dtype {got.dtype}, PyTorch {want.dtype}"
        if want.dtype.kind in "fc":
            if not np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True):
                worst = np.nanmax(np.abs(got.astype(np.float64) - want))
                return f"{path}: values differ (max abs {worst:.3g})"
        elif not np.array_equal(got, want):
            return f"{path}: values {got.tolist()}, PyTorch {want.tolist()}"
        return None
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return f"{path}: {got!r:.60}, PyTorch {want!r:.60}"
        for i, (g, w) in enumerate(zip(got, want)):
            bad = compare(g, w, f"{path}[{i}]")
            if bad:
                return bad
        return None
    if isinstance(want, float) and isinstance(got, int | float):
        return None if math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6) or (
            math.isnan(got) and math.isnan(want)) else f"{path}: {got}, PyTorch {want}"
    if isinstance(want, bool | int | str | type(None)):
        return None if got == want and type(got) is type(want) or (
            isinstance(want, int) and not isinstance(want, bool) and got == want
            and isinstance(got, int)) else f"{path}: {got!r}, PyTorch {want!r}"
    if isinstance(want, dict):
        return compare(tuple(sorted(got.items())), tuple(sorted(want.items())), path)
    return None if got == want else f"{path}: {got!r:.60}, PyTorch {want!r:.60}"


def check(fn, ours, theirs) -> str | None:
    """Run one case on both; None when they agree, else the first difference or error."""
    want = to_plain(fn(theirs))
    try:
        got = to_plain(fn(ours))
    except Exception as exc:  # noqa: BLE001 - the probe reports any failure
        first = str(exc).split("\n")[0]
        return f"{type(exc).__name__}: {first[:160]}"
    return compare(got, want)


def main() -> int:
    import torch as theirs

    import execmode.torch as ours

    failures = []
    for name, fn in CASES:
        bad = check(fn, ours, theirs)
        if bad:
            failures.append((name, bad))
    for name, bad in failures:
        print(f"FAIL {name}: {bad}")
    print(f"{len(CASES)} spellings tried, {len(failures)} failing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
