"""Gradients through complex values (ops/complex_grad.py, issue 36): elementwise
functions, arithmetic with real and complex operands, the complex parts, casts, sums and
matmul, against PyTorch's autograd (complex64 and complex128) and against finite
differences in complex128, and eager against em.jit."""

from __future__ import annotations

import numpy as np
import pytest
from complex_oracles import (
    assert_jitted_backward_is_eagers,
    em_gradients,
    finite_differences,
    torch_gradients,
    weights_for,
)
from pytorch_twins import torch_or_skip

import execmode as em


def _away_from_cuts(shape, seed):
    """Complex values with |re| and |im| in [0.3, 0.9]: off both axes (every branch cut
    of log, sqrt, the inverse functions) and off their singular points."""
    rng = np.random.default_rng(seed)

    def part():
        return rng.uniform(0.3, 0.9, shape) * rng.choice([-1.0, 1.0], shape)

    return part() + 1j * part()


def _real(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


TAKE = np.array([[0, 3, 3], [1, 1, 0], [2, 0, 1]])  # repeats: their gradients add up


def _unary(name, torch_name=None):
    return lambda ns, z: getattr(ns, torch_name if ns is not em and torch_name else name)(z)


UNARY = {
    "exp": _unary("exp"), "log": _unary("log"), "log1p": _unary("log1p"),
    "expm1": _unary("expm1"), "sqrt": _unary("sqrt"), "square": _unary("square"),
    "sin": _unary("sin"), "cos": _unary("cos"), "tan": _unary("tan"),
    "tanh": _unary("tanh"), "sinh": _unary("sinh"), "cosh": _unary("cosh"),
    "asin": _unary("asin"), "acos": _unary("acos"), "atan": _unary("atan"),
    "acosh": _unary("acosh"), "asinh": _unary("asinh"), "atanh": _unary("atanh"), "log2": _unary("log2"),
    "log10": _unary("log10"), "reciprocal": _unary("reciprocal"),
    "negative": _unary("negative"), "positive": _unary("positive"),
    "abs": _unary("abs"), "sign": _unary("sign", "sgn"), "conj": _unary("conj"),
    "real": _unary("real"),
    "imag": _unary("imag"),
    "sum": lambda ns, z: ns.sum(z, axis=0) if ns is em else ns.sum(z, dim=0),
    "mean": lambda ns, z: ns.mean(z, axis=1) if ns is em else ns.mean(z, dim=1),
    "power_int": lambda ns, z: z ** 3,
    "getitem_reshape": lambda ns, z: ns.reshape(z[1:, ::2], (-1,)),
    "where": lambda ns, z: ns.where(ns.real(z) > 0, z, z * 2),
    "to_complex128": lambda ns, z: z.to(ns.complex128) if ns is not em
    else em.astype(z, em.complex128),
    # the real linear maps listed in ops/complex_grad.COMPLEX_DIFFERENTIABLE
    "cumulative_sum": lambda ns, z: ns.cumulative_sum(z, axis=1) if ns is em
    else ns.cumsum(z, dim=1),
    "tril": lambda ns, z: ns.tril(z, k=1) if ns is em else ns.tril(z, 1),
    "take_along_axis": lambda ns, z: ns.take_along_axis(z, ns.asarray(TAKE), axis=1)
    if ns is em else ns.take_along_dim(z, ns.tensor(TAKE), dim=1),
    "boolean_mask": lambda ns, z: z[ns.real(z) > 0],
    "concat_permute": lambda ns, z: ns.concat([z, z * 2], axis=0).T if ns is em
    else ns.cat([z, z * 2], dim=0).T,
    "broadcast": lambda ns, z: ns.broadcast_to(z[:, :1], (3, 5)) if ns is em
    else z[:, :1].expand(3, 5),
    # composites of the ops above
    "flip": lambda ns, z: ns.flip(z, axis=1) if ns is em else ns.flip(z, dims=(1,)),
    "roll": lambda ns, z: ns.roll(z, 1, axis=0) if ns is em else ns.roll(z, 1, dims=0),
    "stack_tile": lambda ns, z: ns.tile(ns.stack([z, z * 2]), (1, 2, 1)),
    "repeat": lambda ns, z: ns.repeat(z, 2, axis=1) if ns is em
    else ns.repeat_interleave(z, 2, dim=1),
    "take": lambda ns, z: ns.take(z, ns.asarray([0, 2, 2]), axis=0) if ns is em
    else ns.index_select(z, 0, ns.tensor([0, 2, 2])),
    "vecdot": lambda ns, z: (ns if ns is em else ns.linalg).vecdot(z, z * 1j + 1),
    "tensordot": lambda ns, z: ns.tensordot(z, z, axes=([1], [1])) if ns is em
    else ns.tensordot(z, z, dims=([1], [1])),
    "outer": lambda ns, z: (ns.linalg if ns is em else ns).outer(z[0], z[1]),
    "vector_norm": lambda ns, z: ns.linalg.vector_norm(z, axis=1) if ns is em
    else ns.linalg.vector_norm(z, dim=1),
    "trace_diagonal": lambda ns, z: ns.linalg.trace(z[:, :3]) + ns.linalg.diagonal(z)
    if ns is em else ns.trace(z[:, :3]) + ns.diagonal(z),
    "cumulative_prod": lambda ns, z: ns.cumulative_prod(z, axis=1) if ns is em
    else ns.cumprod(z, dim=1),
    "power_half": lambda ns, z: z ** 0.5,
    "number_to_the_power": lambda ns, z: 2.0 ** z + (-1.5) ** z,
}

# two operands: (function, the kinds of its operands: "c" complex, "r" real)
BINARY = {
    "add": (lambda ns, a, b: a + b, "cc"),
    "subtract": (lambda ns, a, b: a - b, "cr"),
    "multiply": (lambda ns, a, b: a * b, "cc"),
    "multiply_real": (lambda ns, a, b: a * b, "rc"),
    "divide": (lambda ns, a, b: a / b, "cc"),
    "divide_by_real": (lambda ns, a, b: a / b, "cr"),
    "real_over_complex": (lambda ns, a, b: a / b, "rc"),
    "power": (lambda ns, a, b: a ** b, "cc"),
    "matmul": (lambda ns, a, b: a @ b, "cc"),
    # torch's matmul takes one dtype: its twin casts the real operand first
    "matmul_real_left": (lambda ns, a, b: (a if ns is em else a.to(b.dtype)) @ b, "rc"),
    "scalar_and_cast": (lambda ns, a, b: (a * 2j + 1.5) * b, "rc"),
}


def _operands(kinds, seed, matmul=False):
    shapes = [(3, 4), (4, 2)] if matmul else [(3, 4), (3, 4)]
    return [_away_from_cuts(s, seed + i) if k == "c" else _real(s, seed + i)
            for i, (k, s) in enumerate(zip(kinds, shapes))]


def _cast(arrays, single):
    if not single:
        return arrays
    return [a.astype(np.complex64 if a.dtype.kind == "c" else np.float32) for a in arrays]


def _output_weights(fn, arrays, seed=3):
    with em.no_grad():
        out = fn(em, *(em.tensor(a) for a in arrays))
    w = weights_for(out.shape, out.dtype.kind == "c", seed)
    return w.astype(out.dtype.name) if out.dtype.kind in "fc" else w


def _check_twin(fn, arrays, name):
    torch = torch_or_skip()
    for single, rtol, atol in ((False, 1e-10, 1e-12), (True, 2e-4, 2e-5)):
        typed = _cast(arrays, single)
        weights = _output_weights(fn, typed)
        ours = em_gradients(fn, typed, weights)
        theirs = torch_gradients(torch, fn, typed, weights)
        for a, got, want in zip(typed, ours, theirs, strict=True):
            assert got.dtype == a.dtype, f"{name}: the gradient of a {a.dtype} is {got.dtype}"
            np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol,
                                       err_msg=f"{name} ({a.dtype})")


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_gradients_match_pytorchs(name):
    _check_twin(UNARY[name], [_away_from_cuts((3, 4), 0)], name)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradients_match_pytorchs(name):
    fn, kinds = BINARY[name]
    _check_twin(fn, _operands(kinds, 10, matmul="matmul" in name), name)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tan", "asin", "acosh", "atanh",
                                  "abs", "sign", "imag", "where", "vecdot", "vector_norm",
                                  "cumulative_prod", "number_to_the_power"])
