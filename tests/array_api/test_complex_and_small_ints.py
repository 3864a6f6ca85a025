"""The Array API's small and unsigned integers and complex64/complex128 (issue 36): the
dtype objects, the standard's promotion, creation, elementwise functions and reductions
against NumPy on both eager paths, the complex functions, fft, the refusal of complex
gradients, and em.jit agreeing with eager while the kernels keep such ops out (the reason
in the pass record)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import execmode as em
from execmode.jit_driver import paths

SMALL_INTS = ("int8", "int16", "uint8", "uint16", "uint32", "uint64")
COMPLEX = ("complex64", "complex128")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _same(got, want):
    """The tensor holds NumPy's answer: dtype and values (NaNs where NumPy's are)."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got.numpy(), want)


def _close(got, want):
    """NumPy's dtype, and its values to rounding: for library calls (fft, LAPACK, NumPy's
    vecdot) whose last bits may depend on the memory they are given or on the BLAS."""
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def _standard_int_promotion(a: np.dtype, b: np.dtype):
    """The standard's table for two integer dtypes, written from its rules (not NumPy's):
    the wider of two of one signedness; a signed and an unsigned one give the narrowest
    signed integer holding both; uint64 with a signed integer is not defined (None)."""
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    bits = max(signed.itemsize, 2 * unsigned.itemsize)
    return None if bits > 8 else np.dtype(f"int{8 * bits}")


@pytest.mark.parametrize("a, b", list(itertools.product(INTS, INTS)))
def test_integer_promotion_is_the_standards_table(a, b):
    a, b = getattr(em, a), getattr(em, b)
    want = _standard_int_promotion(a, b)
    if want is None:
        with pytest.raises(em.DTypeError, match="no promotion"):
            em.result_type(a, b)
    else:
        assert em.result_type(a, b) == want


def test_complex_promotion_and_python_scalars():
    assert em.result_type(em.float32, em.complex64) == em.complex64
    assert em.result_type(em.float64, em.complex64) == em.complex128
    assert em.result_type(em.float32, em.complex128) == em.complex128
    assert em.result_type(em.float32, 1j) == em.complex64  # weak, as 0.5 is
    assert em.result_type(em.complex64, 2.0) == em.complex64
    for mix in ((em.int64, em.complex64), (em.bool, em.complex64), (em.int8, 1j)):
        with pytest.raises(em.DTypeError):
            em.result_type(*mix)
    assert em.can_cast(em.float32, em.complex64) and not em.can_cast(em.complex64, em.float32)
    assert em.can_cast(em.uint8, em.int16) and not em.can_cast(em.uint8, em.int8)


def test_dtype_objects_names_and_inspection():
    for name in SMALL_INTS + COMPLEX:
        dt = getattr(em, name)
        assert dt is np.dtype(name) and em.zeros((2,), dtype=name).dtype == dt
    assert em.isdtype(em.complex64, "complex floating")
    assert not em.isdtype(em.complex64, "real floating")
    assert em.isdtype(em.uint16, "unsigned integer") and em.isdtype(em.int8, "integral")
    assert set(em.__array_namespace_info__().dtypes(kind="numeric")) >= set(SMALL_INTS + COMPLEX)
    info = em.finfo(em.complex64)
    assert info.dtype == em.float32 and info.eps == float(np.finfo(np.float32).eps)
    assert em.finfo(em.complex128).bits == 64
    assert em.iinfo(em.uint8).max == 255 and em.iinfo(em.int16).min == -32768


def test_creation_makes_the_asked_dtypes():
    assert em.tensor([1 + 2j]).dtype == em.complex64  # as torch.tensor: the default float's
    assert em.asarray([1 + 2j]).dtype == em.complex64
    _same(em.full((2,), 1j), np.full((2,), 1j, np.complex64))
    _same(em.ones((2, 2), dtype=em.complex128), np.ones((2, 2), np.complex128))
    _same(em.arange(5, dtype=em.uint8), np.arange(5, dtype=np.uint8))
    _same(em.eye(3, dtype=em.int16), np.eye(3, dtype=np.int16))
    _same(em.linspace(0, 1, 3, dtype=em.complex64), np.linspace(0, 1, 3, dtype=np.complex64))
    assert complex(em.asarray(1 - 2j)) == 1 - 2j
    _same(em.astype(em.asarray([1.5, -2.0]), em.complex128), np.array([1.5 + 0j, -2.0]))


