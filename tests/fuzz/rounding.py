"""How far a program's results move when its transcendental ops and sums round differently.

Graph mode's kernels compute exp, log, tanh, erf, ... with their own approximations, a few
ulps from NumPy's (docs/kernels.md), and sum floats in another order, so in programs that
may round (``Program.exact`` is
False) eager and jit may differ by a few ulps of each transcendental result, amplified by
what the program does with it. compare.py's fixed tolerance covers a modest amplification;
an ill-conditioned program amplifies without bound: ``tanh'(x) = 1 - tanh(x)**2`` near
saturation turns one ulp of ``tanh`` into 1e-4 of a gradient, and dividing by that gradient
keeps it (program 1795574896-3397: ``w / b.grad`` off by 1.5e-4 relative).

So a values mismatch in such a program is measured against the program's own sensitivity:
it runs eagerly twice more, every transcendental result nudged ``NUDGE_ULPS`` up, then
down. A jit value that stays within ``MARGIN`` times the distance those nudges moved the
eager value (plus compare.py's tolerance) is rounding; anything further is a mismatch. A
wrong value (a wrong op, a stale buffer) is off by whole units, far beyond a few ulps'
worth of movement unless the output is noise anyway.
"""

from __future__ import annotations

import contextlib

import numpy as np

from execmode.ops import OPS

from .compare import ATOL, RTOL
from .observe import TensorObs

# The ops whose graph-mode kernels do not round as NumPy does: transcendentals (float32
# approximations, libm for float64) and float sums (a kernel accumulates float32 in
# float64, NumPy pairwise in float32: sin of a sum near 713 moved 6e-5, seed 7373 program
# 2361). Their eager results get nudged.
TRANSCENDENTAL = ("exp", "log", "log1p", "expm1", "tanh", "erf", "sin", "cos", "power",
                  "sum", "mean")
NUDGE_ULPS = 2       # the approximations' measured bounds are 1-2 ulps (docs/kernels.md)
MARGIN = 4.0         # several transcendental results, each off in its own direction
# Ops that add many terms, in an order graph mode chooses (a kernel's accumulator, a GEMM's
# blocking): beyond ulps of their result, they move by NUDGE_ULPS epsilons of the same op
# on the terms' magnitudes (sum |x|, |a| @ |b|), the size of the difference two summation
# orders can make. Where the terms do not cancel that is ulps of the result again; where
# they do (1e38 - 1e38 + 2.5, seed 20261145 program 1598) the result is rounding noise
# and either order's answer is rounding.
SUMMING = ("sum", "mean", "matmul")


@contextlib.contextmanager
def transcendentals_nudged(direction: float):
    """Every transcendental and summing op's eager result moved toward ``direction``
    (+-inf): NUDGE_ULPS ulps, and a summing op's also by its terms' rounding (SUMMING)."""
    saved = {name: OPS[name].impl for name in TRANSCENDENTAL + SUMMING if name in OPS}

    def nudging(impl, summing: bool):
        def nudged(xp, *args, **attrs):
            out = impl(xp, *args, **attrs)
            if getattr(out, "dtype", None) is not None and out.dtype.kind == "f":
                if summing:
                    magnitudes = impl(xp, *(xp.abs(a) if hasattr(a, "dtype") else a
                                            for a in args), **attrs)
                    step = NUDGE_ULPS * np.finfo(out.dtype).eps * magnitudes
                    with np.errstate(over="ignore", invalid="ignore"):
                        out = (out + step if direction > 0 else out - step).astype(out.dtype)
                for _ in range(NUDGE_ULPS):
                    out = xp.nextafter(out, out.dtype.type(direction))
            return out
        return nudged

    try:
        for name, impl in saved.items():
            object.__setattr__(OPS[name], "impl",  # OpDef is frozen
                               nudging(impl, name in SUMMING))
        yield
    finally:
        for name, impl in saved.items():
            object.__setattr__(OPS[name], "impl", impl)


def drop_rounding(program, eager, others: list, mismatches: list, run_mode) -> list:
    """``mismatches`` without the values mismatches that the program's sensitivity to its
    transcendentals' rounding explains (see the module's docstring)."""
    if program.exact or not any(m.check == "values" for m in mismatches):
        return mismatches
    nudged = []
    for direction in (np.inf, -np.inf):
        with transcendentals_nudged(direction):
            nudged.append(run_mode(program, "eager"))
    runs = {(r.label or r.mode): r for r in others}
    return [m for m in mismatches
            if not (m.check == "values" and _within(m, eager, runs.get(m.run), nudged))]


def _values(run, call: int, path: str):
    if run is None or not 0 < call <= len(run.calls):
        return None
    obs = run.calls[call - 1].items.get(path)
    return obs.values if isinstance(obs, TensorObs) else None


def _within(m, eager, other, nudged: list) -> bool:
    e, j = _values(eager, m.call, m.path), _values(other, m.call, m.path)
    moved = [_values(n, m.call, m.path) for n in nudged]
    if e is None or j is None or any(n is None or n.shape != e.shape for n in moved):
        return False
    if e.shape != j.shape:
        return False
    if e.dtype.kind != "f":
        return _flipped_by_rounding(e, j, moved)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(e) & np.isfinite(j)
        # The same NaN and +-Inf places (NaN never equals itself: compared as equal), or
        # where they differ, what a nudged eager run gives there: an exact 0 that each
        # summation order rounds to a residue of its own sign, divided by 0, is an infinity
        # of either sign (seed 20261144 program 0).
        same = (e == j) | (np.isnan(e) & np.isnan(j)) | finite
        reproduced = np.zeros(e.shape, bool)
        for n in moved:
            reproduced |= (n == j) | (np.isnan(n) & np.isnan(j))
        if not np.all(same | reproduced):
            return False
        movement = np.zeros(e.shape, np.float64)
        for n in moved:
            step = np.abs(e.astype(np.float64) - n.astype(np.float64))
            movement = np.maximum(movement, np.where(np.isfinite(step), step, 0.0))
        scale = max(1.0, float(np.abs(e[finite]).max())) if finite.any() else 1.0
        allowed = RTOL * np.abs(e) + ATOL * scale + MARGIN * movement
        return bool(np.all((np.abs(e.astype(np.float64) - j) <= allowed) | ~finite))


def _flipped_by_rounding(e, j, moved: list) -> bool:
    """A bool or integer result (a comparison, an argmax) of values that round: each
    element where jit differs must be one the program's own rounding flips, jit's value
    there being what a nudged eager run gives, not eager's (a sum of 1.7e38, -1.7e38 and
    small terms is 0 in NumPy's order and -9 in a C kernel's, both within the terms'
    rounding, and ``sum > x`` differs where x lies between: seed 20261181 program 1054)."""
    if e.dtype != j.dtype:
        return False
    differ = e != j
    flipped = np.zeros(e.shape, bool)
    for n in moved:
        flipped |= (n == j) & (n != e)
    return bool(np.all(~differ | flipped))
