"""One model through the comparisons: the list of mismatches (empty when they agree).

The model runs eagerly, eagerly with its floats moved by 2 ulps before each step, and
under jit with the "numpy" backend (every graph node through NumPy, no C) and with the C
kernels (as users get it), all in lockstep from the same state at each step
(runner.run_lockstep). Everything but float values must be equal (compare.py); float
values may differ by the step's rounding, as tolerance.allowance bounds it.
"""

from __future__ import annotations

from .compare import SKIP_FLOATS, Mismatch, compare_obs
from .runner import run_lockstep
from .tolerance import allowance


def check(spec, backends=("numpy", "c")) -> list:
    def compare_step(k, before, e, j, sensitivity, name):
        if name == "jit c" and _near_limits(spec.steps[:k]):
            # Inputs near the float32 limits (this step's, or an earlier one's, whose
            # update left parameters, moments and saved copies near them): a matmul of
            # the C kernels' generated loops adds its products in another order than the
            # BLAS, so where partial dot products overflow it may give NaN for inf
            # (documented in docs/graph-mode.md, "Reductions keep eager's overflow too").
            # The NumPy-backend run checks these steps' floats; here everything else.
            return compare_obs(k, e, j, name, SKIP_FLOATS)
        return compare_obs(k, e, j, name, allowance(spec, before, e, sensitivity))

    found = run_lockstep(spec, compare_step, backends)
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


def _near_limits(steps) -> bool:
    return any(e.startswith("extreme") for step in steps for e in step.events)


__all__ = ["check"]
