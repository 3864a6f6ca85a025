"""Numerics that match PyTorch (issue 14): sigmoid's gradient finite everywhere, relu'(0)=0,
clip's gradient 1 at the bounds, and the losses: cross_entropy (label check, ignore_index,
label_smoothing, weight, PyTorch's (N, C, d...) layout), nll_loss,
binary_cross_entropy_with_logits, softplus."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, check_grad, expect_error
from pytorch_twins import assert_jit_agrees, assert_jit_grads_agree, torch_or_skip

import execmode as em
from execmode.nn import functional as NF

RNG = np.random.default_rng(140)
LOGITS = RNG.standard_normal((6, 5)).astype(np.float32) * 3
LABELS = np.array([0, 4, 2, -100, 1, 4])


def _grad_of(fn, values, jit):
    x = em.tensor(np.asarray(values, np.float32), requires_grad=True)

    def step(x):
        fn(x).sum().backward()
        return x.grad

    return (em.jit(step) if jit else step)(x).numpy()


@pytest.mark.parametrize("jit", [False, True])
def test_sigmoid_and_its_gradient_are_finite_for_every_input(jit):
    values = [-1e30, -1e4, -100.0, -88.8, -20.0, 0.0, 20.0, 100.0, 1e4, np.inf, -np.inf]
    g = _grad_of(NF.sigmoid, values, jit)
    assert np.isfinite(g).all() and (g >= 0).all()
    assert_close(g[5], np.float32(0.25))
    y = NF.sigmoid(em.tensor(values, dtype=em.float32)).numpy()
    assert np.isfinite(y).all() and y[0] == 0 and y[-2] == 1


@pytest.mark.parametrize("jit", [False, True])
def test_relu_gradient_at_zero_is_zero_and_nan_stays_nan(jit):
    g = _grad_of(NF.relu, [-1.0, 0.0, 2.0], jit)
    assert g.tolist() == [0.0, 0.0, 1.0]
    y = NF.relu(em.tensor([np.nan, -np.inf, np.inf, 0.0, -0.5]))
    assert np.isnan(y.numpy()[0]) and y.numpy()[1:].tolist() == [0.0, np.inf, 0.0, 0.0]
    assert NF.relu(em.tensor([-2, 3], dtype=em.int32)).dtype == em.int32


@pytest.mark.parametrize("jit", [False, True])
def test_clip_gradient_is_one_at_the_bounds(jit):
    g = _grad_of(lambda x: em.clip(x, -1.0, 1.0), [-2.0, -1.0, 0.0, 1.0, 2.0], jit)
    assert g.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]
    assert np.isnan(em.clip(em.tensor([np.nan]), 0.0, 1.0).numpy()[0])
    # min > max: everything is max, as in PyTorch.
    assert em.clamp(em.tensor([0.0, 5.0]), 3.0, 1.0).tolist() == [1.0, 1.0]


# --- cross_entropy / nll_loss: references ----------------------------------------------------

def np_log_softmax(x, axis=-1):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def np_nll(logp, target, weight=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    n, c = logp.shape
    w = np.ones(c) if weight is None else weight.astype(np.float64)
    keep = target != ignore_index
    safe = np.where(keep, target, 0)
    nll = -logp[np.arange(n), safe] * w[safe] * keep
    smooth = -(logp * w).sum(axis=1) * keep
    loss = (1 - smoothing) * nll + smoothing / c * smooth
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (w[safe] * keep).sum()


CE_CASES = {
    "plain": {},
    "sum": {"reduction": "sum"},
    "none": {"reduction": "none"},
    "ignore_index": {"ignore_index": -100},
    "smoothing": {"label_smoothing": 0.1},
    "weight": {"weight": np.array([1.0, 2.0, 0.5, 1.0, 3.0], np.float32)},
    "weight smoothing none": {"weight": np.array([1.0, 2.0, 0.5, 1.0, 3.0], np.float32),
                              "label_smoothing": 0.2, "reduction": "none"},
    "custom ignore": {"ignore_index": 4},
}


def _ce_kwargs(case):
    kw = dict(CE_CASES[case])
    if "weight" in kw:
        kw["weight"] = em.tensor(kw["weight"])
    return kw


@pytest.mark.parametrize("case", sorted(CE_CASES))
def test_cross_entropy_matches_the_reference_and_jit(case):
    kw = CE_CASES[case]
    labels = LABELS if kw.get("ignore_index", -100) == -100 else np.where(LABELS < 0, 0, LABELS)
    want = np_nll(np_log_softmax(LOGITS), labels, kw.get("weight"), kw.get("ignore_index", -100),
                  kw.get("reduction", "mean"), kw.get("label_smoothing", 0.0))
    got = NF.cross_entropy(em.tensor(LOGITS), em.tensor(labels), **_ce_kwargs(case))
    assert_close(got, want.astype(np.float32), rtol=1e-5, atol=1e-6)
    assert_jit_agrees(lambda x, t: NF.cross_entropy(x, t, **_ce_kwargs(case)),
                      em.tensor(LOGITS), em.tensor(labels))
    logp = NF.log_softmax(em.tensor(LOGITS), axis=-1)
    if not kw.get("label_smoothing"):
        nll_kw = {k: v for k, v in _ce_kwargs(case).items()}
        assert_close(NF.nll_loss(logp, em.tensor(labels), **nll_kw), got.numpy(),
                     rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["plain", "smoothing", "weight smoothing none"])
def test_cross_entropy_gradients(case):
    fn = (lambda x: NF.cross_entropy(x, em.tensor(LABELS), **_ce_kwargs(case)))
    check_grad(fn, LOGITS.astype(np.float64))
    assert_jit_grads_agree(fn, LOGITS.astype(np.float64))
    check_grad(lambda x: NF.nll_loss(NF.log_softmax(x), em.tensor(LABELS)),
               LOGITS.astype(np.float64))


def test_cross_entropy_with_pytorchs_nd_layout_and_probabilities():
    logits = RNG.standard_normal((2, 5, 3)).astype(np.float32)     # (N, C, T)
    target = np.array([[0, 4, 1], [2, 2, 3]])                       # (N, T)
    flat = logits.transpose(0, 2, 1).reshape(-1, 5)
    want = np_nll(np_log_softmax(flat), target.reshape(-1), reduction="none").reshape(2, 3)
    got = NF.cross_entropy(em.tensor(logits), em.tensor(target), reduction="none")
    assert_close(got, want.astype(np.float32))
    probs = np.exp(np_log_softmax(RNG.standard_normal((6, 5)))).astype(np.float32)
    got = NF.cross_entropy(em.tensor(LOGITS), em.tensor(probs), label_smoothing=0.1)
    smoothed = probs * 0.9 + 0.1 / 5
    assert_close(got, np.float32(-(np_log_softmax(LOGITS) * smoothed).sum(1).mean()))
    one = NF.cross_entropy(em.tensor(LOGITS[0]), em.tensor(3))  # unbatched (C,) and ()
    assert_close(one, np.float32(-np_log_softmax(LOGITS[0])[3]))


def test_cross_entropy_refuses_labels_outside_the_classes_naming_the_value():
    logits, bad = em.tensor(LOGITS), em.tensor([0, 1, 5, 2, 0, 0])
    expect_error(em.IndexingError, lambda: NF.cross_entropy(logits, bad), op="check_labels",
                 mentions=("cross_entropy", "class 5", "position (2,)", "[0, 5)"))
    with pytest.raises(em.IndexingError, match=r"cross_entropy: target holds class -3"):
        em.jit(lambda x, t: NF.cross_entropy(x, t))(logits, em.tensor([0, 1, -3, 2, 0, 0]))
    with pytest.raises(em.IndexingError, match=r"nll_loss: target holds class 9"):
        NF.nll_loss(logits, em.tensor([9, 1, 0, 2, 0, 0]))
    # (B, T, C) with (B, T): PyTorch's layout wants classes on axis 1; say how to reshape.
    expect_error(em.ShapeError, lambda: NF.cross_entropy(em.ones(2, 3, 5), em.zeros(
        2, 3, dtype=em.int64)), op="cross_entropy", mentions=("reshape to (B*T, C)",))
    expect_error(em.ArgumentError, lambda: NF.cross_entropy(logits, em.tensor(LABELS),
                                                            label_smoothing=2.0),
                 op="cross_entropy", mentions=("label_smoothing",))


def test_every_label_ignored_gives_nan_as_pytorch():
    out = NF.cross_entropy(em.tensor(LOGITS[:2]), em.tensor([-100, -100]))
    assert np.isnan(out.item())


# --- binary cross-entropy with logits, softplus -------------------------------------------

def np_bce_logits(x, t, pos_weight=None):
    x, t = x.astype(np.float64), t.astype(np.float64)
    sp = np.logaddexp(0, -x)
    lw = 1 + ((pos_weight if pos_weight is not None else 1) - 1) * t
    return (1 - t) * x + lw * sp


def test_binary_cross_entropy_with_logits_is_stable_and_matches():
    x = np.array([-1e4, -50.0, -1.0, 0.0, 0.5, 30.0, 1e4], np.float32)
    t = np.array([1.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.0], np.float32)
    got = NF.binary_cross_entropy_with_logits(em.tensor(x), em.tensor(t), reduction="none")
    assert_close(got, np_bce_logits(x, t).astype(np.float32), rtol=1e-5, atol=1e-5)
    pw = np.array([2.0], np.float32)
    got = NF.binary_cross_entropy_with_logits(em.tensor(x), em.tensor(t),
                                              pos_weight=em.tensor(pw))
    assert_close(got, np.float32(np_bce_logits(x, t, pw).mean()), rtol=1e-5)
    g = _grad_of(lambda v: NF.binary_cross_entropy_with_logits(v, em.tensor(t)), x, jit=True)
    assert np.isfinite(g).all()
    check_grad(lambda v, w: NF.binary_cross_entropy_with_logits(v, em.tensor(t[:4]), weight=w),
               x[2:6].astype(np.float64), np.array([1.0, 2.0, 0.5, 1.5]))
    assert_jit_agrees(lambda v: NF.binary_cross_entropy_with_logits(v, em.tensor(t)),
                      em.tensor(x))
    expect_error(em.ShapeError, lambda: NF.binary_cross_entropy_with_logits(
        em.tensor(x), em.tensor(t[:3])), op="binary_cross_entropy_with_logits",
                 mentions=("shape",))


def test_softplus_matches_numpy_and_is_linear_above_the_threshold():
    x = np.array([-1e4, -30.0, -1.0, 0.0, 1.0, 19.0, 21.0, 1e4], np.float32)
    assert_close(NF.softplus(em.tensor(x)),
                 np.where(x > 20, x, np.logaddexp(0, x.astype(np.float64))).astype(np.float32))
    assert_close(NF.softplus(em.tensor(x), beta=2.0),
                 np.where(2 * x > 20, x, np.logaddexp(0, 2 * x.astype(np.float64)) / 2)
                 .astype(np.float32))
    assert_jit_agrees(lambda v: NF.softplus(v, beta=0.5), em.tensor(x))


# --- PyTorch twins -------------------------------------------------------------------------

def test_pytorch_twin_of_the_losses():
    torch = torch_or_skip()
    tf = torch.nn.functional
    w = np.array([1.0, 2.0, 0.5, 1.0, 3.0], np.float32)
    nd_logits = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    nd_target = np.array([[0, 4, 1], [2, -100, 3]])
    x = np.array([-1e4, -50.0, -1.0, 0.0, 0.5, 30.0, 1e4], np.float32)
    t = np.array([1.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.0], np.float32)
    cases = [
        ("ce", lambda L, T: NF.cross_entropy(L, T), lambda L, T: tf.cross_entropy(L, T),
         LOGITS, LABELS),
        ("ce smoothing weight", lambda L, T: NF.cross_entropy(
            L, T, weight=em.tensor(w), label_smoothing=0.15),
         lambda L, T: tf.cross_entropy(L, T, weight=torch.tensor(w), label_smoothing=0.15),
         LOGITS, LABELS),
        ("ce none", lambda L, T: NF.cross_entropy(L, T, reduction="none", ignore_index=4),
         lambda L, T: tf.cross_entropy(L, T, reduction="none", ignore_index=4),
         LOGITS, np.where(LABELS < 0, 0, LABELS)),
        ("ce nd", lambda L, T: NF.cross_entropy(L, T), lambda L, T: tf.cross_entropy(L, T),
         nd_logits, nd_target),
        ("nll", lambda L, T: NF.nll_loss(NF.log_softmax(L), T, weight=em.tensor(w)),
         lambda L, T: tf.nll_loss(tf.log_softmax(L, -1), T, weight=torch.tensor(w)),
         LOGITS, LABELS),
        ("bce", lambda L, T: NF.binary_cross_entropy_with_logits(
            L, T, pos_weight=em.tensor([3.0])),
         lambda L, T: tf.binary_cross_entropy_with_logits(
            L, T, pos_weight=torch.tensor([3.0])), x, t),
    ]
    for name, ours, theirs, logits, target in cases:
        tl = torch.tensor(logits, requires_grad=True)
        want = theirs(tl, torch.tensor(target))
        want.sum().backward()
        el = em.tensor(logits, requires_grad=True)
        got = ours(el, em.tensor(target))
        got.sum().backward()
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=name)
        np.testing.assert_allclose(el.grad.numpy(), tl.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)
