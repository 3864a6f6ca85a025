"""The layers added for PyTorch programs (issue 32): GroupNorm, RMSNorm, ConvTranspose,
adaptive pooling, TransformerEncoderLayer/TransformerEncoder, LazyLinear, channel dropout,
more activations, Unflatten, Embedding.from_pretrained, F.normalize, F.batch_norm: each a
twin of torch's (values and gradients, with torch's weights), and eager against em.jit."""

from __future__ import annotations

import numpy as np
import pytest
from pytorch_twins import assert_jit_agrees, assert_jit_grads_agree, torch_or_skip

import execmode as em
from execmode import nn
from execmode.nn import functional as NF

RNG = np.random.default_rng(34)
IMG = RNG.standard_normal((2, 4, 7, 6)).astype(np.float32)
SEQ = RNG.standard_normal((5, 3, 8)).astype(np.float32)

# (name, build(nn namespace) -> module, input, extra forward kwargs as (ours, theirs) makers)
MODULES = [
    ("GroupNorm", lambda m: m.GroupNorm(2, 4), IMG),
    ("GroupNorm no affine", lambda m: m.GroupNorm(4, 4, affine=False), IMG),
    ("RMSNorm", lambda m: m.RMSNorm(6), IMG),
    ("LayerNorm no bias", lambda m: m.LayerNorm(6, bias=False), IMG),
    ("BatchNorm2d", lambda m: m.BatchNorm2d(4), IMG),
    ("ConvTranspose2d", lambda m: m.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
                                                     output_padding=1), IMG),
    ("ConvTranspose2d groups dilation", lambda m: m.ConvTranspose2d(
        4, 6, (3, 2), stride=(1, 2), groups=2, dilation=2, bias=False), IMG),
    ("ConvTranspose1d", lambda m: m.ConvTranspose1d(4, 3, 3, stride=2), IMG[:, :, 0]),
    ("AdaptiveAvgPool2d global", lambda m: m.AdaptiveAvgPool2d(1), IMG),
    ("AdaptiveAvgPool2d uneven", lambda m: m.AdaptiveAvgPool2d((3, 4)), IMG),
    ("AdaptiveAvgPool2d None", lambda m: m.AdaptiveAvgPool2d((None, 3)), IMG),
    ("AdaptiveMaxPool2d uneven", lambda m: m.AdaptiveMaxPool2d((5, 4)), IMG),
    ("AdaptiveAvgPool1d", lambda m: m.AdaptiveAvgPool1d(4), IMG[:, :, 0]),
    ("TransformerEncoderLayer", lambda m: m.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
     SEQ),
    ("TransformerEncoderLayer pre-norm gelu batch_first", lambda m: m.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, activation="gelu", norm_first=True, batch_first=True), SEQ),
    ("TransformerEncoder", lambda m: m.TransformerEncoder(
        m.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, norm=m.LayerNorm(8),
        **({"enable_nested_tensor": False} if m is not nn else {})), SEQ),
    ("PReLU per channel", lambda m: m.PReLU(4, init=0.1), IMG),
    ("Unflatten", lambda m: m.Unflatten(1, (2, 2)), IMG),
    ("Softmax dim 1", lambda m: m.Softmax(dim=1), IMG),
    ("LogSoftmax", lambda m: m.LogSoftmax(dim=-1), IMG),
]


@pytest.mark.parametrize("case", MODULES, ids=[c[0] for c in MODULES])
def test_layers_match_torch(case):
    torch = torch_or_skip()
    _, build, x = case
    torch.manual_seed(0)
    theirs = build(torch.nn)
    em.random.seed(0)
    ours = build(nn)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    tx, ex = torch.tensor(x, requires_grad=True), em.tensor(x, requires_grad=True)
    want, got = theirs(tx), ours(ex)
    assert got.shape == tuple(want.shape)
    w = RNG.standard_normal(got.shape).astype(np.float32)
    (want * torch.tensor(w)).sum().backward()
    (got * em.tensor(w)).sum().backward()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (pn, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=pn)


