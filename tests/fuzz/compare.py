"""Compare a jitted run with the eager run, call by call.

Checked after every call: the exception (if eager raises, jit must raise the same type, and
the other way round); the outputs' structure, shapes, dtypes, values and requires_grad;
the same for every state tensor and its ``.grad`` (see observe.py); Python scalars of the
captured objects; identity (which paths are one object) and aliasing (which distinct
objects share memory).

Values. Integers and bools must be equal, floats bit-exact, NaN positions included,
except for the NaN payload and sign (NumPy itself does not define them) and except in
programs that may round (``Program.exact`` is False: a transcendental, a division, a mean,
a power, an optimizer step, or an input value that is not a small multiple of 1/4). The
kernels of graph mode may legitimately round differently from NumPy there: C's libm
versus NumPy's SIMD ``exp``/``tanh``/``log`` (1 ulp), another summation order in a fused
reduction or BLAS, an operation order the passes changed. Those programs get
a tolerance: NaN and +-Inf in the same places, finite values within ``RTOL * |e| + ATOL
* scale``, where ``scale`` is the largest finite magnitude of the eager array (at least 1):
summation error grows with the size of the terms, not of the result. One tolerance for
every float dtype, float32's: a float64 result is often a float32 computation cast at the
end (``em.tanh(w).astype(em.float64)``), so its error is float32's. A sign-of-zero
difference (-0.0 against 0.0) is its own check, ``signed_zero``: eager's result is the
specification, so it is a mismatch, but it is reported apart from wrong numbers (not in
programs with a max/min reduction, whose tie between 0.0 and -0.0 depends on vector lanes:
``Program.zero_sign_exact``). In programs that may round, an integer may be a rounded
float stored back (``k *= em.exp(x)`` on an int64
``k``), so integers get the same relative tolerance plus one unit (a truncation that fell
on the other side); bools stay exact. A float values mismatch beyond the tolerance is then
measured against the program's own sensitivity to its transcendentals' rounding
(rounding.py, applied by check.py): no fixed tolerance covers an ill-conditioned program.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .features import CHECKS
from .observe import TensorObs

# About 1000 float32 ulps: far below any wrong-value bug seen (those are off by whole
# units), above the rounding a saturating function amplifies: tanh'(x) = 1 - tanh(x)**2
# near |tanh| = 1 turns C's 1-ulp tanhf difference into 2e-5 relative in a gradient
# (found by the slow tier, program 1795533063-6013).
RTOL, ATOL = 1e-4, 1e-5
_ROOT = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True)
class Mismatch:
    call: int
    check: str        # exception | structure | shape | dtype | values | signed_zero | ...
    path: str
    detail: str
    category: str     # output | argument | global | object | parameter | optimizer | ...
    run: str = "jit"

    @property
    def key(self) -> tuple:
        """What the minimizer keeps and the report groups by (a path matrix mismatch by
        its two paths too: ``run`` is "jit/generated vs jit/native" there)."""
        if " vs " in self.run:
            return (self.check, f"{self.category} [{self.run}]")
        return (self.check, self.category)

    def __str__(self) -> str:
        where = f" {self.path}" if self.path else ""
        run = "" if self.run == "jit" else f" [{self.run}]"
        return f"call {self.call}{run}: {self.check}{where}: {self.detail}"


def category(path: str, call: int) -> str:
    root = _ROOT.match(path).group() if _ROOT.match(path) else path
    if root == f"out{call}":
        cat = "output"
    elif re.fullmatch(r"out\d+", root):
        cat = "earlier output"
    elif root in ("g0", "g1", "gi"):
        cat = "global"
    elif root == "obj":
        cat = "object"
    elif root in ("w", "b"):
        cat = "parameter"
    elif root == "opt":
        cat = "optimizer"
    elif re.fullmatch(r"[a-z]\d+", root):
        cat = "argument"
    else:
        cat = root
    if path.endswith(".grad"):
        cat += " .grad"
    return cat


def _pair_category(pair, call: int) -> str:
    return " ~ ".join(sorted(category(p, call) for p in pair))


def _fmt(x) -> str:
    if isinstance(x, np.floating) and x == 0:
        return "-0.0" if np.signbit(x) else "0.0"
    return repr(x.item() if isinstance(x, np.generic) else x)


def _first_differences(e: np.ndarray, j: np.ndarray, bad: np.ndarray, n: int = 3,
                       names=("eager", "jit")) -> str:
    E, J = names
    idx = np.argwhere(bad)[:n]
    parts = [f"[{','.join(map(str, i))}] {E} {_fmt(e[tuple(i)])} {J} {_fmt(j[tuple(i)])}"
             for i in idx]
    more = int(bad.sum()) - len(idx)
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def compare_values(e: np.ndarray, j: np.ndarray, exact: bool, names=("eager", "jit")):
    """None, or (check, detail) for two arrays of equal shape and dtype (``names``: the
    two runs', for the detail)."""
    if e.dtype.kind == "c":  # each part as a float (NaN, -0.0 and the tolerance per part)
        return compare_values(np.stack([e.real, e.imag], -1), np.stack([j.real, j.imag], -1),
                              exact, names)
    if e.dtype.kind not in "fc":
        if np.array_equal(e, j):
            return None
        bad = e != j
        if not exact and e.dtype.kind in "iu":
            # An integer can be a rounded float stored back (k *= em.exp(x) on an int64 k):
            # a 1-ulp float difference moves it by up to RTOL of its size, or by one unit
            # across a truncation (program 1795533063-6709: 2**31 * exp(2) differed by 1024).
            ef, jf = e.astype(np.float64), j.astype(np.float64)
            bad = np.abs(ef - jf) > RTOL * np.abs(ef) + 1
            if not bad.any():
                return None
        return "values", _first_differences(e, j, bad, names=names)
    en, jn = np.isnan(e), np.isnan(j)
    ev, jv = np.where(en, 0, e), np.where(jn, 0, j)
    if np.array_equal(en, jn) and np.array_equal(ev, jv):
        sb = np.signbit(ev) != np.signbit(jv)
        if sb.any():
            return "signed_zero", _first_differences(e, j, sb, names=names)
        return None
    if not exact and np.array_equal(en, jn):
        rtol, atol = RTOL, ATOL
        finite = np.isfinite(ev)
        same_inf = np.array_equal(np.isinf(ev), np.isinf(jv)) and np.array_equal(
            ev[~finite], jv[~finite])
        scale = max(1.0, float(np.abs(ev[finite]).max())) if finite.any() else 1.0
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(ev - jv) <= rtol * np.abs(ev) + atol * scale
        if same_inf and bool(np.all(close | ~finite)):
            return None
        # An infinity of the other sign is a difference too, and one to name in the detail.
        bad = ~(close | ~finite) | (np.isinf(ev) != np.isinf(jv)) | (~finite & (ev != jv))
    else:
        bad = (en != jn) | (~en & (ev != jv))
    return "values", _first_differences(e, j, bad, names=names)


def _compare_tensor(path: str, e: TensorObs, j: TensorObs, exact: bool, out: list, call: int,
                    run: str, checks: dict, names=("eager", "jit")) -> None:
    E, J = names
    def add(check, detail):
        if check == "requires_grad" and not checks["requires_grad"]:
            return
        if check == "signed_zero" and not checks["signed_zero"]:
            return
        if check in ("values", "shape", "dtype") and not checks["values"]:
            return
        if path.endswith(".grad") and not checks["grads"]:
            return
        out.append(Mismatch(call, check, path, detail, category(path, call), run))

    if (e.unreadable is None) != (j.unreadable is None):
        add("unreadable", f"{E}: {e.unreadable or 'readable'}; {J}: {j.unreadable or 'readable'}")
        return
    if e.shape != j.shape:
        add("shape", f"{E} {e.shape} {J} {j.shape}")
        return
    if e.dtype != j.dtype:
        add("dtype", f"{E} {e.dtype} {J} {j.dtype}")
        return
    if e.requires_grad != j.requires_grad:
        add("requires_grad", f"{E} {e.requires_grad} {J} {j.requires_grad}")
    if e.values is not None and j.values is not None:
        if not checks.get("float_values", True) and e.values.dtype.kind in "fc":
            return
        diff = compare_values(e.values, j.values, exact, names)
        if diff is not None:
            add(*diff)


_INT64_EXTREMES = ("9223372036854775807", "9223372036854775808")


def _sums_int64_extremes(program) -> bool:
    """Whether ``program`` holds an int64 extreme and takes a mean (a float sum of ints)."""
    text = program.render()
    return any(x in text for x in _INT64_EXTREMES) and "mean(" in text


def _pairs(groups) -> set:
    out = set()
    for g in groups:
        g = sorted(g)
        out |= {frozenset((a, b)) for i, a in enumerate(g) for b in g[i + 1:]}
    return out


def compare_runs(program, eager, other, checks: dict | None = None, *,
                 names=("eager", "jit"), exact: bool | None = None) -> list:
    """Every difference between ``other`` (a jitted run) and ``eager`` that ``checks``
    (features.CHECKS by default) asks for. The path matrix (check.py) compares two runs of
    one mode on two paths with it: ``names`` are then the two paths' (reference first),
    ``exact`` True (the same kernels on both sides: bit for bit)."""
    E, J = names
    checks = dict(CHECKS if checks is None else checks)
    if not program.zero_sign_exact:
        checks["signed_zero"] = False
    run = other.label or other.mode
    out: list[Mismatch] = []
    # The float sums of int64 extremes (features.CHECKS "int_extremes_sum_order"): their
    # float values are not compared, eager against jit.
    checks["float_values"] = not (exact is None and
                                  not checks.get("int_extremes_sum_order", True) and
                                  _sums_int64_extremes(program))
    exact = program.exact if exact is None else exact
    if eager.setup_error or other.setup_error:
        e, j = eager.setup_error, other.setup_error
        if (e is None) != (j is None) or e.type != j.type:
            out.append(Mismatch(0, "setup", "", f"{E}: {e}; {J}: {j}", "setup", run))
        return out
    for k in range(max(len(eager.calls), len(other.calls))):
        if k >= len(eager.calls) or k >= len(other.calls):
            out.append(Mismatch(k + 1, "structure", "", "one run stopped earlier",
                                "calls", run))
            break
        ec, jc = eager.calls[k], other.calls[k]
        call = ec.call
        if ec.before_error or jc.before_error:
            e, j = ec.before_error, jc.before_error
            if (e is None) != (j is None) or e.type != j.type:
                out.append(Mismatch(call, "exception", "", f"before the call: {E} {e}; {J} {j}",
                                    "between calls", run))
            break
        if ec.exception or jc.exception:
            e, j = ec.exception, jc.exception
            if not checks["exceptions"]:
                break
            if e is None:
                if not checks["jit_result_backward"] and j.type == "BackwardError" and \
                        "through the result of an em.jit function" in j.message:
                    break  # the documented limitation (features.CHECKS)
                out.append(Mismatch(call, "exception", "", f"{J} raised {j}; {E} returned",
                                    "jit only", run))
            elif j is None:
                out.append(Mismatch(call, "exception", "", f"{E} raised {e}; {J} returned",
                                    "eager only", run))
            elif e.type != j.type:
                out.append(Mismatch(call, "exception", "", f"{E} raised {e}; {J} raised {j}",
                                    "type", run))
            break
        if ec.output_paths != jc.output_paths:
            out.append(Mismatch(call, "structure", f"out{call}",
                                f"{E} {ec.output_paths} {J} {jc.output_paths}", "output", run))
        for path in sorted(set(ec.items) | set(jc.items)):
            e, j = ec.items.get(path), jc.items.get(path)
            if e is None or j is None:
                what = "missing" if j is None else "extra"
                detail = (f"{J} has no {path}" if j is None else f"{E} has no {path}")
                if path.endswith(".grad") and not checks["grads"]:
                    continue
                out.append(Mismatch(call, "grad" if path.endswith(".grad") else "structure",
                                    path, detail + f" ({what})", category(path, call), run))
                continue
            if isinstance(e, TensorObs) and isinstance(j, TensorObs):
                _compare_tensor(path, e, j, exact, out, call, run, checks, names)
            elif e != j:
                out.append(Mismatch(call, "python", path, f"{E} {e[1] if isinstance(e, tuple) else e}"
                                    f" {J} {j[1] if isinstance(j, tuple) else j}",
                                    category(path, call), run))
        common = set(ec.items) & set(jc.items)
        e_same, j_same = _pairs(ec.identity), _pairs(jc.identity)
        for pair in sorted(e_same ^ j_same, key=sorted):
            if not pair <= common or not checks["identity"]:
                continue
            a, b = sorted(pair)
            detail = (f"{E}: {a} is {b}; {J}: distinct objects" if pair in e_same else
                      f"{J}: {a} is {b}; {E}: distinct objects")
            out.append(Mismatch(call, "identity", f"{a} / {b}", detail,
                                _pair_category(pair, call), run))
        for pair in sorted(ec.aliasing ^ jc.aliasing, key=sorted):
            if not pair <= common or pair in e_same or pair in j_same or not checks["aliasing"]:
                continue
            a, b = sorted(pair)
            if (pair in jc.aliasing and not checks["output_aliasing"]
                    and _ROOT.match(a).group() == _ROOT.match(b).group()
                    and re.fullmatch(r"out\d+", _ROOT.match(a).group())):
                continue  # two outputs of one call
            detail = (f"{E}: {a} shares memory with {b}; {J}: not" if pair in ec.aliasing
                      else f"{J}: {a} shares memory with {b}; {E}: not")
            out.append(Mismatch(call, "aliasing", f"{a} / {b}", detail,
                                _pair_category(pair, call), run))
    return out
