"""The functions PyTorch programs call that issue 32 added to the function API (sinh, cosh,
flip, roll, meshgrid, index_select, repeat_interleave, scatter, addmm, baddbmm, two-tensor
max/min) and the Tensor methods beside them: values against NumPy, gradients against
finite differences, eager against em.jit, and a PyTorch twin where torch is installed."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, check_grad, check_op, expect_error
from pytorch_twins import assert_jit_agrees, torch_or_skip

import execmode as em

RNG = np.random.default_rng(32)
X34 = RNG.standard_normal((3, 4)).astype(np.float32)
X234 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
F234 = RNG.standard_normal((2, 3, 4))  # float64, for finite differences
IDX = np.array([[0, 3, 2], [2, 1, 0], [1, 1, 3]], np.int64)  # a repeat in row 2
PERM = np.argsort(RNG.standard_normal((2, 3, 4)), axis=2)[:, :, :3]


def np_scatter(x, axis, index, src):
    out = x.copy()
    idx = [np.arange(n).reshape([-1 if d == k else 1 for k in range(index.ndim)])
           for d, n in enumerate(index.shape)]
    idx[axis] = index
    out[tuple(np.broadcast_arrays(*idx))] = src[tuple(slice(0, n) for n in index.shape)]
    return out


VALUE_CASES = {
    "sinh": (em.sinh, np.sinh, (X234 * 3,)),
    "cosh": (em.cosh, np.cosh, (X234 * 3,)),
    "flip all": (em.flip, np.flip, (X234,)),
    "flip dims": (lambda x: em.flip(x, (0, 2)), lambda x: np.flip(x, (0, 2)), (X234,)),
    "flip dims=": (lambda x: em.flip(x, dims=[-1]), lambda x: np.flip(x, -1), (X34,)),
    "roll flat": (lambda x: em.roll(x, 5), lambda x: np.roll(x, 5), (X234,)),
    "roll axis": (lambda x: em.roll(x, -1, axis=1), lambda x: np.roll(x, -1, 1), (X234,)),
    "roll shifts dims": (lambda x: em.roll(x, shifts=(1, 6), dims=(0, 2)),
                         lambda x: np.roll(x, (1, 6), (0, 2)), (X234,)),
    "index_select": (lambda x: em.index_select(x, 1, em.tensor([2, 0, 2])),
                     lambda x: x[:, [2, 0, 2]], (X234,)),
    "repeat_interleave int": (lambda x: em.repeat_interleave(x, 2, dim=1),
                              lambda x: np.repeat(x, 2, axis=1), (X234,)),
    "repeat_interleave flat": (lambda x: em.repeat_interleave(x, 3),
                               lambda x: np.repeat(x, 3), (X34,)),
    "repeat_interleave counts": (lambda x: em.repeat_interleave(x, em.tensor([0, 2, 1]), 0),
                                 lambda x: np.repeat(x, [0, 2, 1], axis=0), (X34,)),
    "scatter src": (lambda x: em.scatter(x, 1, em.tensor(IDX), em.tensor(X34 * 10)),
                    lambda x: np_scatter(x, 1, IDX, X34 * 10), (X34,)),
    "scatter value": (lambda x: em.scatter(x, 0, em.tensor(IDX[:2] % 3), value=2.5),
                      lambda x: np_scatter(x, 0, IDX[:2] % 3, np.full((3, 4), 2.5, np.float32)),
                      (X34,)),
    "addmm": (lambda x: em.addmm(x, em.tensor(X34), em.tensor(X34.T), beta=0.5, alpha=2.0),
              lambda x: 0.5 * x + 2.0 * (X34 @ X34.T), (X34[:, :3],)),
    "addmm beta=0 ignores NaN": (
        lambda x: em.addmm(x, em.tensor(X34), em.tensor(X34.T), beta=0),
        lambda x: X34 @ X34.T, (np.full((3, 3), np.nan, np.float32),)),
    "baddbmm": (lambda x: em.baddbmm(x, em.tensor(X234), em.tensor(X234.transpose(0, 2, 1))),
                lambda x: x + X234 @ X234.transpose(0, 2, 1), (X234[:, :, :3],)),
    "max of two": (lambda x: em.max(x, em.tensor(X34[::-1].copy())),
                   lambda x: np.maximum(x, x[::-1]), (X34,)),
    "min of two": (lambda x: em.min(x, em.tensor(X34[::-1].copy())),
                   lambda x: np.minimum(x, x[::-1]), (X34,)),
}


@pytest.mark.parametrize("name", list(VALUE_CASES))
def test_values_match_numpy_eagerly_and_under_jit(name):
    fn, reference, args = VALUE_CASES[name]
    check_op(fn, reference, *args, rtol=1e-5, atol=1e-5)
    if name != "repeat_interleave counts":  # its size depends on values: a graph break
        assert_jit_agrees(fn, *(em.tensor(a) for a in args), rtol=1e-5, atol=1e-5)


def test_repeat_interleave_with_counts_breaks_the_graph_and_agrees():
    counts = em.tensor([1, 0, 3])
    fn = em.jit(lambda x: em.repeat_interleave(x, counts, dim=0) * 2)
    assert_close(fn(em.tensor(X34)), np.repeat(X34, [1, 0, 3], axis=0) * 2)
    assert em.repeat_interleave(em.tensor([2, 1])).tolist() == [0, 0, 1]


GRAD_CASES = {
    "sinh": lambda x: em.sinh(x),
    "cosh": lambda x: em.cosh(x),
    "flip": lambda x: em.flip(x, 1),
    "roll": lambda x: em.roll(x, 2, 2),
    "index_select": lambda x: em.index_select(x, 2, em.tensor([3, 0, 3])),
    "repeat_interleave": lambda x: em.repeat_interleave(x, 2, dim=0),
    # no repeated position: with one, the src that lost still gets a gradient (PyTorch's too)
    "scatter": lambda x: em.scatter(x, 2, em.tensor(PERM), x * 3),
    "baddbmm": lambda x: em.baddbmm(x[:, :, :3], x, em.flip(x, 2).mT, alpha=0.5),
    "meshgrid": lambda x: em.meshgrid(x[0, 0], x[1, :, 0])[0],
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradients_match_finite_differences(name):
    check_grad(GRAD_CASES[name], F234)


def test_meshgrid_both_indexings_match_numpy():
    a, b, c = (em.arange(n) for n in (3, 4, 2))
    for indexing in ("xy", "ij"):
        got = em.meshgrid(a, b, c, indexing=indexing)
        want = np.meshgrid(np.arange(3), np.arange(4), np.arange(2), indexing=indexing)
        for g, w in zip(got, want, strict=True):
            assert_close(g, w)
    assert [g.shape for g in em.meshgrid([a, b])] == [(4, 3), (4, 3)]


def test_flip_returns_a_copy_and_roll_of_zero_too():
    x = em.tensor(X34)
    for out in (em.flip(x, 0), em.roll(x, 0, 1)):
        out[0, 0] = 100.0
        assert x[0, 0].item() == X34[0, 0]


def test_tensor_methods_of_pytorch():
    x = em.tensor(X34)
    assert x.type() == "torch.FloatTensor" and x.type(em.int64).dtype == em.int64
    assert x.type("torch.DoubleTensor").dtype == em.float64
    assert x.view_as(em.zeros(2, 6)).shape == (2, 6)
    assert x.eq(x).all() and not x.ne(x).any() and x.nelement() == 12
    assert x.flip(0).shape == (3, 4) and x.roll(1, 0).shape == (3, 4)
    assert x.new_zeros(2, 2).dtype == em.float32 and x.new_ones((1,)).tolist() == [1.0]
    assert x.to("cpu", em.float64).dtype == em.float64
    assert x.to(em.zeros(1, dtype=em.int32)).dtype == em.int32
    assert x.to(dtype=em.float64, copy=True).dtype == em.float64
    assert x.is_floating_point() and x.get_device() == -1 and not x.is_cuda
    assert x.pin_memory() is x and x.is_contiguous() and not x.T.is_contiguous()
    assert_close(x.var(), X34.var(ddof=1))            # PyTorch's default: N - 1
    assert_close(x.std(1), X34.std(1, ddof=1))
    assert_close(x.var(axis=1), X34.var(1))           # the Array API's spelling: N
    assert_close(x.var(1, unbiased=False), X34.var(1))


def test_in_place_methods_write_through_assign():
    x = em.zeros(3, 4)
    x.add_(em.tensor(X34), alpha=2.0)
    assert_close(x, 2 * X34)
    x.masked_fill_(x > 0, 0.0).mul_(-1).sub_(1.0).div_(2.0)
    assert_close(x, (-np.where(2 * X34 > 0, 0, 2 * X34) - 1) / 2, rtol=1e-6)
    x.fill_(3.0).clamp_(max=2.0)
    assert x.tolist() == [[2.0] * 4] * 3
    x.copy_(np.arange(12).reshape(3, 4))
    assert x.dtype == em.float32 and x[2, 3].item() == 11.0
    x.scatter_(1, em.tensor([[0], [1], [2]]), value=-1.0)
    assert [x[i, i].item() for i in range(3)] == [-1.0] * 3


def test_more_pytorch_methods_match_pytorch():
    torch = torch_or_skip()
    pairs = []
    for name in ("exp_", "abs_", "neg_", "tanh_", "floor_", "relu_", "sigmoid_", "sqrt_"):
        x, t = em.tensor(np.abs(X34) if name == "sqrt_" else X34), torch.tensor(
            np.abs(X34) if name == "sqrt_" else X34)
        out = getattr(x, name)()
        assert out is x
        pairs.append((x, getattr(t, name)()))
    x, t = em.tensor(X34), torch.tensor(X34)
    pairs += [
        (x.mm(x.T), t.mm(t.T)), (em.tensor(X234).bmm(em.tensor(X234).mT),
                                torch.tensor(X234).bmm(torch.tensor(X234).mT)),
        (x.mv(x[0]), t.mv(t[0])), (x[0].dot(x[1]), t[0].dot(t[1])),
        (x.unbind(1)[3], t.unbind(1)[3]), (x.narrow(1, -3, 2), t.narrow(1, -3, 2)),
        (x.lerp(x * 3, 0.25), t.lerp(t * 3, 0.25)),
    ]
    for fn in (lambda a, b: a.clone().lerp_(b, 0.1), lambda a, b: a.clone().addcmul_(b, b, value=3),
               lambda a, b: a.clone().addcdiv_(b, b * b + 1, value=-2),
               lambda a, b: a.clone().clamp_min_(0.1), lambda a, b: a.clone().clamp_max_(0.1)):
        pairs.append((fn(x, x * 2), fn(t, t * 2)))
    pairs.append((x.clone().index_fill_(1, em.tensor([0, 2]), -1.0),
                  t.clone().index_fill_(1, torch.tensor([0, 2]), -1.0)))
    for got, want in pairs:
        assert_close(got, want.numpy(), rtol=1e-5, atol=1e-6)
    drawn = em.zeros(4000).bernoulli_(0.25)
    assert set(np.unique(drawn.numpy())) <= {0.0, 1.0} and abs(drawn.mean().item() - 0.25) < 0.03


def test_in_place_methods_under_jit_write_back():
    def step(x, m):
        x.masked_fill_(m, 0.0)
        x.add_(1.0).exp_().lerp_(x * 2, 0.5)
        return x.scatter_(1, em.tensor([[3], [0], [1]]), value=9.0)

    mask = em.tensor(X34 > 0)
    eager, traced = em.tensor(X34), em.tensor(X34)
    step(eager, mask)
    out = em.jit(step)(traced, mask)
    assert out is traced
    assert_close(traced, eager.numpy())


def test_errors_name_the_op_and_never_print_a_tensor():
    x = em.tensor(np.zeros((40, 40), np.float32))
    err = expect_error(em.ArgumentError, lambda: em.sum(x, x), op="sum",
                       mentions=["a tensor f32[40,40]"])
    assert "0." not in str(err).split("\n")[0]
    expect_error(em.ArgumentError, lambda: em.max(x, x, 1), op="max", mentions=["maximum"])
    expect_error(em.ArgumentError, lambda: em.index_select(x, 0, em.tensor([[0]])),
                 op="index_select")
    expect_error(em.ArgumentError, lambda: em.roll(x, (1, 2)), op="roll")
    expect_error(em.ShapeError, lambda: em.addmm(x, x[0], x), op="addmm")
    expect_error(em.ArgumentError, lambda: em.flip(x, 0, dims=1), op="flip")


def test_twins_against_pytorch():
    torch = torch_or_skip()
    x, t = em.tensor(X234), torch.tensor(X234)
    idx = np.stack([IDX, IDX[::-1]])
    pairs = [
        (em.sinh(x), torch.sinh(t)), (em.cosh(x), torch.cosh(t)),
        (em.flip(x, (0, 1)), torch.flip(t, (0, 1))),
        (em.roll(x, 3), torch.roll(t, 3)), (em.roll(x, (1, -2), (0, 2)), t.roll((1, -2), (0, 2))),
        (em.index_select(x, 1, em.tensor([2, 2, 0])),
         torch.index_select(t, 1, torch.tensor([2, 2, 0]))),
        (em.repeat_interleave(x, 2, 1), torch.repeat_interleave(t, 2, 1)),
        (x.repeat_interleave(em.tensor([1, 3]), dim=0),
         t.repeat_interleave(torch.tensor([1, 3]), dim=0)),
        (em.scatter(x, 2, em.tensor(idx), x * 2), t.scatter(2, torch.tensor(idx), t * 2)),
        (x.scatter(0, em.tensor(idx % 2), 7.0), t.scatter(0, torch.tensor(idx % 2), 7.0)),
        (em.baddbmm(x[:, :, :3], x, x.mT, beta=0.5, alpha=2.0),
         torch.baddbmm(t[:, :, :3], t, t.mT, beta=0.5, alpha=2.0)),
        (em.addmm(x[0, :, :3], x[0], x[1].mT), torch.addmm(t[0, :, :3], t[0], t[1].mT)),
        (em.max(x, em.flip(x, 2)), torch.max(t, torch.flip(t, (2,)))),
        (x.var(), t.var()), (x.std(2, keepdim=True), t.std(2, keepdim=True)),
        (x.view_as(x[0].reshape(-1).expand(2, 12)), t.view_as(t[0].reshape(-1).expand(2, 12))),
    ]
    for got, want in pairs:
        assert_close(got, want.numpy(), rtol=1e-5, atol=1e-6)
    for got, want in zip(em.meshgrid(x[0, 0], x[1, 1], indexing="ij"),
                         torch.meshgrid(t[0, 0], t[1, 1], indexing="ij"), strict=True):
        assert_close(got, want.numpy())
    assert x.type() == t.type() and x.long().type() == t.long().type()
