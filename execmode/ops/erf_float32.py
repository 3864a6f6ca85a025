"""float32 erf in NumPy with the bits of the kernels' ``em_erf_f32`` (codegen/em_dialect_c.h).

Eager float32 erf and GELU run that C function (native/eager_erf.c) where its library is
built; this is the same computation where it is not (no compiler, small arrays before the
build, ``EXECMODE_EAGER_OPERATORS=0``), so that eager erf has one answer per input. Every
float32 operation is NumPy's float32 ufunc on float32 operands (IEEE, one rounding each,
as the C compiles them with ``-ffp-contract=off``), and each Horner step is one fused
multiply-add, as the C computes it (``EM_EXACT_FMA``): :func:`fma` rounds ``p * x + c``
once. The constants are the header's, rounded to float32 as the C compiler rounds them;
tests/engine/test_erf_float32.py checks these bits against the C on every interval.
"""

from __future__ import annotations

import numpy as np

_F = np.float32
_INF = np.float64(np.inf)
# float64's 29 fraction bits below float32's: a float32 halfway point has exactly the top one
_LOW_BITS = np.int64((1 << 29) - 1)
_HALFWAY = np.int64(1 << 28)
_TINY = np.float64(2.0 ** -126)  # float32's smallest normal


def fma(p: np.ndarray, x: np.ndarray, c) -> np.ndarray:
    """``p * x + c`` rounded once to float32 (float32 operands). The product is exact in
    float64 (24 + 24 bits) and the sum is rounded there, then to float32: that second
    rounding can differ from the exact value's only where the first landed on a float32
    halfway point (or below float32's normal range, where halfway lies elsewhere). Those
    rare sums are rounded to odd instead (moved one step toward the exact sum where they
    were inexact and their last bit even), which makes the rounding to float32 that of the
    exact value (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums")."""
    prod = np.multiply(p, x, dtype=np.float64)
    c64 = np.asarray(c, np.float64)
    s = prod + c64
    halfway = (s.view(np.int64) & _LOW_BITS) == _HALFWAY
    if (halfway | (np.abs(s) < _TINY)).any():
        back = s - prod
        err = (prod - (s - back)) + (c64 - back)  # Knuth's TwoSum: s + err == prod + c
        fix = (err != 0) & ((s.view(np.int64) & 1) == 0) & np.isfinite(s)
        s = np.where(fix, np.nextafter(s, np.copysign(_INF, err)), s)
    return s.astype(_F)


def exp(x: np.ndarray) -> np.ndarray:
    """``em_exp_f32``: x = n ln2 + r, exp(r) by a degree-5 polynomial, times 2^n in two
    halves."""
    overflows = x > _F(88.8)
    underflows = x < _F(-104.0)
    xc = np.where(overflows, _F(88.8), x)
    xc = np.where(underflows, _F(0.0), xc)
    t = xc * _F(1.44269504088896341) + _F(12582912.0)
    n = t - _F(12582912.0)
    r = xc - n * _F(0.693145751953125)
    r = r - n * _F(1.428606765330187045e-06)
    p = np.full(r.shape, _F(1.9790357328020036e-04))
    for c in (1.3944649836048484e-03, 8.3334967494010925e-03, 4.1666295379400253e-02,
              1.6666665673255920e-01, 0.5):
        p = fma(p, r, _F(c))
    y = _F(1.0) + (r + r * (r * p))
    ni = (t.view(np.uint32) - np.uint32(0x4B400000)).view(np.int32)
    n1 = (ni + (ni < 0)) >> 1  # C's ni / 2, rounded toward zero
    n2 = ni - n1
    s1 = ((n1 + 127).astype(np.uint32) << np.uint32(23)).view(_F)
    s2 = ((n2 + 127).astype(np.uint32) << np.uint32(23)).view(_F)
    e = y * s1 * s2
    return np.where(underflows, _F(0.0), e)


_SMALL = (-8.0102478386834264e-04, 5.1883347332477570e-03, -2.6853816583752632e-02,
          1.1283585429191589e-01, -3.7612625956535339e-01, 1.2837916709551257e-01)
_BIG = (-1.2693669305008370e-05, 6.6093874920625240e-05, 9.4471091870218515e-05,
        -3.3411611802875996e-03, 2.3803757503628731e-02, -1.0692477971315384e-01,
        -6.3422209024429321e-01, -1.1291933059692383e+00, 1.2343005801085383e-04)


def erf(x: np.ndarray) -> np.ndarray:
    """``em_erf_f32`` of a float32 array: x + x P(x^2) below 1, 1 - exp(Q(|x|)) up to 3.92
    (beyond, Q at 3.92 rounds to 1), the sign copied from x."""
    x = np.asarray(x, _F)
    with np.errstate(all="ignore"):
        a = np.abs(x)
        x2 = x * x
        p = np.full(x.shape, _F(7.8540266258642077e-05))
        for c in _SMALL:
            p = fma(p, x2, _F(c))
        small = a + a * p
        below = a < _F(1.0)
        t = np.where(a > _F(3.92), _F(3.92), a)
        t = np.where(below, _F(1.0), t)
        q = np.full(x.shape, _F(7.9894272175806691e-07))
        for c in _BIG:
            q = fma(q, t, _F(c))
        big = _F(1.0) - exp(q)
        return np.copysign(np.where(below, small, big), x)


__all__ = ["erf", "exp", "fma"]
