"""nn.Module's PyTorch API: traversal, modes, buffers, state_dict, containers, layers."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from helpers import assert_close, check_grad, expect_error

import execmode as em
from execmode import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.norm = nn.BatchNorm1d(4)
        self.register_buffer("scale", em.ones(4))
        self.register_buffer("cache", em.zeros(2), persistent=False)

    def forward(self, x):
        return self.norm(self.fc(x)) * self.scale


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "reg": nn.Linear(4, 1)})
        self.out = nn.Sequential(nn.ReLU(), nn.Identity(), nn.Flatten())

    def forward(self, ids):
        h = self.embed(ids)
        for block in self.blocks:
            h = block(h)
        return self.heads["cls"](self.out(h))


def test_named_modules_children_and_pytorch_state_dict_keys():
    em.random.seed(0)
    net = Net()
    names = [n for n, _ in net.named_modules()]
    assert names == ["", "embed", "blocks", "blocks.0", "blocks.0.fc", "blocks.0.norm",
                     "blocks.1", "blocks.1.fc", "blocks.1.norm", "heads", "heads.cls",
                     "heads.reg", "out", "out.0", "out.1", "out.2"]
    assert [n for n, _ in net.named_children()] == ["embed", "blocks", "heads", "out"]
    assert list(net.children())[1] is net.blocks
    keys = list(net.state_dict())
    assert keys == [
        "embed.weight",
        "blocks.0.scale", "blocks.0.fc.weight", "blocks.0.fc.bias", "blocks.0.norm.weight",
        "blocks.0.norm.bias", "blocks.0.norm.running_mean", "blocks.0.norm.running_var",
        "blocks.0.norm.num_batches_tracked",
        "blocks.1.scale", "blocks.1.fc.weight", "blocks.1.fc.bias", "blocks.1.norm.weight",
        "blocks.1.norm.bias", "blocks.1.norm.running_mean", "blocks.1.norm.running_var",
        "blocks.1.norm.num_batches_tracked",
        "heads.cls.weight", "heads.cls.bias", "heads.reg.weight", "heads.reg.bias"]
    # buffers are state, not parameters; a non-persistent buffer is not saved
    param_names = [n for n, _ in net.named_parameters()]
    assert "blocks.0.scale" not in param_names and "blocks.0.norm.running_mean" not in param_names
    assert "blocks.0.cache" in [n for n, _ in net.named_buffers()]
    assert "blocks.0.cache" not in keys
    assert net(em.tensor([1, 2, 3])).shape == (3, 3)


def test_state_dict_keys_match_pytorch_for_the_same_model():
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    tnet = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                               torch.nn.ModuleList([torch.nn.Linear(4, 4)]),
                               torch.nn.Embedding(5, 2))
    enet = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ModuleList([nn.Linear(4, 4)]),
                         nn.Embedding(5, 2))
    assert list(enet.state_dict()) == list(tnet.state_dict())
    # and a PyTorch state_dict loads (as NumPy arrays)
    enet.load_state_dict({k: v.numpy() for k, v in tnet.state_dict().items()})
    for (k, a), b in zip(enet.state_dict().items(), tnet.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)


def test_train_eval_are_recursive_and_return_self():
    net = Net()
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    assert net.blocks[1].train() is net.blocks[1]
    assert net.blocks[1].norm.training and not net.blocks[0].norm.training
    net.train()
    assert all(m.training for m in net.modules())
    with pytest.raises(em.ArgumentError, match="bool"):
        net.train("no")


def test_load_state_dict_strict_missing_unexpected_and_shape_errors():
    em.random.seed(0)
    a, b = Net(), Net()
    assert not np.array_equal(a.embed.weight.numpy(), b.embed.weight.numpy())
    weight = b.embed.weight
    result = b.load_state_dict(a.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert b.embed.weight is weight  # loaded in place: an optimizer still holds it
    for (k, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        np.testing.assert_array_equal(x.numpy(), y.numpy(), err_msg=k)

    sd = a.state_dict()
    del sd["heads.reg.bias"]
    sd["extra.weight"] = em.zeros(2)
    with pytest.raises(em.ArgumentError, match=r"missing key\(s\): 'heads.reg.bias'.*"
                                               r"unexpected key\(s\): 'extra.weight'"):
        b.load_state_dict(sd)
    result = b.load_state_dict(sd, strict=False)
    assert result == (["heads.reg.bias"], ["extra.weight"])
    assert result.missing_keys == ["heads.reg.bias"]

    sd = a.state_dict()
    sd["heads.cls.weight"] = em.zeros((3, 5))
    before = b.embed.weight.numpy().copy()
    with pytest.raises(em.ShapeError, match=r"'heads.cls.weight'.*\(3, 5\).*\(3, 4\)"):
        b.load_state_dict(sd, strict=False)
    np.testing.assert_array_equal(b.embed.weight.numpy(), before)  # nothing half-loaded


def test_load_state_dict_casts_dtype_and_keeps_integer_buffers():
    bn = nn.BatchNorm1d(3)
    sd = {k: v.numpy().astype(np.float64) if v.dtype.kind == "f" else v.numpy() + 7
          for k, v in nn.BatchNorm1d(3).state_dict().items()}
    bn.load_state_dict(sd)
    assert bn.running_mean.dtype == em.float32
    assert bn.num_batches_tracked.dtype == em.int64 and bn.num_batches_tracked.item() == 7


def test_apply_requires_grad_zero_grad_and_to():
    em.random.seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "Linear", "Sequential"]  # children first, as PyTorch
    net.apply(lambda m: nn.init.zeros_(m.bias) if isinstance(m, nn.Linear) else None)
    assert all(not lin.bias.numpy().any() for lin in net)

    net(em.ones((2, 3))).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())

    assert net.requires_grad_(False) is net
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()

    weight = net[0].weight
    net.to(em.float64)
    assert net[0].weight is weight and weight.dtype == em.float64
    assert net(em.ones((2, 3), dtype=em.float64)).dtype == em.float64
    bn = nn.BatchNorm1d(2).to("float64")
    assert bn.running_mean.dtype == em.float64 and bn.num_batches_tracked.dtype == em.int64


def test_register_buffer_checks():
    m = nn.Module()
    with pytest.raises(em.ArgumentError, match="without '.'"):
        m.register_buffer("a.b", em.zeros(1))
    with pytest.raises(em.ArgumentError, match="Tensor"):
        m.register_buffer("a", [1, 2])
    m.register_buffer("a", None)
    assert m.state_dict() == OrderedDict()


def test_containers():
    em.random.seed(0)
    seq = nn.Sequential(OrderedDict(fc=nn.Linear(2, 3), act=nn.ReLU()))
    assert list(seq.state_dict()) == ["fc.weight", "fc.bias"]
    assert isinstance(seq[0], nn.Linear) and len(seq) == 2
    assert isinstance(seq[:1], nn.Sequential) and list(seq[:1].state_dict()) == ["fc.weight",
                                                                                 "fc.bias"]
    seq.append(nn.Linear(3, 1))
    assert list(seq.state_dict())[-1] == "2.bias"

    layers = nn.ModuleList()
    layers.append(nn.Linear(2, 2)).extend([nn.Tanh(), nn.Linear(2, 2)])
    assert [n for n, _ in layers.named_parameters()] == ["0.weight", "0.bias", "2.weight",
                                                         "2.bias"]
    assert len(layers) == 3 and isinstance(layers[1], nn.Tanh)
    with pytest.raises(em.ArgumentError, match="must be a Module"):
        layers.append(em.zeros(2))
    with pytest.raises(NotImplementedError, match="iterate"):
        layers(em.zeros(2))

    heads = nn.ModuleDict({"a": nn.Linear(2, 1)})
    heads["b"] = nn.Identity()
    assert list(heads) == ["a", "b"] and "a" in heads and len(heads) == 2
    with pytest.raises(KeyError, match="'c'.*\\['a', 'b'\\]"):
        heads["c"]
    # a parameter shared by two modules is listed once
    shared = nn.Linear(2, 2)
    assert len(nn.ModuleList([shared, shared]).parameters()) == 2


def test_repr_shows_the_tree():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert "(0): Linear(2, 3, bias=True)" in text and "(1): ReLU()" in text


# --- Embedding --------------------------------------------------------------------------
def test_embedding_values_gradient_and_padding():
    em.random.seed(0)
    emb = nn.Embedding(6, 3, padding_idx=2)
    table = emb.weight.numpy().copy()
    assert not table[2].any()  # the padding row starts at zero
    ids = np.array([[0, 2, 5], [2, 5, 5]])
    out = emb(em.tensor(ids))
    assert_close(out, table[ids])
    (out * em.tensor(np.arange(18.0, dtype=np.float32).reshape(2, 3, 3))).sum().backward()
    want = np.zeros_like(table)
    np.add.at(want, ids, np.arange(18.0, dtype=np.float32).reshape(2, 3, 3))
    want[2] = 0  # no gradient into the padding row
    assert_close(emb.weight.grad, want)


def test_embedding_gradient_against_finite_differences():
    ids = em.tensor([[1, 0, 1], [3, 1, 2]])

    def lookup(weight):
        emb = nn.Embedding(4, 2, dtype=em.float64)
        emb.weight = weight  # the input itself, so that its gradient is checked
        return emb(ids) ** 2

    check_grad(lookup, np.random.default_rng(0).standard_normal((4, 2)))


def test_embedding_matches_torch():
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    emb = nn.Embedding(5, 3, padding_idx=0)
    temb = torch.nn.Embedding(5, 3, padding_idx=0)
    with torch.no_grad():
        temb.weight.copy_(torch.tensor(emb.weight.numpy()))
    ids = np.array([[0, 1, 4], [4, 4, 0]])
    w = np.random.default_rng(0).standard_normal((2, 3, 3)).astype(np.float32)
    (emb(em.tensor(ids)) * em.tensor(w)).sum().backward()
    (temb(torch.tensor(ids)) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(emb.weight.grad.numpy(), temb.weight.grad.numpy(), rtol=1e-6)


def test_embedding_eager_and_jit_agree():
    em.random.seed(0)
    emb = nn.Embedding(7, 4, padding_idx=1)

    def step(ids):
        emb.zero_grad()
        loss = (emb(ids) ** 2).sum()
        loss.backward()
        return loss, emb.weight.grad

    ids = em.tensor([[1, 3, 6], [0, 1, 3]])
    loss_e, grad_e = step(ids)
    grad_e = grad_e.numpy().copy()
    loss_j, grad_j = em.jit(step, on_break="error")(ids)
    assert loss_j.dtype == loss_e.dtype and grad_j.dtype == em.float32
    assert_close(loss_j, loss_e.numpy())
    assert_close(grad_j, grad_e)


def test_embedding_errors():
    emb = nn.Embedding(4, 2)
    expect_error(em.DTypeError, lambda: emb(em.ones(3)), op="Embedding", mentions=["integer"])
    # The bounds check is an op (it runs under jit too): the error names it and Embedding.
    expect_error(em.IndexingError, lambda: emb(em.tensor([0, 4])), op="check_labels",
                 mentions=["Embedding", "index 4"])
    with pytest.raises(em.IndexingError, match="padding_idx 9"):
        nn.Embedding(4, 2, padding_idx=9)


# --- Flatten, Identity --------------------------------------------------------------------
def test_flatten_and_identity():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    assert_close(nn.Flatten()(em.tensor(x)), x.reshape(2, 12))
    assert_close(nn.Flatten(0, 1)(em.tensor(x)), x.reshape(6, 4))
    assert_close(nn.Flatten(-2)(em.tensor(x)), x.reshape(2, 12))
    t = em.tensor(x)
    assert nn.Identity(5, key=1)(t) is t
    with pytest.raises(em.IndexingError, match="Flatten"):
        nn.Flatten(2, 1)(t)
    f = em.jit(lambda t: nn.Flatten()(t) * 2)
    assert_close(f(t), x.reshape(2, 12) * 2)


def test_deepcopy_gives_independent_parameters_and_a_watched_tree():
    import copy

    em.random.seed(0)
    net = Net()
    twin = copy.deepcopy(net)
    assert twin.embed.weight is not net.embed.weight
    assert isinstance(twin.embed.weight, nn.Parameter) and twin.embed.weight.requires_grad
    np.testing.assert_array_equal(twin.embed.weight.numpy(), net.embed.weight.numpy())
    twin.blocks[1].norm.eval()  # the copy's own summary changes, not the original's
    assert "0" in twin._training_modes and "0" not in net._training_modes
    assert nn.Parameter(np.ones(2)).requires_grad
