"""max_pool1d/2d and avg_pool1d/2d: values against loops, the gradient of ties (the first
maximum takes it, as in PyTorch), eager against em.jit, a PyTorch twin, errors, layers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import assert_close, check_grad, expect_error

import execmode as em
from execmode.nn import functional as NF

RNG = np.random.default_rng(11)


def _out_size(size, k, s, p, d, ceil_mode):
    span = d * (k - 1) + 1
    if not ceil_mode:
        return (size + 2 * p - span) // s + 1
    out = math.ceil((size + 2 * p - span) / s) + 1
    return out - 1 if (out - 1) * s >= size + p else out


def reference_pool(x, kernel, stride, padding, dilation, ceil_mode, kind,
                   count_include_pad=True):
    """A loop over output positions; windows clipped to the input as PyTorch clips them."""
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    oh = _out_size(h, kh, sh, ph, dh, ceil_mode)
    ow = _out_size(w, kw, sw, pw, dw, ceil_mode)
    out = np.zeros((n, c, oh, ow), x.dtype)
    index = np.zeros((n, c, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            rows = [i * sh - ph + a * dh for a in range(kh)]
            cols = [j * sw - pw + b * dw for b in range(kw)]
            inside = [(r, q) for r in rows for q in cols if 0 <= r < h and 0 <= q < w]
            values = np.stack([x[:, :, r, q] for r, q in inside], axis=-1)
            if kind == "max":
                first = np.argmax(values, axis=-1)
                out[:, :, i, j] = np.take_along_axis(values, first[..., None], -1)[..., 0]
                flat = np.array([r * w + q for r, q in inside])
                index[:, :, i, j] = flat[first]
            else:
                if count_include_pad:
                    r_end = min(i * sh - ph + kh, h + ph)
                    c_end = min(j * sw - pw + kw, w + pw)
                    count = (r_end - (i * sh - ph)) * (c_end - (j * sw - pw))
                else:
                    count = len(inside)
                out[:, :, i, j] = values.sum(axis=-1) / count
    return out, index


MAX_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    ((2, 2), (2, 2), (0, 0), (1, 1), False),
    ((3, 3), (2, 2), (1, 1), (1, 1), False),
    ((3, 2), (2, 1), (1, 0), (2, 1), True),
    ((3, 3), (2, 2), (1, 1), (1, 1), True),
]


@pytest.mark.parametrize("case", MAX_CASES, ids=str)
def test_max_pool2d_matches_a_loop_with_indices(case):
    kernel, stride, padding, dilation, ceil_mode = case
    x = RNG.standard_normal((2, 3, 7, 8)).astype(np.float32)
    out, idx = NF.max_pool2d(em.tensor(x), kernel, stride, padding, dilation, ceil_mode,
                             return_indices=True)
    want, want_idx = reference_pool(x, kernel, stride, padding, dilation, ceil_mode, "max")
    assert_close(out, want)
    assert_close(idx, want_idx)


@pytest.mark.parametrize("case", MAX_CASES[1:], ids=str)
def test_max_pool2d_gradient(case):
    kernel, stride, padding, dilation, ceil_mode = case
    # Distinct values: finite differences are exact only away from ties.
    x = RNG.permutation(2 * 6 * 7).reshape(1, 2, 6, 7) * 0.1
    check_grad(lambda x: NF.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode), x)


def test_max_pool_ties_send_the_gradient_to_the_first_maximum():
    x = em.tensor([[[[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, 0.0, 3.0]]]], requires_grad=True)
    out = NF.max_pool2d(x, 2)
    out.sum().backward()
    assert out.numpy().ravel().tolist() == [3.0, 3.0]
    assert x.grad.numpy().ravel().tolist() == [0, 1, 1, 0, 0, 0, 0, 0]
    nan = NF.max_pool2d(em.tensor([[[[1.0, math.nan], [3.0, 2.0]]]]), 2)
    assert math.isnan(nan.item())  # NaN wins, as in PyTorch


AVG_CASES = [  # kernel, stride, padding, ceil_mode, count_include_pad
    ((2, 2), (2, 2), (0, 0), False, True),
    ((3, 3), (2, 2), (1, 1), False, True),
    ((3, 3), (2, 2), (1, 1), False, False),
    ((3, 2), (2, 3), (1, 1), True, True),
    ((3, 2), (2, 3), (1, 1), True, False),
]


@pytest.mark.parametrize("case", AVG_CASES, ids=str)
def test_avg_pool2d_matches_a_loop_and_differentiates(case):
    kernel, stride, padding, ceil_mode, count_include_pad = case
    x = RNG.standard_normal((2, 3, 7, 8))
    out = NF.avg_pool2d(em.tensor(x), kernel, stride, padding, ceil_mode, count_include_pad)
    want, _ = reference_pool(x, kernel, stride, padding, (1, 1), ceil_mode, "avg",
                             count_include_pad)
    assert_close(out, want)
    check_grad(lambda x: NF.avg_pool2d(x, kernel, stride, padding, ceil_mode,
                                       count_include_pad), x[:1, :2])


def test_pool1d_unbatched_and_divisor_override():
    x = RNG.standard_normal((2, 3, 11))
    out, idx = NF.max_pool1d(em.tensor(x), 3, 2, 1, return_indices=True)
    want, want_idx = reference_pool(x[:, :, None], (1, 3), (1, 2), (0, 1), (1, 1), False,
                                    "max")
    assert_close(out, want[:, :, 0])
    assert_close(idx, want_idx[:, :, 0])
    avg, _ = reference_pool(x[:, :, None], (1, 4), (1, 3), (0, 2), (1, 1), True, "avg", False)
    assert_close(NF.avg_pool1d(em.tensor(x), 4, 3, 2, True, False), avg[:, :, 0])
    # (2, 3, 11) read as an unbatched (C, H, W) image: window sums divided by 3, not 4.
    mean4, _ = reference_pool(x[None], (2, 2), (2, 2), (0, 0), (1, 1), False, "avg")
    assert_close(NF.avg_pool2d(em.tensor(x), 2, divisor_override=3), mean4[0] * 4 / 3)
    assert NF.max_pool2d(em.tensor(x), 2).shape == (2, 1, 5)  # (C, H, W) unbatched


def test_pooling_under_jit_matches_eager():
    x = em.tensor(RNG.standard_normal((2, 3, 8, 8)).astype(np.float32), requires_grad=True)

    def step(x):
        y = NF.max_pool2d(x, 3, 2, 1, ceil_mode=True) * 2.0
        loss = (y * y).sum() + NF.avg_pool2d(x, 2, count_include_pad=False).sum()
        loss.backward()
        return loss

    eager = step(x)
    grad = x.grad.numpy().copy()
    jitted = em.jit(step)
    for _ in range(2):
        x.grad = None
        got = jitted(x)
    assert jitted.trace_count == 1 and not jitted.trace(x).breaks
    assert_close(got, eager.numpy(), rtol=1e-5)
    assert_close(x.grad, grad, rtol=1e-5)


def test_pooling_errors():
    x = em.ones((1, 2, 5, 5))
    expect_error(em.ArgumentError, lambda: NF.max_pool2d(x, 2, padding=2), op="max_pool2d",
                 operands=["f32[1,2,5,5]@cpu"], mentions=["at most half"])
    expect_error(em.ArgumentError, lambda: NF.avg_pool2d(x, 7), op="avg_pool2d",
                 mentions=["larger than the padded input"])
    expect_error(em.ShapeError, lambda: NF.max_pool1d(x, 2), op="max_pool1d",
                 mentions=["rank 2 or 3"])
    expect_error(em.DTypeError, lambda: NF.max_pool2d(em.ones((1, 2, 4, 4), dtype=em.int64), 2),
                 op="max_pool2d", mentions=["floating"])


def test_pool_layers():
    x = em.tensor(RNG.standard_normal((2, 3, 6, 6)).astype(np.float32))
    assert_close(em.nn.MaxPool2d(2)(x), NF.max_pool2d(x, 2).numpy())
    out, idx = em.nn.MaxPool2d(3, 2, 1, return_indices=True)(x)
    assert out.shape == idx.shape == (2, 3, 3, 3)
    assert_close(em.nn.AvgPool2d(3, 1, 1, count_include_pad=False)(x),
                 NF.avg_pool2d(x, 3, 1, 1, count_include_pad=False).numpy())
    x1 = em.tensor(RNG.standard_normal((2, 3, 9)).astype(np.float32))
    assert_close(em.nn.MaxPool1d(2)(x1), NF.max_pool1d(x1, 2).numpy())
    assert_close(em.nn.AvgPool1d(3, 2)(x1), NF.avg_pool1d(x1, 3, 2).numpy())
    assert repr(em.nn.MaxPool2d(2)).startswith("MaxPool2d(kernel_size=2, stride=2")


def test_pooling_matches_pytorch():
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    tf = torch.nn.functional
    x = RNG.standard_normal((2, 3, 9, 7))
    x[:, :, 0, 1] = x[:, :, 0, 0]  # ties
    for kernel, stride, padding, dilation, ceil_mode in MAX_CASES:
        mine = em.tensor(x, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        out, idx = NF.max_pool2d(mine, kernel, stride, padding, dilation, ceil_mode, True)
        ref, ref_idx = tf.max_pool2d(theirs, kernel, stride, padding, dilation, ceil_mode, True)
        g = RNG.standard_normal(ref.shape)
        (out * em.tensor(g)).sum().backward()
        (ref * torch.tensor(g)).sum().backward()
        assert_close(out, ref.detach().numpy())
        assert_close(idx, ref_idx.numpy())
        assert_close(mine.grad, theirs.grad.numpy())
    for kernel, stride, padding, ceil_mode, include in AVG_CASES:
        assert_close(NF.avg_pool2d(em.tensor(x), kernel, stride, padding, ceil_mode, include),
                     tf.avg_pool2d(torch.tensor(x), kernel, stride, padding, ceil_mode,
                                   include).numpy())
    x1 = RNG.standard_normal((2, 3, 10))
    assert_close(NF.max_pool1d(em.tensor(x1), 3, 2, 1, ceil_mode=True),
                 tf.max_pool1d(torch.tensor(x1), 3, 2, 1, ceil_mode=True).numpy())
    assert_close(NF.avg_pool1d(em.tensor(x1), 3, 2, 1, True, False),
                 tf.avg_pool1d(torch.tensor(x1), 3, 2, 1, True, False).numpy())
