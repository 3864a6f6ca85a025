"""The one helper for checking numbers, shared by every test of the engine.

* :func:`assert_close` compares a result with a NumPy reference: same shape, same dtype,
  values within the tolerance stated for the dtype (NaN and +-Inf must sit in the same
  places), integers and bools exactly.
* :func:`check_op` runs an execmode function and its NumPy reference on the same inputs
  and compares them with :func:`assert_close`.
* :func:`check_grad` compares the gradients autograd computes with central finite
  differences, in float64.
* :func:`expect_error` checks the message of a bad-input error: the op, the operands in
  ``f32[3,4]@cpu`` form and the caller's file:line.

Hypothesis strategies for dtypes, shapes and arrays sit at the end of the module.
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import execmode as em

# --- tolerances -------------------------------------------------------------------------
# Forward results: eager ops call NumPy on the same dtype, so most agree to the last bit;
# composites (softmax, gelu, layer_norm, var, ...) reorder arithmetic, which costs a few
# ulps. The tolerances allow that and nothing more.
TOLERANCES = {
    em.float32: {"rtol": 2e-5, "atol": 1e-6},
    em.float64: {"rtol": 1e-10, "atol": 1e-12},
}

# Gradients against central differences in float64 with step 1e-6: the truncation error is
# O(step^2) ~ 1e-12 and the rounding error ~ 1e-16 * |loss| / step ~ 1e-9, far below any
# real mistake in a vjp rule (those are O(1)).
FD_STEP = 1e-6
GRAD_TOLERANCE = {"rtol": 1e-5, "atol": 1e-6}


def as_array(x) -> np.ndarray:
    """A NumPy array for a Tensor, a NumPy array/scalar or a Python number."""
    if isinstance(x, em.Tensor):
        return x.numpy()
    return np.asarray(x)


def assert_close(actual, expected, *, rtol=None, atol=None, check_dtype=True, msg=""):
    """``actual`` (a Tensor or array) equals ``expected`` within the dtype's tolerance."""
    got = as_array(actual)
    want = np.asarray(expected)
    where = f" {msg}" if msg else ""
    assert got.shape == want.shape, f"shape {got.shape} != expected {want.shape}{where}"
    if check_dtype:
        assert got.dtype == want.dtype, f"dtype {got.dtype} != expected {want.dtype}{where}"
    if want.dtype.kind == "f" or got.dtype.kind == "f":
        tol = TOLERANCES.get(np.dtype(want.dtype), TOLERANCES[em.float64])
        rtol = tol["rtol"] if rtol is None else rtol
        atol = tol["atol"] if atol is None else atol
        # assert_allclose also requires NaN and +-Inf in the same places.
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=msg)
    else:
        np.testing.assert_array_equal(got, want, err_msg=msg)


def mse_train_step(model, opt):
    """The training step the codegen tests jit: MSE loss, backward, the optimizer's step,
    zero_grad; returns the loss."""
    def step(x, y):
        loss = em.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step


@contextlib.contextmanager
def exp_impl_doubled():
    """OPS["exp"].impl swapped for one that doubles its answer (as the fuzzer's rounding
    oracle swaps impls to nudge eager's results), and back afterwards; yields the
    registered impl."""
    from execmode.ops import OPS

    original = OPS["exp"].impl
    object.__setattr__(OPS["exp"], "impl", lambda xp, a: original(xp, a) * 2)  # frozen
    try:
        yield original
    finally:
        object.__setattr__(OPS["exp"], "impl", original)


def through_the_ops(fn):
    """``fn()`` with every op through apply: a listener (that ignores its events) makes
    dispatch.plain_arrays answer None, so composites run their ops."""
    from execmode import instrument

    class Ignoring:
        def on_op(self, event, output):
            pass

    with instrument.listening(Ignoring()):
        return fn()


def assert_same_bits(fast, slow):
    """Two results alike: Tensors of one dtype and shape, the same bits, no tape."""
    assert type(fast) is type(slow) is em.Tensor
    f, s = fast.numpy(), slow.numpy()
    assert (f.dtype, f.shape) == (s.dtype, s.shape)
    assert np.array_equal(f.reshape(-1).view(np.uint8), s.reshape(-1).view(np.uint8))
    assert fast.requires_grad is slow.requires_grad is False


def has_c_compiler() -> bool:
    """Whether this machine compiles kernels (else graph mode runs them through NumPy)."""
    from execmode.codegen.toolchain import NoCompiler, get_toolchain

    try:
        get_toolchain()
    except NoCompiler:
        return False
    return True


def to_tensor(x, requires_grad=False):
    """NumPy arrays become tensors of the same dtype; anything else passes through."""
    if isinstance(x, np.ndarray):
        return em.tensor(x, dtype=x.dtype, requires_grad=requires_grad)
    return x


