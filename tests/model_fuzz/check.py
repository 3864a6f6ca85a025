"""One model through the comparisons: the list of mismatches (empty when they agree).

The model runs eagerly, eagerly with its floats moved by 2 ulps before each step, and
under jit with the "numpy" backend (every graph node through NumPy, no C) and with the C
kernels (as users get it), all in lockstep from the same state at each step
(runner.run_lockstep). Everything but float values must be equal (compare.py); float
values may differ by the step's rounding, as :func:`allowance` bounds it.
"""

from __future__ import annotations

import numpy as np

from .compare import SENSITIVITY_FACTOR, TOLERANCE, Mismatch, compare_obs
from .runner import run_lockstep


def check(spec, backends=("numpy", "c")) -> list:
    found = run_lockstep(spec, lambda k, e, j, sens, name: compare_obs(
        k, e, j, name, allowance(sens)), backends)
    out = []
    for m in found:
        if isinstance(m, Mismatch):
            out.append(m)
        else:  # the setup: both raise, or neither
            _, eager_error, jit_errors = m
            for backend, error in jit_errors.items():
                if error != eager_error:
                    out.append(Mismatch(0, "exception", "setup", f"eager {eager_error}, "
                                        f"jit {error}", f"jit {backend}"))
    return out


def allowance(sensitivity: dict):
    """allow(path, eager array, jit array) -> the largest |difference| allowed per element:
    the quantity's own rounding (compare.TOLERANCE, against the array's largest finite
    magnitude) plus SENSITIVITY_FACTOR x how far 2 ulps moved it in this step (the
    perturbed eager run): what this model's step makes of rounding, which no fixed
    tolerance knows (a gradient that is the rounding noise of cancelling terms, a batch
    norm's mean removed, an adaptive optimizer dividing by that noise)."""
    def allow(path, e, o):
        kind = path.split(" ")[0].split(".")[0].split("[")[0]
        rtol, atol = TOLERANCE.get(kind, TOLERANCE["out"])
        finite = np.abs(e[np.isfinite(e)]).astype(np.float64)
        scale = float(finite.max()) if finite.size else 0.0
        moved = sensitivity.get(path, 0.0)
        return rtol * np.abs(e.astype(np.float64)) + atol * scale + SENSITIVITY_FACTOR * moved
    return allow


__all__ = ["allowance", "check"]