ACTIVATIONS = ["silu", "leaky_relu", "elu", "selu", "celu", "mish", "hardtanh", "relu6",
               "hardsigmoid", "hardswish", "logsigmoid", "softsign", "tanhshrink", "glu",
               "softmin"]
KINKS = np.array([-5.0, -3.0, -1.5, -1.0, -0.5, 0.0, 0.3, 1.0, 2.9, 3.0, 4.0, 6.0, 7.0, 9.0],
                 np.float32)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activations_match_torch_at_their_kinks(name):
    torch = torch_or_skip()
    kwargs = {"softmin": dict(dim=0)}.get(name, {})
    tx, ex = torch.tensor(KINKS, requires_grad=True), em.tensor(KINKS, requires_grad=True)
    want = getattr(torch.nn.functional, name)(tx, **kwargs)
    got = getattr(NF, name)(ex, **kwargs)
    w = np.linspace(1, 2, got.size).astype(np.float32).reshape(got.shape)
    (want * torch.tensor(w)).sum().backward()
    (got * em.tensor(w)).sum().backward()
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


KERNEL = em.tensor(RNG.standard_normal((4, 3, 3, 3)))
FUNCTIONS = [
    ("group_norm", lambda x: NF.group_norm(x, 2), IMG),
    ("conv_transpose2d", lambda x: NF.conv_transpose2d(x, KERNEL, stride=2, padding=1), IMG),
    ("adaptive_avg_pool2d", lambda x: NF.adaptive_avg_pool2d(x, (3, 4)), IMG),
    ("adaptive_max_pool2d", lambda x: NF.adaptive_max_pool2d(x, (3, 4)), IMG),
    ("normalize", lambda x: NF.normalize(x, dim=1), IMG),
    ("rms_norm", lambda x: NF.rms_norm(x, (6,)), IMG),
    ("mish", NF.mish, IMG),
    ("hardswish", NF.hardswish, IMG * 3),
]


@pytest.mark.parametrize("case", FUNCTIONS, ids=[c[0] for c in FUNCTIONS])
def test_new_functions_agree_under_jit(case):
    _, fn, x = case
    assert_jit_agrees(fn, em.tensor(x.astype(np.float64)), rtol=1e-10, atol=1e-12)
    assert_jit_grads_agree(fn, x.astype(np.float64))


@pytest.mark.slow  # compiles a transformer encoder's training step
def test_transformer_encoder_training_step_agrees_under_jit():
    def run(jit):
        em.random.seed(0)
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
        model = nn.TransformerEncoder(layer, 2)
        opt = em.optim.AdamW(model.parameters(), lr=1e-2)
        x = em.tensor(np.swapaxes(SEQ, 0, 1))
        causal = em.triu(em.ones((5, 5), dtype=em.bool), 1)
        target = em.tensor(np.swapaxes(SEQ, 0, 1)[:, ::-1].copy())

        def step(x):
            # A target the model is far from: gradients well above rounding noise, which
            # Adam's normalization would otherwise blow up to full steps.
            loss = ((model(x, mask=causal) - target) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        f = em.jit(step, on_break="error") if jit else step
        return [f(x).item() for _ in range(3)], f

    eager, _ = run(False)
    jitted, f = run(True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)
    assert f.trace_count == 1


def test_lazy_linear_learns_its_input_size_and_refuses_too_early_use():
    em.random.seed(0)
    model = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
    assert "uninitialized" in repr(model)
    early = em.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  # as PyTorch allows
    with pytest.raises(em.ArgumentError, match="still uninitialized"):
        early.step()
    twin = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
    em.random.seed(1)
    jitted = em.jit(twin)(em.ones((3, 5)))  # made eagerly, read by reference
    assert type(twin[0].weight) is nn.Parameter and twin[0].in_features == 5
    em.random.seed(1)
    again = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
    np.testing.assert_array_equal(jitted.numpy(), again(em.ones((3, 5))).numpy())
    weight = model[0].weight
    assert model(em.ones((3, 5))).shape == (3, 2)
    assert type(model[0]) is nn.Linear and model[0].in_features == 5
    assert model[0].weight is weight and type(weight) is nn.Parameter  # same object
    em.optim.SGD(model.parameters(), lr=0.1)
    early.step()  # the first call gave the shapes: the momentum buffers are made now
    assert early.state[0]["momentum_buffer"].shape == (4, 5)
    copy = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(2))
    copy.load_state_dict(model.state_dict())  # takes the checkpoint's shapes
    x = em.ones((2, 5))
    np.testing.assert_array_equal(copy(x).numpy(), model(x).numpy())