def check_op(em_fn, np_fn, *args, rtol=None, atol=None, check_dtype=True, **kwargs):
    """Run ``em_fn`` on tensors made from ``args`` and ``np_fn`` on ``args``; compare.

    NumPy arrays among ``args`` become tensors; Python scalars and other values are passed
    to both functions as they are, so weak-scalar promotion is checked too. Returns the
    execmode result.
    """
    # The reference may meet NaN, 0/0 or zero degrees of freedom on purpose: no warnings.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np_fn(*args, **kwargs)
    result = em_fn(*(to_tensor(a) for a in args), **kwargs)
    assert isinstance(result, em.Tensor), f"expected a Tensor, got {type(result).__name__}"
    assert_close(result, expected, rtol=rtol, atol=atol, check_dtype=check_dtype)
    return result


def check_grad(fn, *args, wrt=None, seed=0, step=FD_STEP, rtol=None, atol=None):
    """Autograd's gradients of ``fn`` against central finite differences, in float64.

    ``args``: float64 arrays (differentiated) and anything else (passed through). The
    output is reduced to a scalar with fixed random weights, so that every element of a
    non-scalar output and every path of the vjp is exercised.
    """
    rtol = GRAD_TOLERANCE["rtol"] if rtol is None else rtol
    atol = GRAD_TOLERANCE["atol"] if atol is None else atol
    if wrt is None:
        wrt = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    for i in wrt:
        assert args[i].dtype == np.float64, "finite differences need float64 inputs"

    leaves = [to_tensor(a, requires_grad=i in wrt) for i, a in enumerate(args)]
    out = fn(*leaves)
    weights = np.random.default_rng(seed).standard_normal(out.shape)
    loss = em.sum(out * em.tensor(weights, dtype=em.float64))
    loss.backward()

    def loss_at(values) -> float:
        with em.no_grad():
            y = fn(*(to_tensor(v) for v in values))
        return float(np.sum(y.numpy() * weights))

    for i in wrt:
        analytic = leaves[i].grad
        assert analytic is not None, f"no gradient reached input {i}"
        assert analytic.shape == args[i].shape and analytic.dtype == em.float64
        numeric = np.zeros_like(args[i])
        for idx in np.ndindex(args[i].shape):
            values = list(args)
            plus, minus = args[i].copy(), args[i].copy()
            plus[idx] += step
            minus[idx] -= step
            values[i] = plus
            f_plus = loss_at(values)
            values[i] = minus
            numeric[idx] = (f_plus - loss_at(values)) / (2 * step)
        np.testing.assert_allclose(analytic.numpy(), numeric, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {i}")


# --- error messages ---------------------------------------------------------------------

def expect_error(cls, call, *, op, operands=(), mentions=()):
    """``call()`` raises ``cls`` whose message names op, operands and the call's line.

    ``call`` is a lambda written on the line of the offending call: its first line number
    is the line the message must point at.
    """
    assert issubclass(cls, em.ExecmodeError)
    with pytest.raises(cls) as info:
        call()
    message = str(info.value)
    code = call.__code__
    assert f"{op}(" in message, f"op {op!r} not named in: {message}"
    for operand in operands:
        assert operand in message, f"operand {operand!r} not named in: {message}"
    for text in mentions:
        assert text in message, f"{text!r} not in: {message}"
    where = f"{code.co_filename}:{code.co_firstlineno}"
    assert where in message, f"user line {os.path.basename(where)} not in: {message}"
    return info.value


# --- hypothesis strategies --------------------------------------------------------------

FLOAT_DTYPES = (em.float32, em.float64)
INT_DTYPES = (em.int32, em.int64)
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + (em.bool,)
SPECIALS = (math.nan, math.inf, -math.inf)


def dtypes(choices=ALL_DTYPES):
    return st.sampled_from(choices)


def shapes(min_dims=0, max_dims=3, min_side=1, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def elements(dtype, *, low=-10, high=10, specials=False):
    """Values of ``dtype`` in [low, high]; with ``specials``, NaN and +-Inf sometimes."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        return st.integers(int(math.ceil(low)), int(math.floor(high)))
    # Hypothesis wants bounds that the float width represents exactly.
    low, high = float(dtype.type(low)), float(dtype.type(high))
    finite = st.floats(low, high, width=dtype.itemsize * 8, allow_subnormal=False)
    if specials:
        return st.one_of(finite, finite, finite, st.sampled_from(SPECIALS))
    return finite


def arrays(dtype, shape, **element_kw):
    return hnp.arrays(np.dtype(dtype), shape, elements=elements(dtype, **element_kw))


def broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4, min_side=1):
    """Shapes that broadcast together (with 1s and missing leading axes)."""
    return hnp.mutually_broadcastable_shapes(
        num_shapes=num_shapes, min_dims=0, max_dims=max_dims, min_side=min_side,
        max_side=max_side,
    ).map(lambda bs: bs.input_shapes)
