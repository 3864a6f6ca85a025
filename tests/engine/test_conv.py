"""pad, conv1d and conv2d: values against direct NumPy loops, gradients against finite
differences, eager against em.jit, a PyTorch twin, and the errors bad arguments raise."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, check_grad, expect_error

import execmode as em
from execmode.nn import functional as NF

RNG = np.random.default_rng(7)


def reference_conv2d(x, w, b, stride, padding, dilation, groups):
    """Cross-correlation by a loop over every output element (what a convolution means)."""
    (sh, sw), ((pt, pb), (pl, pr)), (dh, dw) = stride, padding, dilation
    x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (wd - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), dtype=x.dtype)
    og = o // groups
    for b_ in range(n):
        for oc in range(o):
            g = oc // og
            for i in range(oh):
                for j in range(ow):
                    patch = x[b_, g * cg:(g + 1) * cg,
                              i * sh:i * sh + dh * (kh - 1) + 1:dh,
                              j * sw:j * sw + dw * (kw - 1) + 1:dw]
                    out[b_, oc, i, j] = np.sum(patch * w[oc])
    if b is not None:
        out += b[None, :, None, None]
    return out


# (input shape, out channels, kernel, stride, padding, dilation, groups)
CONV2D_CASES = [
    ((2, 3, 6, 5), 4, (3, 3), (1, 1), 0, (1, 1), 1),
    ((2, 4, 7, 6), 6, (3, 2), (2, 1), 1, (1, 1), 2),
    ((1, 2, 9, 8), 4, (2, 3), (1, 2), (2, 1), (2, 1), 1),
    ((3, 4, 5, 5), 4, (1, 1), (1, 1), 0, (1, 1), 4),   # depthwise 1x1
    ((1, 1, 5, 4), 2, (3, 3), (1, 1), "same", (1, 2), 1),
]


def _padding(padding, kernel, dilation):
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    pads = (padding, padding) if isinstance(padding, int) else padding
    return tuple((p, p) for p in pads)


@pytest.mark.parametrize("case", CONV2D_CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_matches_a_loop(case, dtype):
    shape, out_ch, kernel, stride, padding, dilation, groups = case
    x = RNG.standard_normal(shape).astype(dtype)
    w = RNG.standard_normal((out_ch, shape[1] // groups) + kernel).astype(dtype)
    b = RNG.standard_normal(out_ch).astype(dtype)
    got = NF.conv2d(em.tensor(x), em.tensor(w), em.tensor(b), stride, padding, dilation, groups)
    want = reference_conv2d(x, w, b, stride, _padding(padding, kernel, dilation), dilation,
                            groups)
    assert_close(got, want, rtol=1e-4 if dtype == np.float32 else None)


def test_conv1d_and_unbatched_inputs_match_a_loop():
    x = RNG.standard_normal((2, 4, 11))
    w = RNG.standard_normal((6, 2, 3))
    got = NF.conv1d(em.tensor(x), em.tensor(w), None, stride=2, padding=1, dilation=2, groups=2)
    want = reference_conv2d(x[:, :, None], w[:, :, None], None, (1, 2), ((0, 0), (1, 1)),
                            (1, 2), 2)[:, :, 0]
    assert_close(got, want)
    one = NF.conv1d(em.tensor(x[0]), em.tensor(w), None, 2, 1, 2, 2)
    assert_close(one, want[0])
    x2 = RNG.standard_normal((3, 5, 5))
    w2 = RNG.standard_normal((2, 3, 3, 3))
    assert_close(NF.conv2d(em.tensor(x2), em.tensor(w2), padding="valid"),
                 reference_conv2d(x2[None], w2, None, (1, 1), ((0, 0), (0, 0)), (1, 1), 1)[0])


@pytest.mark.parametrize("case", CONV2D_CASES[:4], ids=str)
def test_conv2d_gradients(case):
    shape, out_ch, kernel, stride, padding, dilation, groups = case
    shape = (1,) + shape[1:]  # one image keeps the finite differences quick
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((out_ch, shape[1] // groups) + kernel)
    b = RNG.standard_normal(out_ch)
    check_grad(lambda x, w, b: NF.conv2d(x, w, b, stride, padding, dilation, groups), x, w, b)


def test_conv1d_gradients():
    x, w = RNG.standard_normal((2, 2, 7)), RNG.standard_normal((3, 2, 3))
    check_grad(lambda x, w: NF.conv1d(x, w, stride=2, padding=2, dilation=2), x, w)


def test_im2col_and_col2im_are_adjoint_primitives():
    """Each one's vjp is the other, so both differentiate (to any order) and agree with a
    loop over the windows."""
    attrs = dict(kernel=(2, 3), stride=(2, 1), dilation=(1, 2))
    x = RNG.standard_normal((2, 3, 5, 7))
    cols = em.functional.apply_op("im2col", em.tensor(x), **attrs)
    assert cols.shape == (2, 3 * 6, 2 * 3)
    for c in range(3):
        for i in range(2):
            for j in range(3):
                row = c * 6 + i * 3 + j
                window = x[:, c, i:i + 3:2, 2 * j:2 * j + 3:1]  # (N, OH, OW) at this offset
                assert_close(cols[:, row], window.reshape(2, -1))
    check_grad(lambda x: em.functional.apply_op("im2col", x, **attrs), x[:1, :2])
    c = RNG.standard_normal((1, 12, 6))
    check_grad(lambda c: em.functional.apply_op("col2im", c, size=(5, 7), **attrs), c)
    # <im2col(x), c> == <x, col2im(c)>: the definition of the adjoint.
    c = RNG.standard_normal(cols.shape)
    back = em.functional.apply_op("col2im", em.tensor(c), size=(5, 7), **attrs)
    assert np.isclose(np.sum(cols.numpy() * c), np.sum(x * back.numpy()))
    # A 1x1 window's columns are a copy, never a view of the input.
    ones = em.ones((1, 2, 3, 3))
    flat = em.functional.apply_op("im2col", ones, kernel=(1, 1), stride=(1, 1),
                                  dilation=(1, 1))
    assert not np.shares_memory(flat.numpy(), ones.numpy())


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_numpy_and_differentiates(mode):
    x = RNG.standard_normal((2, 3, 4, 5))
    pads = (1, 2, 2, 0)  # last axis (1, 2), the one before (2, 0): PyTorch's order
    widths = ((0, 0), (0, 0), (2, 0), (1, 2))
    numpy_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
                  "circular": "wrap"}[mode]
    assert_close(NF.pad(em.tensor(x), pads, mode=mode), np.pad(x, widths, mode=numpy_mode))
    check_grad(lambda x: NF.pad(x, pads, mode=mode), x[:1, :2])


def test_pad_value_negative_widths_and_dtypes():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = NF.pad(em.tensor(x), (-1, 2, 1, -1), value=7)
    want = np.pad(x[:2, 1:], ((1, 0), (0, 2)), constant_values=7)
    assert_close(got, want)
    check_grad(lambda x: NF.pad(x, (-1, 1), value=0.5), RNG.standard_normal((2, 3)))


def _conv_program(x, w, b):
    y = NF.conv2d(x, w, b, stride=1, padding=1)
    y = NF.conv1d(em.reshape(y, (y.shape[0], y.shape[1], -1)), em.ones((2, 4, 3)), padding="same")
    return NF.pad(y, (2, 1), mode="reflect").sum() + y.mean()


def test_conv_under_jit_matches_eager_with_gradients():
    x = em.tensor(RNG.standard_normal((2, 2, 5, 5)).astype(np.float32), requires_grad=True)
    w = em.tensor(RNG.standard_normal((4, 2, 3, 3)).astype(np.float32), requires_grad=True)
    b = em.tensor(RNG.standard_normal(4).astype(np.float32), requires_grad=True)

    def step(x, w, b):
        loss = _conv_program(x, w, b)
        loss.backward()
        return loss

    eager = step(x, w, b)
    grads = [t.grad.numpy().copy() for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    jitted = em.jit(step)
    for _ in range(2):  # trace, then replay
        for t in (x, w, b):
            t.grad = None
        got = jitted(x, w, b)
    assert jitted.trace_count == 1
    assert got.dtype == eager.dtype == em.float32
    assert_close(got, eager.numpy(), rtol=1e-5)
    for t, want in zip((x, w, b), grads):
        assert_close(t.grad, want, rtol=1e-5, atol=1e-5)
    ops = {n.op for n in jitted.trace(x, w, b).graph.nodes}
    assert {"im2col", "col2im", "matmul", "pad"} <= ops  # plan steps, no graph break
    assert not jitted.trace(x, w, b).breaks


def test_conv_errors_name_the_function_and_the_line():
    x = em.ones((1, 3, 5, 5))
    expect_error(em.ShapeError, lambda: NF.conv2d(x, em.ones((4, 2, 3, 3))),
                 op="conv2d", operands=["f32[1,3,5,5]@cpu", "f32[4,2,3,3]@cpu"],
                 mentions=["groups=1"])
    expect_error(em.ShapeError, lambda: NF.conv2d(x, em.ones((4, 3, 7, 7))),
                 op="conv2d", mentions=["larger than the padded input"])
    expect_error(em.ArgumentError, lambda: NF.conv2d(x, em.ones((4, 3, 3, 3)), stride=2,
                                                     padding="same"),
                 op="conv2d", mentions=["stride 1"])
    expect_error(em.ArgumentError, lambda: NF.conv2d(x, em.ones((4, 3, 3, 3)), stride=0),
                 op="conv2d", mentions=["stride must be at least 1"])
    expect_error(em.DTypeError, lambda: NF.conv2d(x, em.ones((4, 3, 3, 3), dtype=em.float64)),
                 op="conv2d", mentions=["floating dtype"])
    expect_error(em.ShapeError, lambda: NF.conv1d(x, em.ones((4, 3, 3))), op="conv1d",
                 mentions=["rank 2 or 3"])
    expect_error(em.ArgumentError, lambda: NF.pad(x, (1, 2, 3)), op="pad",
                 mentions=["even number"])
    expect_error(em.ShapeError, lambda: NF.pad(x, (5, 5), mode="reflect"), op="pad",
                 mentions=["reflect padding"])


def test_conv_layers_init_like_pytorch_and_run():
    em.random.seed(0)
    conv = em.nn.Conv2d(4, 6, 3, padding=1, groups=2)
    assert conv.weight.shape == (6, 2, 3, 3) and conv.bias.shape == (6,)
    bound = 1 / np.sqrt(2 * 9)  # kaiming_uniform(a=sqrt(5)) on fan_in = in/groups * kh * kw
    assert np.abs(conv.weight.numpy()).max() <= bound and np.abs(conv.bias.numpy()).max() <= bound
    assert np.abs(conv.weight.numpy()).max() > 0.8 * bound
    assert [n for n, _ in conv.named_parameters()] == ["weight", "bias"]
    assert conv(em.ones((2, 4, 5, 5))).shape == (2, 6, 5, 5)
    c1 = em.nn.Conv1d(3, 2, 5, stride=2, bias=False, padding_mode="circular", padding=2)
    assert c1.bias is None and c1(em.ones((1, 3, 9))).shape == (1, 2, 5)
    assert "padding_mode='circular'" in repr(c1)
    x = RNG.standard_normal((1, 3, 9)).astype(np.float32)
    want = NF.conv1d(NF.pad(em.tensor(x), (2, 2), mode="circular"), c1.weight, stride=2)
    assert_close(c1(em.tensor(x)), want.numpy())


def test_conv_matches_pytorch():
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    x = RNG.standard_normal((2, 4, 7, 6))
    w = RNG.standard_normal((6, 2, 3, 2))
    b = RNG.standard_normal(6)
    args = dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)
    mine = [em.tensor(a, requires_grad=True) for a in (x, w, b)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    out = NF.conv2d(*mine, **args)
    ref = torch.nn.functional.conv2d(*theirs, **args)
    g = RNG.standard_normal(ref.shape)
    (out * em.tensor(g)).sum().backward()
    (ref * torch.tensor(g)).sum().backward()
    assert_close(out, ref.detach().numpy())
    for a, t in zip(mine, theirs):
        assert_close(a.grad, t.grad.numpy())
    x1, w1 = RNG.standard_normal((2, 3, 10)), RNG.standard_normal((4, 3, 4))
    assert_close(NF.conv1d(em.tensor(x1), em.tensor(w1), padding="same", dilation=2),
                 torch.nn.functional.conv1d(torch.tensor(x1), torch.tensor(w1), padding="same",
                                            dilation=2).numpy())
    for mode in ("constant", "reflect", "replicate", "circular"):
        assert_close(NF.pad(em.tensor(x), (2, 1, 0, 3), mode=mode),
                     torch.nn.functional.pad(torch.tensor(x), (2, 1, 0, 3), mode=mode).numpy())


def test_conv_errors_under_jit_name_the_users_line():
    w, x = em.ones((4, 2, 3, 3)), em.ones((1, 3, 5, 5))
    # The traced call's line is the user's line: the conv2d call inside the jitted lambda.
    expect_error(em.ShapeError, lambda: em.jit(lambda x: NF.conv2d(x, w))(x), op="conv2d",
                 operands=["f32[1,3,5,5]@cpu", "f32[4,2,3,3]@cpu"], mentions=["groups=1"])
