"""scaled_dot_product_attention and nn.MultiheadAttention: values against NumPy, gradients
against finite differences, masks with PyTorch's conventions, em.jit, PyTorch twins."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import assert_close, check_grad, expect_error

import execmode as em
from execmode.nn import functional as NF

RNG = np.random.default_rng(3)


def reference_sdpa(q, k, v, keep=None, additive=None, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    if additive is not None:
        scores = scores + additive
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def _qkv(batch=(2, 3), length=5, source=6, features=4, value_features=3):
    return (RNG.standard_normal(batch + (length, features)),
            RNG.standard_normal(batch + (source, features)),
            RNG.standard_normal(batch + (source, value_features)))


def test_sdpa_matches_numpy_with_each_kind_of_mask():
    q, k, v = _qkv()
    t = [em.tensor(a) for a in (q, k, v)]
    assert_close(NF.scaled_dot_product_attention(*t), reference_sdpa(q, k, v))
    causal = np.tril(np.ones((5, 6), bool))
    assert_close(NF.scaled_dot_product_attention(*t, is_causal=True),
                 reference_sdpa(q, k, v, keep=causal))
    keep = RNG.random((2, 1, 5, 6)) > 0.4
    keep[..., 0] = True
    assert_close(NF.scaled_dot_product_attention(*t, attn_mask=em.tensor(keep)),
                 reference_sdpa(q, k, v, keep=keep))
    bias = RNG.standard_normal((5, 6))
    assert_close(NF.scaled_dot_product_attention(*t, attn_mask=em.tensor(bias), scale=0.3),
                 reference_sdpa(q, k, v, additive=bias, scale=0.3))


def test_a_float64_mask_keeps_float32_scores_float32():
    q, k, v = (em.tensor(a.astype(np.float32)) for a in _qkv())
    bias = RNG.standard_normal((5, 6))
    out = NF.scaled_dot_product_attention(q, k, v, attn_mask=em.tensor(bias))
    assert out.dtype == em.float32
    assert_close(out, reference_sdpa(q.numpy(), k.numpy(), v.numpy(),
                                     additive=bias.astype(np.float32)), rtol=1e-4, atol=1e-5)


def test_a_fully_masked_row_is_nan_as_in_pytorch():
    q, k, v = (em.tensor(a) for a in _qkv(batch=(1,), length=2, source=3))
    keep = em.tensor([[True, False, True], [False, False, False]])
    out = NF.scaled_dot_product_attention(q, k, v, attn_mask=keep).numpy()
    assert np.isfinite(out[0, 0]).all() and np.isnan(out[0, 1]).all()


@pytest.mark.parametrize("mask", ["none", "causal", "bool", "float"])
def test_sdpa_gradients(mask):
    q, k, v = _qkv(batch=(2,), length=3, source=3, features=2, value_features=2)
    kwargs = {"causal": {"is_causal": True},
              "bool": {"attn_mask": em.tensor(np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1]],
                                                       bool))},
              "float": {"attn_mask": em.tensor(RNG.standard_normal((3, 3)))}}.get(mask, {})
    check_grad(lambda q, k, v: NF.scaled_dot_product_attention(q, k, v, **kwargs), q, k, v)


def test_sdpa_dropout_is_seeded_and_jit_draws_the_same():
    q, k, v = (em.tensor(a.astype(np.float32)) for a in _qkv())

    def attend(q, k, v):
        return NF.scaled_dot_product_attention(q, k, v, dropout_p=0.5, is_causal=True)

    em.random.seed(9)
    eager = [attend(q, k, v).numpy() for _ in range(3)]
    em.random.seed(9)
    jitted = em.jit(attend)
    got = [jitted(q, k, v).numpy() for _ in range(3)]
    assert jitted.trace_count == 1
    for a, b in zip(got, eager):
        assert_close(a, b, rtol=1e-5)
    assert not np.allclose(eager[0], eager[1])  # a fresh mask at every call
    em.random.seed(9)
    assert_close(attend(q, k, v), eager[0])


def test_sdpa_errors():
    q = em.ones((2, 5, 4))
    expect_error(em.ShapeError, lambda: NF.scaled_dot_product_attention(q, em.ones((2, 5, 3)),
                                                                        q),
                 op="scaled_dot_product_attention", mentions=["feature sizes differ"])
    expect_error(em.ArgumentError,
                 lambda: NF.scaled_dot_product_attention(q, q, q, attn_mask=em.ones((5, 5)),
                                                         is_causal=True),
                 op="scaled_dot_product_attention", mentions=["not both"])
    expect_error(em.ShapeError,
                 lambda: NF.scaled_dot_product_attention(q, q, q, attn_mask=em.ones((4, 5))),
                 op="scaled_dot_product_attention", mentions=["does not broadcast"])


def _mha(batch_first=True, dtype=em.float64):
    em.random.seed(2)
    return em.nn.MultiheadAttention(8, 2, batch_first=batch_first, dtype=dtype)


def reference_mha(m, x, kv, key_padding=None):
    """NumPy from the module's own parameters: project, split heads, attend, merge."""
    w = m.in_proj_weight.numpy()
    b = m.in_proj_bias.numpy()
    q, k, v = (a @ w[i * 8:(i + 1) * 8].T + b[i * 8:(i + 1) * 8]
               for i, a in enumerate((x, kv, kv)))

    def heads(a):
        return a.reshape(a.shape[0], a.shape[1], 2, 4).transpose(0, 2, 1, 3)

    keep = None if key_padding is None else ~key_padding[:, None, None, :]
    out = reference_sdpa(heads(q), heads(k), heads(v), keep=keep)
    out = out.transpose(0, 2, 1, 3).reshape(x.shape)
    return out @ m.out_proj.weight.numpy().T + m.out_proj.bias.numpy()