def test_channel_dropout_drops_whole_channels():
    em.random.seed(0)
    x = em.ones((4, 6, 3, 3))
    y = nn.Dropout2d(0.5)(x).numpy()
    per_channel = y.reshape(4, 6, 9)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(axis=2) == per_channel.max(axis=2)).all()
    assert 0 < (per_channel[..., 0] == 0).sum() < 24
    assert nn.Dropout1d(0.5).eval()(em.ones((2, 3, 4))).numpy().min() == 1.0
    with pytest.raises(em.ArgumentError, match="4-d"):
        NF.dropout2d(em.ones((2, 3)), 0.5)


def test_relu_inplace_embedding_from_pretrained_and_batch_norm_functional():
    x = em.tensor([-1.0, 2.0])
    out = nn.ReLU(inplace=True)(x)
    assert out is x and x.tolist() == [0.0, 2.0]
    table = em.tensor([[1.0, 2.0], [3.0, 4.0]])
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad
    assert emb(em.tensor([1])).tolist() == [[3.0, 4.0]]
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    with pytest.raises(em.ArgumentError, match="max_norm"):
        nn.Embedding(3, 2, max_norm=1.0)
    torch = torch_or_skip()
    mean, var = em.zeros(4), em.ones(4)
    tmean, tvar = torch.zeros(4), torch.ones(4)
    got = NF.batch_norm(em.tensor(IMG), mean, var, training=True, momentum=0.2)
    want = torch.nn.functional.batch_norm(torch.tensor(IMG), tmean, tvar, training=True,
                                          momentum=0.2)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(var.numpy(), tvar.numpy(), rtol=1e-5)
    np.testing.assert_allclose(
        NF.normalize(em.tensor(IMG), p=1, dim=2).numpy(),
        torch.nn.functional.normalize(torch.tensor(IMG), p=1, dim=2).numpy(), rtol=1e-5)


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_torch_with_masks(batch_first):
    torch = torch_or_skip()
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    ours = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x = np.swapaxes(SEQ, 0, 1).copy() if batch_first else SEQ      # N = 3, L = 5
    kv = x[:, :4] if batch_first else x[:4]                         # S = 4
    causal = np.triu(np.ones((5, 4), bool), 1)
    padding = np.zeros((3, 4), bool)
    padding[1, -1] = True
    for kwargs in (dict(attn_mask=causal, key_padding_mask=padding),
                   dict(attn_mask=causal, average_attn_weights=False)):
        tq = torch.tensor(x, requires_grad=True)
        eq = em.tensor(x, requires_grad=True)
        t_out, t_w = theirs(tq, torch.tensor(kv), torch.tensor(kv),
                            **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                               for k, v in kwargs.items()})
        e_out, e_w = ours(eq, em.tensor(kv), em.tensor(kv),
                          **{k: em.tensor(v) if isinstance(v, np.ndarray) else v
                             for k, v in kwargs.items()})
        (t_out.sum() + t_w.sum()).backward()
        (e_out.sum() + e_w.sum()).backward()
        np.testing.assert_allclose(e_out.numpy(), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(e_w.numpy(), t_w.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(eq.grad.numpy(), tq.grad.numpy(), rtol=1e-4, atol=1e-6)
