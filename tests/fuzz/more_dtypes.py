"""Statements for what issue 36 added: the small and unsigned integers, complex64 and
complex128, and functions of the standard that the rest of the generator does not draw
(take, searchsorted, unique_values, em.linalg), and em.fft's transforms.

A value of a new dtype enters through a cast of one the generator knows (small integers
from int64 only: C leaves a float's conversion out of range undefined, so NumPy and a
kernel may disagree on NaN or 1e30, and the int64 path is where NumPy defines the
wrap-around), takes one or two of the ops its dtype has, and may leave through a
reduction or a real part. The variable it makes is of its dtype: views, gathers, clones,
in-place writes and returns that take any dtype may pick it up. Complex values and the
transforms have gradients (PyTorch's convention): a float32 result that a backward
statement picks differentiates through them, eagerly and under jit alike.
"""

from __future__ import annotations

SMALL_INTS = ("int8", "int16", "int32", "uint8", "uint16", "uint32", "uint64")
COMPLEX = ("complex64", "complex128")
REAL_OF = {"complex64": "float32", "complex128": "float64"}

# (text with {x}, whether it keeps the dtype) for each family; the others give REAL_OF.
INT_OPS = ("{x} + {x}", "{x} * {x}", "{x} - 3", "-{x}", "em.abs({x})", "{x} // 2",
           "{x} & 5", "{x} ^ {x} // 3", "{x} >> 1", "{x} << 1")
COMPLEX_OPS = ("{x} + {x}", "{x} * {x}", "{x} - 1.5", "{x} * 2j", "em.exp({x})",
               "em.conj({x})", "em.sqrt({x})", "{x} / ({x} + 2.0)")
COMPLEX_TO_REAL = ("em.abs({x})", "em.real({x})", "em.imag({x})")
# complex to complex of the same shape, for a value with a last axis of 1 or more points
FFT_OPS = ("em.fft.fft({x})", "em.fft.ifft({x}, norm='ortho')",
           "em.fft.fftn({x}, norm='forward')", "em.fft.fftshift({x})",
           "em.fft.ifftn(em.fft.ifftshift({x}), axes=(0,))")
# real to real of the same shape: a real signal through its half spectrum and back ({m}:
# the last axis's length, which the inverse needs to give back an odd one)
REAL_FFT_ROUND_TRIPS = (
    "em.fft.irfft(em.fft.rfft({x}) * (1.0 + 0.5j), n={m})",
    "em.fft.irfft(em.fft.rfft({x}, n={m} + 3, norm='ortho'), n={m} + 3, norm='ortho')"
    "[..., :{m}]",
    "em.fft.hfft(em.fft.ihfft({x}, norm='forward'), n={m}, norm='forward')",
    "em.fft.irfftn(em.fft.rfftn({x}, norm='ortho') ** 2, s={x}.shape, norm='ortho')",
)


def _transformable(shape) -> bool:
    return len(shape) >= 1 and isinstance(shape[-1], int) and shape[-1] >= 1 and \
        all(d != 0 for d in shape)


def st_more_dtypes(g) -> bool:
    """``y = (cast x to D), one or two ops of D``; sometimes a reduction or, for complex,
    its real part, after."""
    if not g.on("more_dtypes"):
        return False
    target = g.rng.choice(SMALL_INTS + COMPLEX)
    sources = ("int64",) if target in SMALL_INTS else ("float32", "float64", "int64")
    a = g.pick(lambda v: v.dtype in sources)
    if a is None:
        return False
    if target in COMPLEX and a.dtype in REAL_OF.values() and _transformable(a.shape) \
            and g.chance(0.3):
        text = g.rng.choice(REAL_FFT_ROUND_TRIPS).format(x=a.name, m=a.shape[-1])
        g.add_var(text, a.shape, a.dtype, {"more_dtypes"}, a)
        return True
    text, dtype = f"{a.name}.astype(em.{target})", target
    ops = INT_OPS if target in SMALL_INTS else COMPLEX_OPS
    if target in COMPLEX and _transformable(a.shape):
        ops = ops + FFT_OPS
    for _ in range(g.rng.randint(1, 2)):
        text = g.rng.choice(ops).format(x=f"({text})")
    if dtype in COMPLEX and g.chance(0.4):
        text, dtype = g.rng.choice(COMPLEX_TO_REAL).format(x=f"({text})"), REAL_OF[dtype]
    shape = a.shape
    if g.chance(0.25):
        # the standard's sum: a signed integer's in int64, an unsigned one's in uint64
        dtype = ("uint64" if dtype.startswith("uint") else
                 "int64" if dtype in SMALL_INTS else dtype)
        text, shape = f"em.sum({text})", ()
    g.add_var(text, shape, dtype, {"more_dtypes"}, a)
    return True


def st_more_functions(g) -> bool:
    """One of take, searchsorted, unique_values (a shape only the data decides: jit breaks
    the graph there) and em.linalg's inv, det, solve on a well-conditioned matrix."""
    if not g.on("more_functions"):
        return False
    choice = g.rng.choice(("take", "searchsorted", "unique", "inv", "det", "solve"))
    if choice in ("take", "searchsorted", "unique"):
        a = g.pick(lambda v: g.numeric(v) and len(v.shape) >= 1)
        if a is None:
            return False
        if choice == "take":
            axis = g.rng.randrange(len(a.shape))
            size = a.shape[axis]
            index = "[0, 0]" if size == "B" or not isinstance(size, int) or size < 2 \
                else f"[{size - 1}, 0, 1]"
            n = len(index.split(","))
            shape = a.shape[:axis] + (n,) + a.shape[axis + 1:]
            text = f"em.take({a.name}, em.tensor({index}), axis={axis})"
            # index 0 of an empty axis (a batch of 0) is out of range: eager and jit must
            # raise alike
            g.add_var(text, shape, a.dtype, {"more_functions"}, a)
            return True
        # Summed at once: the generator's shapes are ints and the batch, and these sizes
        # are the data's (unique) or the batch's times a constant (searchsorted).
        flat = f"em.reshape({a.name}, (-1,))"
        if choice == "searchsorted":
            text = f"em.sum(em.searchsorted(em.sort({flat}), {flat}))"
            g.add_var(text, (), "int64", {"more_functions"}, a)
            return True
        g.add_var(f"em.sum(em.unique_values({flat}))", (), a.dtype, {"more_functions"}, a)
        return True
    a = g.pick(lambda v: v.dtype in ("float32", "float64") and len(v.shape) == 2)
    if a is None:
        return False
    # a @ a.T + 4 I: symmetric, eigenvalues >= 4, so inv and solve are well conditioned
    m = f"({a.name} @ {a.name}.T + 4.0 * em.eye({a.name}.shape[0], dtype={a.name}.dtype))"
    n = a.shape[0]
    if choice == "inv":
        g.add_var(f"em.linalg.inv({m})", (n, n), a.dtype, {"more_functions", "matmul"}, a)
    elif choice == "det":
        g.add_var(f"em.linalg.det({m})", (), a.dtype, {"more_functions", "matmul"}, a)
    else:
        g.add_var(f"em.linalg.solve({m}, {a.name})", a.shape, a.dtype,
                  {"more_functions", "matmul"}, a)
    return True
