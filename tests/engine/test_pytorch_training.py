"""A causal-attention training step written the way a PyTorch user writes it (split,
einsum, tril + masked_fill, softmax(dim=), view, cross_entropy with label smoothing) trains
with the same losses eagerly and under em.jit, in one graph without breaks."""

from __future__ import annotations

import numpy as np

import execmode as em
from execmode.nn import functional as NF


def _train(jit: bool, steps: int = 5):
    em.random.seed(0)
    B, T, C, V = 2, 8, 16, 11  # noqa: N806 - the usual names
    emb = (em.randn(V, C) * 0.1).requires_grad_()
    wqkv = (em.randn(C, 3 * C) * 0.1).requires_grad_()
    wout = (em.randn(C, V) * 0.1).requires_grad_()
    params = [emb, wqkv, wout]
    idx = em.random.randint(0, V, (B, T))
    tgt = em.random.randint(0, V, (B, T))
    causal = em.tril(em.ones(T, T, dtype=em.bool))

    def step(idx, tgt):
        x = emb[idx]
        q, k, v = (x @ wqkv).split(C, dim=-1)
        att = em.einsum("btc,bsc->bts", q, k) / C ** 0.5
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        logits = (att @ v) @ wout
        loss = NF.cross_entropy(logits.view(B * T, V), tgt.view(-1), label_smoothing=0.1)
        loss.backward()
        with em.no_grad():
            for p in params:
                p -= 0.5 * p.grad
                p.grad = None
        return loss

    run = em.jit(step) if jit else step
    return [run(idx, tgt).item() for _ in range(steps)], run


def test_attention_step_with_pytorch_spellings_trains_identically_under_jit():
    eager, _ = _train(jit=False)
    jitted, run = _train(jit=True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)
    assert jitted[-1] < jitted[0]
    assert run.trace_count == 1
    assert not any(cf.has_breaks for cf in run.concrete_functions)
