"""The ops a PyTorch user brings (issue 14): values against NumPy, gradients against
finite differences, eager against em.jit, and a PyTorch twin where torch is installed."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, check_grad, check_op, expect_error
from pytorch_twins import assert_jit_agrees, assert_jit_grads_agree, torch_or_skip

import execmode as em
from execmode.nn import functional as NF

RNG = np.random.default_rng(14)
X34 = RNG.standard_normal((3, 4)).astype(np.float32)
X234 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
TIES = np.array([[3.0, 1.0, 3.0, np.nan, -1.0, 1.0]], np.float32)
IDX = np.array([[0, 3, 3], [2, 1, 0], [1, 1, 2]], np.int64)   # (3, 3) into axis 1 of (3, 4)


def np_logaddexp(a, b):
    return np.logaddexp(a, b)


def np_stable_desc_argsort(a, axis):
    # Descending and stable: ties keep their order; NaN is the largest value.
    keyed = np.where(np.isnan(a), np.inf, a)
    order = np.argsort(-keyed, axis=axis, kind="stable")
    return order


def np_gather(x, index, axis):
    idx = [np.arange(n).reshape([-1 if d == k else 1 for k in range(index.ndim)])
           for d, n in enumerate(index.shape)]
    idx[axis] = index
    return x[tuple(idx)]


def np_scatter_add(x, index, src, axis):
    out = x.copy()
    idx = [np.arange(n).reshape([-1 if d == k else 1 for k in range(index.ndim)])
           for d, n in enumerate(index.shape)]
    idx[axis] = index
    np.add.at(out, tuple(np.broadcast_arrays(*idx)), src)
    return out


def np_repeat(x, *reps):
    return np.tile(x, reps)


VALUE_CASES = {
    "tril": (lambda x: em.tril(x), np.tril, (X34,)),
    "tril k=1": (lambda x: em.tril(x, 1), lambda x: np.tril(x, 1), (X234,)),
    "triu": (lambda x: em.triu(x), np.triu, (X34,)),
    "triu diagonal=-1": (lambda x: em.triu(x, diagonal=-1), lambda x: np.triu(x, -1), (X234,)),
    "cumsum": (lambda x: em.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), (X34,)),
    "cumsum dim=0": (lambda x: em.cumsum(x, dim=0), lambda x: np.cumsum(x, axis=0), (X234,)),
    "cumsum int32": (lambda x: em.cumsum(x, axis=0),
                     lambda x: np.cumsum(x, axis=0, dtype=np.int64),
                     (np.array([1, 2, 3], np.int32),)),
    "cumsum bool": (lambda x: em.cumsum(x),
                    lambda x: np.cumsum(x, dtype=np.int64), (np.array([True, False, True]),)),
    "sort": (lambda x: em.sort(x), lambda x: np.sort(x, axis=-1), (X234,)),
    "sort axis=0": (lambda x: em.sort(x, axis=0), lambda x: np.sort(x, axis=0), (X34,)),
    "sort descending": (lambda x: em.sort(x, descending=True),
                        lambda x: -np.sort(-x, axis=-1), (X34,)),
    "argsort": (lambda x: em.argsort(x), lambda x: np.argsort(x, kind="stable"), (TIES,)),
    "argsort descending": (lambda x: em.argsort(x, descending=True),
                           lambda x: np_stable_desc_argsort(x, -1), (TIES,)),
    "argsort int": (lambda x: em.argsort(x, axis=0), lambda x: np.argsort(x, axis=0,
                                                                         kind="stable"),
                    (np.array([[3, 1], [1, 1], [2, 0]], np.int64),)),
    "topk values": (lambda x: em.topk(x, 2).values,
                    lambda x: -np.sort(-x, axis=-1)[:, :2], (X34,)),
    "topk smallest": (lambda x: em.topk(x, 3, dim=0, largest=False).values,
                      lambda x: np.sort(x, axis=0)[:3], (X34,)),
    "take_along_axis": (lambda x, i: em.take_along_axis(x, i, axis=1),
                        lambda x, i: np.take_along_axis(x, i, axis=1),
                        (X34, IDX[:, :3])),
    "gather smaller index": (lambda x, i: em.gather(x, 1, i),
                             lambda x, i: np_gather(x, i, 1), (X34, IDX[:2, :2])),
    "scatter_add": (lambda x, i, s: em.scatter_add(x, 1, i, s),
                    lambda x, i, s: np_scatter_add(x, i, s, 1),
                    (X34, IDX, RNG.standard_normal((3, 3)).astype(np.float32))),
    "scatter_add dim 0": (lambda x, i, s: em.scatter_add(x, 0, i, s),
                          lambda x, i, s: np_scatter_add(x, i, s, 0),
                          (X34, np.array([[0, 2, 2, 1]]), np.ones((1, 4), np.float32))),
    "index_add": (lambda x, i, s: em.index_add(x, 1, i, s),
                  lambda x, i, s: _np_index_add(x, i, s, 1),
                  (X34, np.array([3, 0, 3]), RNG.standard_normal((3, 3)).astype(np.float32))),
    "one_hot": (lambda x: em.one_hot(x, 5), lambda x: np.eye(5, dtype=np.int64)[x],
                (np.array([[0, 4], [2, 2]]),)),
    "one_hot inferred": (lambda x: em.one_hot(x), lambda x: np.eye(4, dtype=np.int64)[x],
                         (np.array([3, 0, 1]),)),
    "logaddexp": (em.logaddexp, np_logaddexp, (X34, X34[::-1].copy())),
    "logaddexp infinities": (em.logaddexp, np_logaddexp,
                             (np.array([np.inf, -np.inf, -np.inf, 1.0, np.nan], np.float32),
                              np.array([np.inf, -np.inf, 2.0, np.inf, 0.0], np.float32))),
    "logaddexp scalar": (lambda x: em.logaddexp(x, 0.5),
                         lambda x: np.logaddexp(x, np.float32(0.5)), (X34,)),
    "cat": (lambda a, b: em.cat([a, b], dim=1), lambda a, b: np.concatenate([a, b], 1),
            (X34, X34)),
    "clamp": (lambda x: em.clamp(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), (X34,)),
    "clamp tensor bounds": (lambda x, lo: em.clamp(x, min=lo),
                            lambda x, lo: np.maximum(x, lo), (X34, X34[0])),
    "masked_fill": (lambda x, m: em.masked_fill(x, m, -np.inf),
                    lambda x, m: np.where(m, np.float32(-np.inf), x),
                    (X34, np.triu(np.ones((3, 4), bool), 1))),
    "expand": (lambda x: em.expand(x, 2, -1, 4), lambda x: np.broadcast_to(x, (2, 3, 4)),
               (X34[:, :1],)),
    "tile": (lambda x: em.tile(x, 2, 1, 3), lambda x: np_repeat(x, 2, 1, 3), (X34,)),
    "einsum matmul": (lambda a, b: em.einsum("ij,kj->ik", a, b), lambda a, b: a @ b.T,
                      (X34, X34)),
    "einsum batched": (lambda a, b: em.einsum("bij,bkj->bik", a, b),
                       lambda a, b: np.einsum("bij,bkj->bik", a, b), (X234, X234)),
    "einsum ellipsis": (lambda a, b: em.einsum("...ij,jk->...ik", a, b),
                        lambda a, b: np.einsum("...ij,jk->...ik", a, b), (X234, X34.T.copy())),
    "einsum implicit": (lambda a, b: em.einsum("ij,jk", a, b),
                        lambda a, b: np.einsum("ij,jk", a, b), (X34, X34.T.copy())),
    "einsum trace-free sum": (lambda a: em.einsum("bij->j", a),
                              lambda a: np.einsum("bij->j", a), (X234,)),
    "einsum three operands": (lambda a, b, c: em.einsum("ij,jk,kl->il", a, b, c),
                              lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c),
                              (X34, X34.T.copy(), X34)),
    "einsum outer": (lambda a, b: em.einsum("i,j->ij", a, b),
                     lambda a, b: np.einsum("i,j->ij", a, b), (X34[0], X34[1])),
    "einsum permute": (lambda a: em.einsum("abc->cab", a),
                       lambda a: np.einsum("abc->cab", a), (X234,)),
}


def _np_index_add(x, index, source, axis):
    out = x.copy()
    moved = np.moveaxis(out, axis, 0)
    np.add.at(moved, index, np.moveaxis(source, axis, 0))
    return out


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_match_numpy_and_jit_agrees(name):
    em_fn, np_fn, args = VALUE_CASES[name]
    tol = {"rtol": 1e-5, "atol": 1e-5} if "einsum" in name else {}
    check_op(em_fn, np_fn, *args, **tol)
    assert_jit_agrees(em_fn, *(em.tensor(a, dtype=a.dtype) for a in args), **tol)


GRAD_X = np.random.default_rng(3).standard_normal((3, 4))
DISTINCT = (np.random.default_rng(4).permutation(12) * 0.25 - 1.3).reshape(3, 4)

GRAD_CASES = {
    "tril": (lambda x: em.tril(x, -1), (GRAD_X,)),
    "triu": (lambda x: em.triu(x, 1), (GRAD_X,)),
    "cumsum": (lambda x: em.cumsum(x, axis=1), (GRAD_X,)),
    "cumsum axis 0": (lambda x: em.cumsum(x, dim=0), (GRAD_X,)),
    "sort": (lambda x: em.sort(x, axis=1), (DISTINCT,)),
    "sort descending": (lambda x: em.sort(x, axis=0, descending=True), (DISTINCT,)),
    "topk": (lambda x: em.topk(x, 2).values, (DISTINCT,)),
    "take_along_axis": (lambda x: em.take_along_axis(x, em.tensor(IDX[:, :3]), axis=1),
                        (GRAD_X,)),
    "gather": (lambda x: em.gather(x, 0, em.tensor([[2, 0, 0, 1]])), (GRAD_X,)),
    "scatter_add": (lambda x, s: em.scatter_add(x, 1, em.tensor(IDX), s),
                    (GRAD_X, GRAD_X[:, :3].copy())),
    "index_add": (lambda x, s: em.index_add(x, 0, em.tensor([2, 2]), s),
                  (GRAD_X, GRAD_X[:2].copy())),
    "logaddexp": (em.logaddexp, (GRAD_X, GRAD_X[::-1].copy())),
    "logaddexp tie": (em.logaddexp, (GRAD_X, GRAD_X.copy())),
    "einsum": (lambda a, b: em.einsum("ij,kj->ik", a, b), (GRAD_X, GRAD_X[::-1].copy())),
    "einsum 3": (lambda a, b: em.einsum("ij,jk,k->i", a, b, em.tensor([1.0, -2.0, 0.5, 3.0],
                                                                      dtype=em.float64)),
                 (GRAD_X, GRAD_X.T.copy()[:, :4].copy() if False else
                  np.random.default_rng(5).standard_normal((4, 4)))),
    "masked_fill": (lambda x: em.masked_fill(x, em.tensor(IDX[:, :1] > 0), 0.0), (GRAD_X,)),
    "clamp": (lambda x: em.clamp(x, -0.5, 0.5), (np.where(np.abs(np.abs(GRAD_X) - 0.5) < .1,
                                                          0.9, GRAD_X),)),
    "clamp tensor bounds": (lambda x, lo: em.clamp(x, min=lo),
                            (GRAD_X, GRAD_X[::-1].copy() + 0.05)),
    "expand": (lambda x: em.expand(x[:, :1], 2, 3, 4), (GRAD_X,)),
    "tile": (lambda x: em.tile(x, (2, 3)), (GRAD_X,)),
    "split": (lambda x: em.split(x, [1, 3], dim=1)[1] * 2, (GRAD_X,)),
    "chunk": (lambda x: em.chunk(x, 2, dim=1)[0] + em.chunk(x, 2, dim=1)[1], (GRAD_X,)),
    "softplus": (lambda x: NF.softplus(x * 8), (GRAD_X,)),
    "softplus beta": (lambda x: NF.softplus(x, beta=2.0, threshold=1.0), (GRAD_X,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_finite_differences_and_jit(name):
    fn, arrays = GRAD_CASES[name]
    check_grad(fn, *arrays)
    assert_jit_grads_agree(fn, *arrays)


def test_sort_and_max_with_dim_return_pytorchs_pair():
    x = em.tensor(TIES[:, [0, 1, 2, 4, 5]])
    values, indices = em.sort(x, dim=1)
    assert values.tolist() == [[-1.0, 1.0, 1.0, 3.0, 3.0]]
    assert indices.tolist() == [[3, 1, 4, 0, 2]]  # stable: ties keep their order
    assert em.sort(x, descending=True, dim=-1).indices.tolist() == [[0, 2, 1, 4, 3]]
    v, i = em.max(x, dim=1)
    assert v.tolist() == [3.0] and i.tolist() == [0]
    assert x.min(dim=1, keepdim=True).indices.shape == (1, 1)
    assert isinstance(em.max(x, axis=1), em.Tensor)  # the Array API spelling: values
    assert em.topk(x, 2).indices.tolist() == [[0, 2]]


def test_split_and_chunk_follow_pytorch():
    x = em.arange(10)
    assert [p.tolist() for p in em.split(x, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [p.shape for p in em.split(x, [3, 7])] == [(3,), (7,)]
    assert [p.shape for p in em.chunk(x, 3)] == [(4,), (4,), (2,)]
    assert [p.shape for p in em.chunk(em.arange(6), 4)] == [(2,), (2,), (2,)]
    q, k, v = em.chunk(em.ones(2, 9), 3, dim=-1)
    assert q.shape == k.shape == v.shape == (2, 3)
    expect_error(em.ShapeError, lambda: em.split(x, [3, 3]), op="split",
                 operands=("i64[10]@cpu",), mentions=("add up to 6",))


def test_multinomial_draws_the_same_eagerly_and_under_jit():
    probs = em.tensor([[0.1, 0.2, 0.7, 0.0], [0.5, 0.0, 0.25, 0.25]])
    draw = em.jit(lambda p: (em.multinomial(p, 3), em.multinomial(p, 5, replacement=True)))
    em.random.seed(11)
    eager = [(em.multinomial(probs, 3), em.multinomial(probs, 5, replacement=True))
             for _ in range(3)]
    em.random.seed(11)
    jitted = [draw(probs) for _ in range(3)]
    for (a, b), (c, d) in zip(eager, jitted, strict=True):
        assert a.tolist() == c.tolist() and b.tolist() == d.tolist()
        assert c.dtype == em.int64 and c.shape == (2, 3) and d.shape == (2, 5)
    # Without replacement: distinct categories, never one of probability 0.
    for a, _ in eager:
        for row, p in zip(a.tolist(), probs.tolist(), strict=True):
            assert len(set(row)) == 3 and all(p[i] > 0 for i in row)


def test_multinomial_frequencies_follow_the_probabilities():
    em.random.seed(0)
    draws = em.multinomial(em.tensor([0.2, 0.5, 0.3]), 20000, replacement=True).numpy()
    freq = np.bincount(draws, minlength=3) / draws.size
    np.testing.assert_allclose(freq, [0.2, 0.5, 0.3], atol=0.015)


def test_multinomial_refuses_bad_probabilities_in_both_modes():
    bad = em.tensor([[0.5, -0.1, 0.6]])
    expect_error(em.IndexingError, lambda: em.multinomial(bad, 1), op="random_multinomial",
                 mentions=("non-negative",))
    with pytest.raises(em.IndexingError, match="non-negative"):
        em.jit(lambda p: em.multinomial(p, 1))(bad)
    expect_error(em.ShapeError, lambda: em.multinomial(em.tensor([0.5, 0.5]), 3),
                 op="random_multinomial", mentions=("without replacement",))


@pytest.mark.parametrize("jit", [False, True])
def test_out_of_range_index_names_the_value_in_both_modes(jit):
    def run(fn, *args):
        return (em.jit(fn) if jit else fn)(*args)

    x = em.tensor(X34)
    with pytest.raises(em.IndexingError, match=r"index 4 at position \(0, 1\) is out of range"):
        run(lambda x, i: em.take_along_axis(x, i, axis=1), x, em.tensor([[0, 4]]))
    with pytest.raises(em.IndexingError, match=r"index -1 .* out of range \[0, 3\)"):
        run(lambda x, i: em.scatter_add(x, 0, i, em.ones(1, 2)), x, em.tensor([[0, -1]]))
    with pytest.raises(em.IndexingError, match=r"class 5 at position \(1,\)"):
        run(lambda i: em.one_hot(i, 5), em.tensor([1, 5]))

    # Unused results still raise, as eagerly (the ops may raise: DCE keeps them).
    def unused(x, i):
        em.take_along_axis(x, i, axis=1)
        return x + 1

    with pytest.raises(em.IndexingError):
        run(unused, x, em.tensor([[7]]))


def test_bad_arguments_name_the_op_and_the_line():
    x = em.tensor(X34)
    expect_error(em.ShapeError, lambda: em.tril(em.ones(3)), op="tril",
                 operands=("f32[3]@cpu",), mentions=("rank >= 2",))
    expect_error(em.DTypeError, lambda: em.take_along_axis(x, em.tensor([[0.5]]), axis=1),
                 op="take_along_axis", mentions=("integer",))
    expect_error(em.ShapeError, lambda: em.take_along_axis(x, em.tensor([0]), axis=1),
                 op="take_along_axis", mentions=("rank 1",))
    expect_error(em.ShapeError, lambda: em.topk(x, 5), op="topk", mentions=("k=5",))
    expect_error(em.ArgumentError, lambda: em.einsum("ii->i", x[:, :3]), op="einsum",
                 mentions=("diagonal",))
    expect_error(em.ShapeError, lambda: em.einsum("ij,jk->ik", x, x), op="einsum",
                 mentions=("size 4 in one operand and 3",))
    expect_error(em.ArgumentError, lambda: em.einsum("ij->i", x, x), op="einsum",
                 mentions=("names 1 operands, but 2",))
    expect_error(em.ArgumentError, lambda: em.masked_fill(x, x > 0.5 if False else x, 0.0),
                 op="masked_fill", mentions=("bool",))
    expect_error(em.ShapeError, lambda: em.masked_fill(x, em.ones(4, 4, dtype=em.bool), 1.0),
                 op="masked_fill", mentions=("broadcast",))
    expect_error(em.ArgumentError, lambda: em.sum(x, axis=0, dim=0), op="sum",
                 mentions=("dim=",))
    expect_error(em.ArgumentError, lambda: em.mean(x, keepdims=True, keepdim=True),
                 op="mean", mentions=("keepdim=",))
    expect_error(em.ArgumentError, lambda: em.cumsum(x), op="cumsum", mentions=("axis=",))
    expect_error(em.ArgumentError, lambda: em.one_hot(em.tensor([0.0])), op="one_hot",
                 mentions=("integer",))


# --- PyTorch twins --------------------------------------------------------------------------

def test_pytorch_twin_of_the_new_ops():
    torch = torch_or_skip()
    t = torch.tensor(X34)
    ti = torch.tensor(IDX)
    x = em.tensor(X34)
    xi = em.tensor(IDX)
    src = RNG.standard_normal((3, 3)).astype(np.float32)
    pairs = [
        (em.tril(x, 1), torch.tril(t, 1)),
        (em.triu(x, -1), torch.triu(t, -1)),
        (em.cumsum(x, dim=1), torch.cumsum(t, dim=1)),
        (em.sort(x, dim=0).values, torch.sort(t, dim=0).values),
        (em.topk(x, 2, dim=1).values, torch.topk(t, 2, dim=1).values),
        (em.gather(x, 1, xi), torch.gather(t, 1, ti)),
        (em.scatter_add(x, 1, xi, em.tensor(src)),
         torch.scatter_add(t, 1, ti, torch.tensor(src))),
        (em.index_add(x, 1, em.tensor([3, 0, 3]), em.tensor(src)),
         torch.index_add(t, 1, torch.tensor([3, 0, 3]), torch.tensor(src))),
        (em.one_hot(xi, 4), torch.nn.functional.one_hot(ti, 4)),
        (em.logaddexp(x, x * 2), torch.logaddexp(t, t * 2)),
        (em.einsum("bij,bkj->bik", em.tensor(X234), em.tensor(X234)),
         torch.einsum("bij,bkj->bik", torch.tensor(X234), torch.tensor(X234))),
        (em.tile(x, (2, 1, 2)), t.repeat(2, 1, 2)),
        (x.expand(2, 3, 4), t.expand(2, 3, 4)),
        (em.clamp(x, -0.3, 0.2), torch.clamp(t, -0.3, 0.2)),
        (x.masked_fill(x > 0, -1.0), t.masked_fill(t > 0, -1.0)),
        (NF.softplus(x * 30), torch.nn.functional.softplus(t * 30)),
        (em.var(x, dim=1, unbiased=True), torch.var(t, dim=1, unbiased=True)),
        (em.std(x, dim=0, correction=1, keepdim=True), torch.std(t, dim=0, keepdim=True)),
    ]
    for ours, theirs in pairs:
        want = theirs.numpy()
        got = ours.numpy()
        assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    ties = np.array([[3.0, 1.0, 3.0, -1.0, 1.0, 7.0], [0.0, 0.0, 2.0, 2.0, 0.0, -1.0]],
                    np.float32)
    for descending in (False, True):
        want = torch.sort(torch.tensor(ties), dim=1, descending=descending, stable=True)
        got = em.sort(em.tensor(ties), dim=1, descending=descending)
        assert got.indices.tolist() == want.indices.tolist()
        assert got.values.tolist() == want.values.tolist()
        assert em.argsort(em.tensor(ties), descending=descending).tolist() == \
            torch.argsort(torch.tensor(ties), descending=descending, stable=True).tolist()
    assert [p.shape for p in em.split(x, 3, dim=1)] == \
        [tuple(p.shape) for p in torch.split(t, 3, dim=1)]
    assert [p.shape for p in em.chunk(em.arange(6), 4)] == \
        [tuple(p.shape) for p in torch.chunk(torch.arange(6), 4)]


MASK = (np.arange(20).reshape(4, 5) % 3 != 0).astype(np.float64)


def test_pytorch_twin_of_the_gradients():
    torch = torch_or_skip()
    data = RNG.standard_normal((4, 5))
    cases = [
        (lambda m: m.cumsum(dim=1) * m, lambda a: em.cumsum(a, dim=1) * a),
        (lambda m: torch.topk(m, 3).values, lambda a: em.topk(a, 3).values),
        (lambda m: torch.gather(m, 1, torch.tensor([[4, 0], [1, 1], [2, 3], [0, 0]])),
         lambda a: em.gather(a, 1, em.tensor([[4, 0], [1, 1], [2, 3], [0, 0]]))),
        (lambda m: torch.logaddexp(m, -m), lambda a: em.logaddexp(a, -a)),
        (lambda m: torch.clamp(m, -0.5, 0.5), lambda a: em.clamp(a, -0.5, 0.5)),
        # Exact zeros (the mask's) reach relu: relu'(0) = 0 in both.
        (lambda m: torch.relu(m * torch.tensor(MASK)), lambda a: NF.relu(a * em.tensor(MASK))),
        (lambda m: torch.nn.functional.softplus(m * 20), lambda a: NF.softplus(a * 20)),
    ]
    w = RNG.standard_normal((4, 5))
    for torch_fn, em_fn in cases:
        tm = torch.tensor(data, requires_grad=True)
        out = torch_fn(tm)
        (out * torch.tensor(w[:, :out.shape[1]])).sum().backward()
        ea = em.tensor(data, requires_grad=True)
        eout = em_fn(ea)
        em.sum(eout * em.tensor(w[:, :eout.shape[1]])).backward()
        np.testing.assert_allclose(ea.grad.numpy(), tm.grad.numpy(), rtol=1e-6, atol=1e-9)
        assert_close(eout, out.detach().numpy())
