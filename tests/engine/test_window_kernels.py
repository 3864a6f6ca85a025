"""The sliding-window primitives' C kernels (native/windows.c) give their NumPy versions'
bits: im2col and col2im (ops/conv.py), and max pooling (ops/pooling.py) on values full of
ties, NaN and infinities. Max pooling: the padding is never a
window's maximum; the backward and select primitives are each other's vjp (so a
gradient of any order exists)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_grad

import execmode as em
from execmode.nn import functional as NF
from execmode.ops import conv, pooling, window_kernels

CASES = [  # kernel, stride, padding, dilation, out_size (ceil_mode's where one more fits)
    ((2, 2), (2, 2), (0, 0), (1, 1), None),
    ((3, 3), (1, 1), (1, 1), (1, 1), None),          # overlapping windows: sums
    ((3, 2), (2, 1), (1, 0), (2, 1), None),
    ((3, 3), (2, 2), (1, 1), (1, 1), "ceil"),        # the last window past the padding
    ((1, 1), (3, 2), (0, 0), (1, 1), None),
]


def _attrs(shape, kernel, stride, padding, dilation, out_size):
    size = []
    for s, k, st, p, d in zip(shape[2:], kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        n = (s + 2 * p - span) // st + 1
        if out_size == "ceil" and (s + 2 * p - span) % st and n * st < s + p:
            n += 1
        size.append(n)
    return {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation,
            "out_size": tuple(size)}


def _values(rng, shape, dtype):
    special = np.array([0.0, -0.0, 1.0, 1.0, -np.inf, np.inf, np.nan, 2.0], dtype)
    x = rng.standard_normal(shape).astype(dtype)
    picks = rng.random(shape) < 0.3
    x[picks] = rng.choice(special, size=int(picks.sum()))
    return x


@pytest.fixture
def kernels():
    found = window_kernels.NATIVE.get()
    if found is None:
        pytest.skip("no C compiler here (or EXECMODE_EAGER_OPERATORS=0): NumPy only")
    return found


def _numpy_only(fn):
    with window_kernels.NATIVE.withheld():
        return fn()


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_c_kernels_give_the_numpy_versions_bits(kernels, case, dtype):
    rng = np.random.default_rng(5)
    x = _values(rng, (2, 3, 7, 8), dtype)
    attrs = _attrs(x.shape, *case)
    g = rng.standard_normal((2, 3) + attrs["out_size"]).astype(dtype)
    h = rng.standard_normal(x.shape).astype(dtype)
    runs = {
        "max_pool2d": lambda: pooling._select(np, x, x, **attrs),
        "select": lambda: pooling._select(np, h, x, **attrs),
        "indices": lambda: pooling._select(np, x, x, with_index=True, **attrs),
        "backward": lambda: pooling._scatter(np, g, x, **attrs),
    }
    for name, run in runs.items():
        got, want = run(), _numpy_only(run)
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), name


@pytest.mark.parametrize("shape", [(2, 3, 8, 40), (2, 3, 9, 41), (1, 2, 14, 14)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_2x2_windows_without_nan_give_the_numpy_versions_bits(kernels, shape, dtype):
    # The common max pool (2x2, stride 2) of an image without NaN has a vectorised loop
    # of its own (windows.c): ties, signed zeros and infinities pick the same position,
    # and the gradient adds into zeros (-0.0 becomes +0.0, NaN stays) on exactly tiled
    # images and on odd sizes alike.
    rng = np.random.default_rng(11)
    special = np.array([0.0, -0.0, 1.0, 1.0, -np.inf, np.inf, 2.0], dtype)
    x = rng.choice(special, size=shape)
    mixed = rng.random(shape) < 0.5
    x[mixed] = rng.standard_normal(int(mixed.sum()))
    attrs = _attrs(shape, (2, 2), (2, 2), (0, 0), (1, 1), None)
    g = rng.choice(np.array([-0.0, 0.0, np.nan, 1.5, -2.0], dtype),
                   size=shape[:2] + attrs["out_size"])
    h = rng.standard_normal(shape).astype(dtype)
    runs = {
        "max_pool2d": lambda: pooling._select(np, x, x, **attrs),
        "select": lambda: pooling._select(np, h, x, **attrs),
        "backward": lambda: pooling._scatter(np, g, x, **attrs),
    }
    for name, run in runs.items():
        got, want = run(), _numpy_only(run)
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), name


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_im2col_and_col2im_in_c_give_the_numpy_bits(kernels, case, dtype):
    kernel, stride, _, dilation, _ = case
    rng = np.random.default_rng(6)
    x = _values(rng, (2, 3, 7, 8), dtype)
    attrs = {"kernel": kernel, "stride": stride, "dilation": dilation}
    cols = conv.im2col_array(np, x, **attrs)
    want = _numpy_only(lambda: conv.im2col_array(np, x, **attrs))
    assert cols.shape == want.shape and np.array_equal(cols.view(np.uint8), want.view(np.uint8))
    sums = rng.standard_normal(cols.shape).astype(dtype)
    sums[rng.random(cols.shape) < 0.2] = -0.0
    got = conv._col2im_impl(np, sums, size=(7, 8), **attrs)
    want = _numpy_only(lambda: conv._col2im_impl(np, sums, size=(7, 8), **attrs))
    assert got.shape == want.shape and np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("native", [True, False])
def test_padding_is_never_the_maximum(native):
    if native and window_kernels.NATIVE.get() is None:
        pytest.skip("no C compiler here (or EXECMODE_EAGER_OPERATORS=0)")
    x = np.full((1, 1, 3, 3), -np.inf, np.float32)
    x[0, 0, 2, 2] = np.nan

    def run():
        x_t = em.tensor(x, requires_grad=True)
        out, idx = NF.max_pool2d(x_t, 3, 2, 1, return_indices=True)
        out.sum().backward()
        return out.numpy(), idx.numpy(), x_t.grad.numpy()

    out, idx, grad = run() if native else _numpy_only(run)
    # Three windows hold only -inf (and padding): each one's maximum is its first image
    # position, as in PyTorch; the fourth holds the NaN, which wins.
    assert np.array_equal(idx[0, 0], [[0, 1], [3, 8]])
    assert np.isneginf(out[0, 0].ravel()[:3]).all() and np.isnan(out[0, 0, 1, 1])
    want = np.zeros((3, 3), np.float32)
    want.ravel()[[0, 1, 3, 8]] = 1.0
    assert np.array_equal(grad[0, 0], want)


def test_backward_and_select_are_each_others_vjp():
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 5))
    attrs = _attrs(x.shape, (3, 3), (2, 2), (1, 1), (1, 1), None)
    x_t = em.tensor(x)
    apply = em.functional.apply_op
    g = np.random.default_rng(3).standard_normal((1, 2) + attrs["out_size"])
    check_grad(lambda g: apply("max_pool2d_backward", g, x_t, **attrs), g)
    check_grad(lambda h: apply("max_pool2d_select", h, x_t, **attrs), x)
    check_grad(lambda y: apply("max_pool2d", y, **attrs) ** 2, x)
