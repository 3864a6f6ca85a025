"""Module behaviour that PyTorch programs rely on, checked on a nanoGPT-shaped model
written once for both libraries: ModuleDict attribute access, ModuleList, register_buffer,
weight tying, apply with nn.init, named_* and state_dict keys, load_state_dict(strict,
assign); the same weights give torch's outputs and gradients, and em.jit agrees."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest
from pytorch_twins import torch_or_skip

import execmode as em
from execmode import nn

V, T, C, H = 11, 6, 8, 2  # vocabulary, context, channels, heads


def gpt(lib):
    """A two-block GPT in nanoGPT's spelling, for ``lib`` (execmode or torch)."""
    tnn, tf = lib.nn, lib.nn.functional

    class Attention(tnn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = tnn.Linear(C, 3 * C)
            self.c_proj = tnn.Linear(C, C)
            self.register_buffer("bias", lib.tril(lib.ones(T, T)).view(1, 1, T, T))

        def forward(self, x):
            b, t, c = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (z.view(b, t, H, c // H).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
            y = tf.softmax(att, dim=-1) @ v
            return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))

    class Block(tnn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = tnn.LayerNorm(C), Attention(), tnn.LayerNorm(C)
            self.mlp = tnn.ModuleDict(dict(c_fc=tnn.Linear(C, 4 * C), act=tnn.GELU(),
                                           c_proj=tnn.Linear(4 * C, C)))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            m = self.mlp
            return x + m.c_proj(m.act(m.c_fc(self.ln_2(x))))

    class GPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = tnn.ModuleDict(dict(
                wte=tnn.Embedding(V, C), wpe=tnn.Embedding(T, C),
                h=tnn.ModuleList([Block() for _ in range(2)]), ln_f=tnn.LayerNorm(C)))
            self.lm_head = tnn.Linear(C, V, bias=False)
            self.transformer.wte.weight = self.lm_head.weight  # weight tying
            self.apply(self._init_weights)

        def _init_weights(self, module):
            if isinstance(module, tnn.Linear):
                tnn.init.normal_(module.weight, mean=0.0, std=0.02)
                if module.bias is not None:
                    tnn.init.zeros_(module.bias)
            elif isinstance(module, tnn.Embedding):
                tnn.init.normal_(module.weight, mean=0.0, std=0.02)

        def forward(self, idx, targets):
            pos = lib.arange(0, idx.size(1))
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            logits = self.lm_head(self.transformer.ln_f(x))
            return tf.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    return GPT()


IDX = np.random.default_rng(1).integers(0, V, (2, T))
TARGETS = np.random.default_rng(2).integers(0, V, (2, T))


def _decay_groups(model):
    """nanoGPT's configure_optimizers: 2-d parameters decay, the rest do not."""
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    return [{"params": [p for p in params.values() if p.dim() >= 2], "weight_decay": 0.1},
            {"params": [p for p in params.values() if p.dim() < 2], "weight_decay": 0.0}]


def test_gpt_keys_weights_outputs_and_gradients_match_torch():
    torch = torch_or_skip()
    torch.manual_seed(0)
    theirs = gpt(torch)
    em.random.seed(0)
    ours = gpt(em)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert ours.transformer.wte.weight is ours.lm_head.weight  # tied: one parameter
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    loss = ours(em.tensor(IDX), em.tensor(TARGETS))
    loss.backward()
    want = theirs(torch.tensor(IDX), torch.tensor(TARGETS))
    want.backward()
    np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=name)
    groups = _decay_groups(ours)
    assert sum(len(g["params"]) for g in groups) == len(ours.parameters())


@pytest.mark.slow  # compiles a GPT training step
def test_gpt_training_steps_agree_eagerly_and_under_jit():
    def run(jit):
        em.random.seed(0)
        model = gpt(em)
        opt = em.optim.AdamW(_decay_groups(model), lr=1e-2, betas=(0.9, 0.95))
        idx, targets = em.tensor(IDX), em.tensor(TARGETS)

        def step(idx, targets):
            loss = model(idx, targets)
            loss.backward()
            em.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        f = em.jit(step, on_break="error") if jit else step
        return [f(idx, targets).item() for _ in range(4)]

    eager, jitted = run(False), run(True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)
    assert jitted[-1] < jitted[0]


def test_module_dict_items_are_attributes():
    d = nn.ModuleDict({"a": nn.Linear(2, 2)})
    assert d.a is d["a"]
    d.b = nn.ReLU()  # an attribute set to a module is an item, as in PyTorch
    assert list(d.keys()) == ["a", "b"] and [n for n, _ in d.named_children()] == ["a", "b"]
    del d.b
    assert "b" not in d and d.pop("a").in_features == 2 and len(d) == 0
    with pytest.raises(AttributeError, match="'missing'"):
        d.missing  # noqa: B018


def test_sequential_and_module_list_edits():
    em.random.seed(0)
    seq = nn.Sequential(OrderedDict(fc=nn.Linear(2, 3), act=nn.ReLU()))
    assert seq.fc is seq[0]
    num = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    num.insert(1, nn.Tanh())
    num.extend([nn.Identity()])
    assert [type(m).__name__ for m in num] == ["Linear", "Tanh", "ReLU", "Identity"]
    del num[1]
    assert [n for n, _ in num.named_children()] == ["0", "1", "2"]
    assert isinstance(num.pop(), nn.Identity) and len(num) == 2
    layers = nn.ModuleList([nn.Linear(1, 1)]) + [nn.Tanh()]
    layers += [nn.ReLU()]
    del layers[0]
    assert [type(m).__name__ for m in layers] == ["Tanh", "ReLU"]


def test_load_state_dict_assign_replaces_and_strict_false_reports():
    em.random.seed(0)
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    old = model[0].weight
    model[0].weight.requires_grad_(False)
    sd = {k: v * 0 + 2 for k, v in model.state_dict().items()}
    model.load_state_dict(sd, assign=True)
    new = model[0].weight
    assert new is not old and isinstance(new, nn.Parameter) and not new.requires_grad
    assert new.numpy().tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert model[1].running_mean is model.get_buffer("1.running_mean")
    assert model[1].num_batches_tracked.dtype == em.int64
    missing, unexpected = model.load_state_dict({"0.bias": np.zeros(2), "x": np.ones(1)},
                                                strict=False)
    assert "0.weight" in missing and unexpected == ["x"]


def test_naming_helpers():
    em.random.seed(0)
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in model.named_parameters(remove_duplicate=False)] == [
        "0.weight", "0.bias", "2.weight", "2.bias"]
    assert model.get_submodule("1").__class__ is nn.ReLU
    assert model.get_parameter("0.bias") is shared.bias
    model.add_module("head", nn.Linear(2, 1))
    model.register_parameter("scale", nn.Parameter(em.ones(1)))
    assert model.get_submodule("head").out_features == 1
    assert "scale" in dict(model.named_parameters())
    with pytest.raises(em.ArgumentError, match="Parameter"):
        model.register_parameter("w", em.ones(1))
    with pytest.raises(AttributeError, match="no submodule 'nope'"):
        model.get_submodule("nope")
    assert model.double().get_parameter("0.bias").dtype == em.float64
    assert model.float().get_parameter("0.bias").dtype == em.float32
    with pytest.raises(em.DTypeError, match="float16"):
        model.half()
    sd = OrderedDict()
    assert model.state_dict(destination=sd, prefix="m.") is sd and "m.0.weight" in sd