def test_unary_gradients_match_finite_differences(name):
    fn = UNARY[name]
    arrays = [_away_from_cuts((2, 3), 5)]
    weights = _output_weights(fn, arrays)
    got = em_gradients(fn, arrays, weights)[0].numpy()
    np.testing.assert_allclose(got, finite_differences(fn, arrays, weights)[0],
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["multiply_real", "divide", "power", "matmul_real_left",
                                  "scalar_and_cast"])
def test_binary_gradients_match_finite_differences(name):
    fn, kinds = BINARY[name]
    arrays = _operands(kinds, 20, matmul="matmul" in name)
    weights = _output_weights(fn, arrays)
    for got, want in zip(em_gradients(fn, arrays, weights),
                         finite_differences(fn, arrays, weights), strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-7)


def test_a_real_input_gets_the_real_part_and_a_complex_one_the_whole_gradient():
    x = em.tensor([1.0, -2.0], dtype=em.float64, requires_grad=True)
    z = em.tensor([1.0 + 1.0j, 2.0 - 3.0j], dtype=em.complex128, requires_grad=True)
    em.sum(em.real(x * 1j * z)).backward()
    # d/dx re(i x z) = re(i z) = -im(z); d/dz: conj(i x) = -i x
    assert x.grad.dtype == em.float64 and x.grad.tolist() == [-1.0, 3.0]
    assert z.grad.dtype == em.complex128
    np.testing.assert_array_equal(z.grad.numpy(), [-1j, 2j])