def test_multihead_attention_matches_numpy_in_both_layouts():
    m = _mha()
    x, kv = RNG.standard_normal((2, 5, 8)), RNG.standard_normal((2, 6, 8))
    padding = np.zeros((2, 6), bool)
    padding[1, 3:] = True
    out, weights = m(em.tensor(x), em.tensor(kv), em.tensor(kv),
                     key_padding_mask=em.tensor(padding))
    assert_close(out, reference_mha(m, x, kv, padding))
    assert weights.shape == (2, 5, 6)
    assert_close(weights.sum(axis=-1), np.ones((2, 5)))
    assert np.all(weights.numpy()[1, :, 3:] == 0)
    seq_first = _mha(batch_first=False)
    out, none = seq_first(em.tensor(x.transpose(1, 0, 2)), em.tensor(kv.transpose(1, 0, 2)),
                          em.tensor(kv.transpose(1, 0, 2)), need_weights=False)
    assert none is None
    assert_close(out, reference_mha(seq_first, x, kv).transpose(1, 0, 2))
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias",
                                                    "out_proj.weight", "out_proj.bias"]


def test_multihead_attention_gradients_and_causal_masks():
    m = _mha()
    x = RNG.standard_normal((1, 3, 8))
    check_grad(lambda x: m(x, x, x, is_causal=True)[0], x)
    xt = em.tensor(x)
    causal_bool = em.tensor(np.triu(np.ones((3, 3), bool), 1))  # True = not allowed
    causal_float = em.tensor(np.where(np.triu(np.ones((3, 3)), 1) > 0, -np.inf, 0.0))
    by_flag = m(xt, xt, xt, is_causal=True)[0]
    assert_close(m(xt, xt, xt, attn_mask=causal_bool)[0], by_flag.numpy())
    assert_close(m(xt, xt, xt, attn_mask=causal_float)[0], by_flag.numpy())


def test_multihead_attention_training_step_under_jit_matches_eager():
    def train(jit):
        em.random.seed(4)
        m = em.nn.MultiheadAttention(8, 2, dropout=0.2, batch_first=True)
        opt = em.optim.Adam(m.parameters(), lr=0.01)
        x = em.randn(2, 5, 8)

        def step(x):
            opt.zero_grad()
            out, _ = m(x, x, x, is_causal=True)
            loss = (out * out).mean()
            loss.backward()
            opt.step()
            return loss

        run = em.jit(step) if jit else step
        return [run(x).item() for _ in range(3)]

    np.testing.assert_allclose(train(True), train(False), rtol=1e-5)


def test_multihead_attention_errors():
    expect_error(em.ArgumentError, lambda: em.nn.MultiheadAttention(10, 3),
                 op="MultiheadAttention", mentions=["divisible"])
    m = _mha()
    x = em.ones((2, 5, 8), dtype=em.float64)
    expect_error(em.ShapeError, lambda: m(x, x, x, attn_mask=em.ones((4, 5))),
                 op="MultiheadAttention", mentions=["attn_mask must be"])
    expect_error(em.ShapeError, lambda: m(em.ones((2, 5, 6)), x, x), op="MultiheadAttention",
                 mentions=["E = 8"])


def test_attention_matches_pytorch():
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    q, k, v = _qkv()
    keep = RNG.random((5, 6)) > 0.3
    keep[:, 0] = True
    for kwargs in ({}, {"is_causal": True}, {"attn_mask": keep}, {"scale": 0.7}):
        mine = [em.tensor(a, requires_grad=True) for a in (q, k, v)]
        theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        mask = kwargs.get("attn_mask")
        out = NF.scaled_dot_product_attention(
            *mine, **dict(kwargs, **({"attn_mask": em.tensor(mask)} if mask is not None else {})))
        ref = torch.nn.functional.scaled_dot_product_attention(
            *theirs,
            **dict(kwargs, **({"attn_mask": torch.tensor(mask)} if mask is not None else {})))
        g = RNG.standard_normal(ref.shape)
        (out * em.tensor(g)).sum().backward()
        (ref * torch.tensor(g)).sum().backward()
        assert_close(out, ref.detach().numpy())
        for a, b in zip(mine, theirs):
            assert_close(a.grad, b.grad.numpy())

    for batch_first in (True, False):
        m = _mha(batch_first)
        twin = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first).double()
        twin.load_state_dict({name: torch.tensor(p.numpy()) for name, p in m.named_parameters()})
        x = RNG.standard_normal((2, 5, 8) if batch_first else (5, 2, 8))
        padding = np.zeros((2, 5), bool)
        padding[0, 3:] = True
        attn = np.triu(np.ones((5, 5), bool), 1)
        for kwargs in ({}, {"key_padding_mask": padding, "attn_mask": attn},
                       {"average_attn_weights": False}):
            mine = {key: em.tensor(val) if isinstance(val, np.ndarray) else val
                    for key, val in kwargs.items()}
            theirs = {key: torch.tensor(val) if isinstance(val, np.ndarray) else val
                      for key, val in kwargs.items()}
            out, w = m(em.tensor(x), em.tensor(x), em.tensor(x), **mine)
            ref, ref_w = twin(torch.tensor(x), torch.tensor(x), torch.tensor(x), **theirs)
            assert_close(out, ref.detach().numpy())
            assert_close(w, ref_w.detach().numpy())