@pytest.mark.usefixtures("eager_path")
@pytest.mark.parametrize("name", SMALL_INTS)
def test_small_int_arithmetic_is_numpys_on_both_eager_paths(name):
    a = np.array([[1, 2, 3], [4, 5, 100]], dtype=name)
    b = np.array([3, 2, 7], dtype=name)
    x, y = em.asarray(a), em.asarray(b)
    with np.errstate(all="ignore"):  # uint8 overflow wraps, as NumPy's does
        for _ in range(3):  # past the hot count the operators are the installed ones
            _same(x + y, a + b)
            _same(x * y, a * b)
            _same(x - y, a - b)
            _same(x * 3, a * 3)
        _same(x // y, a // b)
        _same(x % y, a % b)
        _same(x / y, a / b)
        _same(x & y, a & b)
        _same(x ^ y, a ^ b)
        _same(~x, ~a)
    _same(em.max(x, axis=0), a.max(axis=0))
    _same(em.sum(x), a.sum())
    _same(em.cumulative_sum(x, axis=1), np.cumulative_sum(a, axis=1))
    _same(em.sort(y), np.sort(b))
    _same(em.astype(x, em.float32), a.astype(np.float32))
    _same(em.where(x > 2, x, y), np.where(a > 2, a, b))


@pytest.mark.usefixtures("eager_path")
@pytest.mark.parametrize("name", COMPLEX)
def test_complex_functions_are_numpys_on_both_eager_paths(name):
    a = np.array([[1 + 2j, -3.5 + 0.5j], [0j, 2 - 1j]], dtype=name)
    x = em.asarray(a)
    real = np.dtype(name).type(0).real.dtype
    for _ in range(3):
        _same(x + x, a + a)
        _same(x * x, a * a)
        _same(x / (x + 1), a / (a + 1))
        _same(x * 0.5, a * 0.5)
        _same(em.asarray(a.real.astype(real)) + x, a.real.astype(real) + a)
        _same(em.asarray(a.real.astype(real)) * 1j, a.real.astype(real) * 1j)
    for fn, ref in ((em.exp, np.exp), (em.log1p, np.log1p), (em.sqrt, np.sqrt),
                    (em.tanh, np.tanh), (em.sinh, np.sinh), (em.cosh, np.cosh),
                    (em.sin, np.sin), (em.negative, np.negative), (em.square, np.square),
                    (em.sign, np.sign), (em.conj, np.conj), (em.abs, np.abs)):
        with np.errstate(all="ignore"):
            _same(fn(x), ref(a))
    assert em.abs(x).dtype == real
    _same(em.real(x), a.real.copy())
    _same(em.imag(x), a.imag.copy())
    _same(em.sum(x, axis=0), a.sum(axis=0))
    _same(em.mean(x), np.mean(a))
    _same(em.matmul(x, x), a @ a)
    _close(em.vecdot(x, x), np.vecdot(a, a))  # x1 conjugated, as the standard asks
    _same(x == em.conj(x), a == np.conj(a))


def test_complex_parts_are_copies_and_real_tensors_keep_their_composites():
    z = em.asarray(np.array([1 + 2j, 3 - 4j], np.complex64))
    re = em.real(z)
    re[0] = 9.0
    assert z.tolist() == [1 + 2j, 3 - 4j]  # a copy, not NumPy's strided view
    f = em.tensor([1.0, -2.0])
    assert em.real(f).tolist() == [1.0, -2.0] and em.imag(f).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_fft_transforms_are_numpys(dtype):
    rng = np.random.default_rng(36)
    a = rng.standard_normal((4, 6)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((4, 6)).astype(dtype)
    x = em.asarray(a)
    _close(em.fft.fft(x), np.fft.fft(a))
    _close(em.fft.ifft(x, n=8, axis=0, norm="ortho"), np.fft.ifft(a, n=8, axis=0, norm="ortho"))
    _close(em.fft.fftn(x), np.fft.fftn(a))
    _close(em.fft.ifftn(x, s=(2, 4), axes=(0, 1)), np.fft.ifftn(a, s=(2, 4), axes=(0, 1)))
    _close(em.fft.irfft(x), np.fft.irfft(a))
    _close(em.fft.hfft(x, n=6), np.fft.hfft(a, n=6))
    _close(em.fft.irfftn(x, axes=(0, 1)), np.fft.irfftn(a, axes=(0, 1)))
    if np.dtype(dtype).kind == "f":
        _close(em.fft.rfft(x), np.fft.rfft(a))
        _close(em.fft.rfftn(x, s=(3, 4)), np.fft.rfftn(a, s=(3, 4), axes=(0, 1)))
        _close(em.fft.ihfft(x, axis=0), np.fft.ihfft(a, axis=0))
        assert em.fft.fft(x).dtype == (em.complex64 if dtype == "float32" else em.complex128)


def test_fft_refuses_what_the_standard_refuses():
    with pytest.raises(em.DTypeError, match="real floating-point"):
        em.fft.rfft(em.asarray(np.ones(4, np.complex64)))
    with pytest.raises(em.DTypeError, match="floating-point"):
        em.fft.fft(em.asarray([1, 2, 3]))
    with pytest.raises(ValueError, match="n must be >= 1"):
        em.fft.fft(em.ones((4,)), n=0)
    with pytest.raises(ValueError, match="norm"):
        em.fft.fft(em.ones((4,)), norm="sideways")
    with pytest.raises(IndexError):
        em.fft.fft(em.ones((4,)), axis=1)


def test_backward_through_complex_values_names_the_op():
    # round has a rule for real values only: a backward through it of complex values
    # refuses, naming it (ops/complex_grad.py lists the ops that differentiate)
    x = em.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = em.round(x * 1j)
    assert y.requires_grad
    with pytest.raises(em.BackwardError, match="^round: no gradient through complex"):
        y.backward(em.ones(y.shape, dtype=y.dtype))
    spectrum_rounded = em.round(em.fft.rfft(x))  # rows [3, -1] and [7, -1]
    with pytest.raises(em.BackwardError, match="^round: no gradient"):
        spectrum_rounded.backward(em.ones(spectrum_rounded.shape,
                                          dtype=spectrum_rounded.dtype))
    # real ops around it still differentiate: only the complex part is refused
    z = em.tensor([3.0], requires_grad=True)
    em.sum(z * z).backward()
    assert z.grad.tolist() == [6.0]


def test_backward_through_complex_values_under_jit_names_the_op():
    x = em.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)

    def step(x):
        loss = em.real(em.sum(em.round(em.exp(x * 1j))))
        loss.backward()
        return loss

    with pytest.raises(em.BackwardError, match="no gradient through complex"):
        em.jit(step)(x)


def _complex_program(x, w):
    z = x * 1j + w              # complex64 from float32
    mag = em.abs(z) * 2.0 + 1.0  # back to float32: the multiply-add fuses
    spectrum = em.fft.fft(z)
    return mag, em.real(spectrum), em.sum(em.conj(z)), em.astype(x, em.uint8) + 1


@pytest.mark.parametrize("replay", ["general", "generated", "native"])
def test_jit_agrees_with_eager_on_complex_and_small_ints_and_says_why(replay):
    x = em.asarray(np.linspace(-2, 3, 6, dtype=np.float32))
    w = em.asarray(np.arange(6, dtype=np.float32))
    want = _complex_program(x, w)
    f = em.jit(_complex_program)
    with paths.pinned(replay=replay):
        for _ in range(3):  # the trace, then replays
            got = f(x, w)
            for g, e in zip(got, want, strict=True):
                assert g.dtype == e.dtype
                np.testing.assert_array_equal(g.numpy(), e.numpy())
    record = f.lower(x, w).record
    sentences = [r.sentence for r in record.result("fuse").rewrites]
    assert any("(abs) out of fusion: the C/CUDA kernels have no c64 type" in s
               for s in sentences)
    assert any("(add) out of fusion: the C/CUDA kernels have no u8 type" in s
               for s in sentences)
    assert any(s.startswith("fused") for s in sentences)  # the float32 part still fuses
    record.results[-1].to_json(0)  # complex literals and constants serialise


def test_linalg_of_complex_matrices_is_numpys_with_real_parts_real():
    rng = np.random.default_rng(36)
    a = (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))).astype(np.complex64)
    hermitian = (a @ a.conj().T + 3 * np.eye(3)).astype(np.complex64)
    x, h = em.asarray(a), em.asarray(hermitian)
    _close(em.linalg.det(x), np.linalg.det(a))
    _close(em.linalg.inv(x), np.linalg.inv(a))
    _close(em.linalg.svdvals(x), np.linalg.svd(a, compute_uv=False))  # float32
    _close(em.linalg.eigvalsh(h), np.linalg.eigvalsh(hermitian))      # float32
    sign, logabsdet = em.linalg.slogdet(x)
    assert sign.dtype == em.complex64 and logabsdet.dtype == em.float32
    traced = em.jit(lambda m: em.linalg.svdvals(m) * 2.0)(x)
    np.testing.assert_array_equal(traced.numpy(), (em.linalg.svdvals(x) * 2.0).numpy())
    with pytest.raises(em.DTypeError, match="floating-point"):
        em.linalg.det(em.asarray(np.eye(2, dtype=np.int8)))