def test_the_gradient_of_abs_at_zero_is_zero_as_pytorchs():
    z = em.tensor([0j, 3.0 + 4.0j], dtype=em.complex128, requires_grad=True)
    em.sum(em.abs(z)).backward()
    np.testing.assert_array_equal(z.grad.numpy(), [0j, 0.6 + 0.8j])


@pytest.mark.parametrize("dtype", [em.complex64, em.complex128])
def test_the_gradient_of_sign_at_zero_is_zero_as_pytorchs(dtype):
    # sign(z) = z / |z|: its gradient (g - Re(g conj(s)) s) / |z| away from 0, and 0 at 0
    # (torch's sgn_backward), where a plain division would make 0/0 a NaN.
    torch = torch_or_skip()
    values = np.array([0j, 3.0 + 4.0j, -2.0 + 0j, 0.5j], dtype=dtype.name)
    g = np.array([1.0 - 2.0j, 0.5 + 1.0j, 2.0 + 3.0j, -1.0 + 0.25j], dtype=dtype.name)
    z = em.tensor(values, requires_grad=True)
    em.sign(z).backward(em.asarray(g))
    t = torch.tensor(values, requires_grad=True)
    torch.sgn(t).backward(torch.tensor(g))
    assert z.grad.dtype == dtype and z.grad.numpy()[0] == 0
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_the_sign_of_real_values_passes_no_gradient():
    # a step function: its gradient is 0, so nothing flows back through it
    x = em.tensor([1.5, -2.0, 0.0], requires_grad=True)
    em.sum(em.sign(x) * 3.0).backward()
    assert x.grad is None or not x.grad.numpy().any()
    em.sum(em.sign(x) * x).backward()  # through the multiply's other operand only
    assert x.grad.tolist() == [1.0, -1.0, 0.0]


def test_what_has_no_complex_gradient_still_says_so():
    # round of complex values keeps the refusal (torch has no gradient for it either): its
    # rule is for real values
    z = em.tensor([[1.0 + 1.0j, 2.0 - 1.0j], [0.5j, 3.0 + 0j]], requires_grad=True)
    with pytest.raises(em.BackwardError,
                       match="^round: no gradient through complex"):
        em.sum(em.real(em.round(z) * z)).backward()


JITTED = {
    "elementwise": (lambda z, x: em.sum(em.abs(em.exp(z) * x + em.sqrt(z) / (z + 2j))),
                    "c"),
    "matmul_and_parts": (lambda z, x: em.sum(em.real(z @ em.matrix_transpose(em.conj(z)))
                                             + em.imag(z * z) @ x), "c"),
    "casts": (lambda z, x: em.sum(em.abs(em.astype(x, z.dtype) * z) ** 2
                                  + em.astype(em.astype(z, em.complex128), x.dtype)), "c"),
    "sign": (lambda z, x: em.sum(em.real(em.sign(z) * x) + em.imag(em.sign(z * z - x))),
             "c"),
}


