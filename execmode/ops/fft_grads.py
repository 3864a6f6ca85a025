"""The vjps of the fft transforms (ops/fft.py), in PyTorch's convention for complex values
(complex_grad.py): each is the adjoint of the transform, written with the transforms
themselves, so a backward traces under em.jit into the same plan steps as the forward.

A transform with norm N is a matrix: ``fft`` the DFT matrix W (``backward``: unscaled,
``ortho``: / sqrt(n), ``forward``: / n), ``ifft`` conj(W) scaled the other way. The adjoint
of ``fft`` with N is ``ifft`` with the dual norm (backward <-> forward, ortho <-> ortho),
and the other way round. Around that:

* ``n``/``s`` pad (zeros) or cut the input before transforming: the adjoint cuts or pads
  the gradient back to the input's length;
* ``rfft`` keeps the first n//2 + 1 outputs of the DFT of a real signal: the adjoint pads
  the gradient with zeros to n, transforms it back and keeps the real part;
* ``irfft`` reads each of the n//2 + 1 inputs once for itself and (but for the first and,
  for an even n, the last) once for its mirror image: its adjoint is ``rfft`` of the
  gradient with the dual norm, those inputs' entries doubled, and the imaginary parts of
  the entries it ignores (the first's; an even n's last) come out 0 as they should;
* ``hfft`` is irfft of conj(x), ``ihfft`` conj(rfft(x)), both with the dual norm (as NumPy
  defines them).
"""

from __future__ import annotations

from .complex_grad import to_operand
from .registry import F, normalize_axis

DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
_INVERSE = {"fft": "ifft", "ifft": "fft"}


def _index(axis, part):
    """An index taking ``part`` (a slice) of ``axis`` and all of the axes before it."""
    return (slice(None),) * axis + (part,)


def _resize(t, axis, m):
    """``t`` cut or padded with zeros at the end of ``axis`` to length ``m``."""
    size = t.shape[axis]
    if size > m:
        return t[_index(axis, slice(0, m))]
    if size < m:
        widths = tuple((0, m - size if a == axis else 0) for a in range(t.ndim))
        return F.apply_op("pad", t, widths=widths, value=0)
    return t


def _resize_all(t, axes, shape):
    for a in axes:
        t = _resize(t, a, shape[a])
    return t


def _double_mirrored(t, axis, n):
    """``t`` (n//2 + 1 entries along ``axis``) with entries 1 .. n - n//2 - 1 doubled:
    those the inverse real transform of n points reads twice."""
    twice = n - n // 2 - 1
    if twice <= 0:
        return t
    parts = [t[_index(axis, slice(0, 1))],
             t[_index(axis, slice(1, 1 + twice))] * 2]
    if 1 + twice < t.shape[axis]:
        parts.append(t[_index(axis, slice(1 + twice, None))])
    return F.concat(parts, axis=axis)


def _plan(x, s, axes, real_last):
    """The transformed axes and their transform sizes (the last one of a complex-to-real
    transform: 2 * (m - 1) points by default)."""
    ndim = x.ndim
    if axes is None:
        axes = tuple(range(ndim)) if s is None else tuple(range(ndim - len(s), ndim))
    axes = tuple(normalize_axis(a, ndim) for a in axes)
    sizes = []
    for k, a in enumerate(axes):
        v = None if s is None else s[k]
        if v is None or v == -1:
            v = 2 * (x.shape[a] - 1) if real_last and k == len(axes) - 1 else x.shape[a]
        sizes.append(v)
    return axes, sizes


# --- the vjps, one per kind of transform; x is the transform's input ---------------------

def complex_vjp(name):
    """fft, ifft, fftn, ifftn: the inverse transform with the dual norm, resized back."""
    inverse = _INVERSE[name.rstrip("n")] + ("n" if name.endswith("n") else "")

    def vjp(g, out, x, *, norm, n=None, axis=None, s=None, axes=None):
        if name.endswith("n"):
            axes, _ = _plan(x, s, axes, False)
            gx = F.apply_op(f"fft_{inverse}", g, s=None, axes=axes, norm=DUAL[norm])
        else:
            axes = (normalize_axis(axis, x.ndim),)
            gx = F.apply_op(f"fft_{inverse}", g, n=None, axis=axes[0], norm=DUAL[norm])
        return (to_operand(_resize_all(gx, axes, x.shape), x),)

    return vjp


def _real_to_complex_adjoint(g, x, axes, sizes, norm):
    """The adjoint of rfftn over ``axes`` with transform sizes ``sizes``: the gradient
    padded to the full spectrum on the last axis, inverse-transformed with the dual norm,
    its real part, resized to x's shape."""
    g = _resize(g, axes[-1], sizes[-1])
    gx = F.apply_op("fft_ifftn", g, s=None, axes=axes, norm=DUAL[norm])
    return F.real(_resize_all(gx, axes, x.shape))


def _complex_to_real_adjoint(g, x, axes, sizes, norm):
    """The adjoint of irfftn over ``axes`` (sizes: the output's): rfftn of the gradient
    with the dual norm, the entries read twice doubled, resized to x's shape."""
    gx = F.apply_op("fft_rfftn", g, s=None, axes=axes, norm=DUAL[norm])
    gx = _double_mirrored(gx, axes[-1], sizes[-1])
    return _resize_all(gx, axes, x.shape)


def _axes_of(x, n, axis, s, axes, one_axis, real_last):
    if one_axis:
        return _plan(x, None if n is None else (n,), (axis,), real_last)
    return _plan(x, s, axes, real_last)


def real_vjp(name):
    """rfft(n), irfft(n), hfft, ihfft."""
    one_axis = not name.endswith("n")

    def vjp(g, out, x, *, norm, n=None, axis=None, s=None, axes=None):
        real_last = name in ("irfft", "irfftn", "hfft")
        axes, sizes = _axes_of(x, n, axis, s, axes, one_axis, real_last)
        if name in ("rfft", "rfftn"):
            gx = _real_to_complex_adjoint(g, x, axes, sizes, norm)
        elif name in ("irfft", "irfftn"):
            gx = _complex_to_real_adjoint(g, x, axes, sizes, norm)
        elif name == "hfft":  # irfft(conj(x)) with the dual norm
            gx = F.conj(_complex_to_real_adjoint(g, x, axes, sizes, DUAL[norm]))
        else:  # ihfft: conj(rfft(x)) with the dual norm
            gx = _real_to_complex_adjoint(F.conj(g), x, axes, sizes, DUAL[norm])
        return (to_operand(gx, x),)

    return vjp


def vjp_of(name):
    if name in ("fft", "ifft", "fftn", "ifftn"):
        return complex_vjp(name)
    return real_vjp(name)