def test_cumulative_sum_in_an_asked_small_dtype_wraps_as_numpys():
    a = np.array([200, 100, 50], np.uint8)
    _same(em.cumulative_sum(em.asarray(a), dtype=em.uint8), np.cumulative_sum(a, dtype=np.uint8))
    b = np.array([100, 100, -50], np.int8)
    _same(em.cumulative_sum(em.asarray(b), dtype=em.int8), np.cumulative_sum(b, dtype=np.int8))
    _same(em.cumulative_sum(em.asarray(a)), np.cumulative_sum(a))  # uint64 by default
    assert em.cumsum(em.asarray([1, 2, 3]), dtype=em.int32).dtype == em.int32


def test_a_python_int_a_small_dtype_cannot_hold_is_a_value_error_in_both_modes():
    x = em.asarray([1, 2], dtype=em.uint8)
    with pytest.raises(ValueError, match=r"add\(u8\[2\]@cpu, 300 .*out of bounds for uint8"):
        x + 300
    with pytest.raises(ValueError, match=r"add\(u8\[2\]@cpu, 300 .*out of bounds for uint8"):
        em.jit(lambda t: t + 300)(x)


def test_ops_without_a_kernel_helper_say_so_in_the_pass_record():
    low = em.jit(lambda x: em.acosh(x) * 2.0 + 1.0).lower(em.full((3,), 2.0))
    sentences = [r.sentence for r in low.record.result("fuse").rewrites]
    assert sentences[0].startswith("kept %1 (acosh) out of fusion: the C/CUDA kernels have "
                                   "no helper for it; it runs on NumPy as eagerly")
    assert sentences[1].startswith("fused")


def test_an_empty_bool_mask_of_another_shape_selects_nothing_as_numpys():
    # the standard leaves a mask that does not fit unspecified; NumPy takes an empty one
    for shape, mask_shape in (((0, 1), (0, 0)), ((1,), (0,)), ((2, 3), (2, 0))):
        a, m = np.ones(shape, np.float32), np.zeros(mask_shape, bool)
        _same(em.asarray(a)[em.asarray(m)], a[m])
    with pytest.raises(IndexError, match="does not match the leading dimensions"):
        em.zeros((3,))[em.asarray([True, False])]


def test_values_a_dtype_cannot_take_are_value_errors_naming_the_op():
    with pytest.raises(ValueError, match=r"tensor\(.*out of bounds for uint8"):
        em.asarray([-1], dtype=em.uint8)
    with pytest.raises(ValueError, match=r"power\(i8\[3\]@cpu.*negative integer powers"):
        em.asarray([1, 2, 3], dtype=em.int8) ** -1


def test_linspace_between_complex_numbers():
    _same(em.linspace(0, 1j, 3), np.linspace(0, 1j, 3, dtype=np.complex64))
    _same(em.linspace(1 + 1j, 2, 4, dtype=em.complex128), np.linspace(1 + 1j, 2, 4))