@pytest.mark.parametrize("name", sorted(JITTED))
@pytest.mark.parametrize("single", [False, True])
def test_a_jitted_backward_is_eagers(name, single):
    fn, _ = JITTED[name]
    z0, x0 = _cast([_away_from_cuts((3, 3), 1), _real((3, 3), 2)], single)
    assert_jitted_backward_is_eagers(fn, [z0, x0], 2e-6 if single else 1e-13)


def test_the_gradient_of_a_number_to_a_real_power_is_double_precision():
    # d/dx 2**x = 2**x log 2: log 2 was taken of a float32 tensor made of the base (an
    # error of 1e-8 of the gradient, in float64 too); torch's is exact to rounding
    torch = torch_or_skip()
    a = np.array([0.3, -1.2, 2.0, 7.5])
    x = em.tensor(a, requires_grad=True)
    em.sum(2.0 ** x).backward()
    t = torch.tensor(a, requires_grad=True)
    (2.0 ** t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-15, atol=0)


def test_backward_of_a_complex_scalar_needs_a_gradient_as_in_torch():
    values = np.array([1 + 2j, 3 - 1j], np.complex64)
    x = em.tensor(values, requires_grad=True)
    with pytest.raises(em.errors.BackwardError, match="complex tensor .* needs a gradient"):
        (em.exp(x) * x).sum().backward()
    torch = torch_or_skip()
    t = torch.tensor(values, requires_grad=True)
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        (torch.exp(t) * t).sum().backward()


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_var_and_std_of_complex_values_are_numpys_and_differentiate_as_torchs(axis):
    # The variance of complex values is the mean of |x - mean|^2, a real number (NumPy,
    # PyTorch); the imaginary parts were dropped before.
    values = np.array([[1 + 2j, 3 - 1j, 0.5 + 0.5j], [2j, -1, 4 + 4j]], np.complex64)
    got = em.var(em.tensor(values), axis=axis)
    assert got.dtype == em.float32
    np.testing.assert_allclose(got.numpy(), np.var(values, axis=axis), rtol=1e-6)
    np.testing.assert_allclose(em.std(em.tensor(values), axis=axis, correction=1).numpy(),
                               np.std(values, axis=axis, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(em.jit(lambda x: em.var(x, axis=axis))(em.tensor(values)).numpy(),
                               got.numpy(), rtol=1e-6)
    torch = torch_or_skip()
    x = em.tensor(values, requires_grad=True)
    em.var(x, axis=axis).sum().backward()
    t = torch.tensor(values, requires_grad=True)
    t.var(dim=axis, unbiased=False).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_prod_of_complex_values_differentiates_as_torchs(axis):
    values = np.array([[1 + 2j, 3 - 1j, 0.5 + 0.5j], [2j, -1, 4 + 4j]], np.complex128)
    x = em.tensor(values, requires_grad=True)
    em.real(em.prod(x, axis=axis) * (1 - 2j)).sum().backward()
    torch = torch_or_skip()
    t = torch.tensor(values, requires_grad=True)
    (t.prod() if axis is None else t.prod(dim=axis)).mul(1 - 2j).real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    jx = em.tensor(values, requires_grad=True)
    em.jit(lambda x: em.real(em.prod(x, axis=axis) * (1 - 2j)).sum())(jx).backward()
    np.testing.assert_allclose(jx.grad.numpy(), x.grad.numpy(), rtol=1e-12)


@pytest.mark.filterwarnings("error")  # a cast dropping the imaginary part warns (ComplexWarning)
def test_a_real_operand_of_a_complex_concat_gets_the_real_part_as_torchs():
    a = em.tensor([1.0, 2.0], requires_grad=True)
    b = em.tensor([1 + 1j], requires_grad=True)
    (em.abs(em.concat([a, b])) ** 2).sum().backward()
    torch = torch_or_skip()
    ta = torch.tensor([1.0, 2.0], requires_grad=True)
    tb = torch.tensor([1 + 1j], requires_grad=True)
    (torch.cat([ta, tb]).abs() ** 2).sum().backward()
    assert a.grad.dtype == em.float32
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-6)
