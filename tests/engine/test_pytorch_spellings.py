"""PyTorch's spellings beside the Array API's: keywords, tensor methods, aliases, and the
hints an unknown attribute gives (issue 14)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, expect_error
from pytorch_twins import assert_jit_agrees, torch_or_skip

import execmode as em
from execmode.nn import functional as NF

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7 - 1


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "var", "std", "any",
                                  "all", "logsumexp"])
def test_dim_and_keepdim_mean_axis_and_keepdims(name):
    fn = getattr(em, name)
    x = em.tensor(A)
    # var/std in PyTorch's spelling take PyTorch's default too: N - 1.
    extra = {"correction": 1} if name in ("var", "std") else {}
    want = fn(x, axis=1, keepdims=True, **extra)
    got = fn(x, dim=1, keepdim=True)
    got = got.values if isinstance(got, tuple) else got
    assert_close(got, want.numpy())
    method = getattr(x, name, None)
    if method is not None:
        got = method(dim=1, keepdim=True)
        assert_close(got.values if isinstance(got, tuple) else got, want.numpy())
    expect_error(em.ArgumentError, lambda: fn(x, axis=1, dim=1), op=name, mentions=("dim=",))


def test_dim_on_shape_functions_and_softmax():
    x = em.tensor(A)
    assert em.concat([x, x], dim=2).shape == (2, 3, 8)
    assert em.cat([x, x], 1).shape == (2, 6, 4)
    assert em.stack([x, x], dim=1).shape == (2, 2, 3, 4)
    assert em.squeeze(em.ones(2, 1), dim=1).shape == (2,)
    assert x.unsqueeze(dim=0).shape == (1, 2, 3, 4)
    assert em.expand_dims(x, dim=-1).shape == (2, 3, 4, 1)
    assert em.flatten(x, start_dim=1).shape == (2, 12)
    assert x.flatten(start_dim=0, end_dim=1).shape == (6, 4)
    assert_close(NF.softmax(x, dim=1), NF.softmax(x, axis=1).numpy())
    assert_close(NF.log_softmax(x, dim=0), NF.log_softmax(x, 0).numpy())
    assert_close(x.softmax(1), NF.softmax(x, axis=1).numpy())
    assert_close(em.argmax(x, dim=2), np.argmax(A, axis=2))
    expect_error(em.ArgumentError, lambda: NF.softmax(x, 1, dim=1), op="softmax",
                 mentions=("dim=",))
    expect_error(em.ArgumentError, lambda: em.squeeze(x, dimension=1), op="squeeze",
                 mentions=("dimension",))


def test_tensor_methods_pytorch_users_type():
    x = em.tensor(A)
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert x.size == 24 and x.numel() == 24 and x.dim() == 3  # x.size stays the count
    with pytest.raises(em.ArgumentError, match="out of range"):
        x.size(3)
    assert x.float().dtype == em.float32 and x.double().dtype == em.float64
    assert x.long().dtype == em.int64 and x.int().dtype == em.int32
    assert x.bool().dtype == em.bool
    assert x.view(6, 4).shape == (6, 4) and x.view(-1).shape == (24,)
    assert x.view((4, 6)).shape == (4, 6)
    assert x.permute(2, 0, 1).shape == (4, 2, 3)
    assert x.transpose(0, 2).shape == (4, 3, 2)
    m = em.tensor(A[0])
    # Two axes swap them, as PyTorch, for a matrix too (NumPy's transpose(0, 1) would not).
    assert_close(m.transpose(0, 1), A[0].T)
    assert_close(m.transpose(1, 0), A[0].T)
    assert_close(m.t(), A[0].T)
    assert x.contiguous() is x
    assert x.unsqueeze(1).shape == (2, 1, 3, 4) and x[:, :1].squeeze(1).shape == (2, 4)
    assert_close(x.clamp(min=0.0), np.maximum(A, 0))
    assert_close(x.masked_fill(x > 0, 0.0), np.where(A > 0, 0, A))
    assert x[:, :1].expand(-1, 3, 4).shape == (2, 3, 4)
    assert x.repeat(1, 2, 1).shape == (2, 6, 4)
    assert_close(x.cumsum(dim=2), np.cumsum(A, axis=2))
    assert_close(x.sort(dim=1).values, np.sort(A, axis=1))
    values, indices = x.sort()  # the method is PyTorch's: always the pair
    assert_close(values, np.sort(A, axis=-1)) and indices.dtype == em.int64
    assert_close(x.where(x > 0, 0.0), np.where(A > 0, A, 0))
    assert x.topk(2).indices.shape == (2, 3, 2)
    assert_close(m.tril(), np.tril(A[0]))
    assert [p.shape for p in x.split(2, dim=2)] == [(2, 3, 2), (2, 3, 2)]
    assert len(x.chunk(3, 1)) == 3
    assert_close(x.gather(2, em.zeros(2, 3, 1, dtype=em.int64)), A[:, :, :1])


def test_size_call_and_methods_work_under_jit():
    def fn(x):
        b, t, c = x.size()
        y = x.view(b * t, c).float().t()
        return y.contiguous() * x.size(1) + x.numel(), x.transpose(0, 1).long()

    assert_jit_agrees(fn, em.tensor(A))


def test_var_and_std_correction_and_unbiased():
    x = em.tensor(A)
    assert_close(em.var(x, axis=1), np.var(A, axis=1))  # Array API default: correction=0
    assert_close(em.var(x, axis=1, correction=1), np.var(A, axis=1, ddof=1))
    assert_close(em.var(x, axis=1, unbiased=True), np.var(A, axis=1, ddof=1))
    assert_close(em.std(x, dim=2, unbiased=False), np.std(A, axis=2))
    assert_close(x.std(correction=1), np.std(A, ddof=1))
    expect_error(em.ArgumentError, lambda: em.var(x, correction=1, unbiased=True), op="var",
                 mentions=("unbiased=",))


def test_unknown_module_attributes_say_what_to_use():
    with pytest.raises(AttributeError, match="em.bmm: use em.matmul, which batches"):
        em.bmm  # noqa: B018
    with pytest.raises(AttributeError, match=r"em.concatenate: use em.concat"):
        em.concatenate  # noqa: B018
    with pytest.raises(AttributeError, match="execmode has no attribute 'foo'"):
        em.foo  # noqa: B018
    assert not hasattr(em, "foo")
    assert em.cat is not None and em.clamp is not None  # spellings that exist


def test_unknown_tensor_attributes_say_what_to_use():
    x = em.ones(2)
    with pytest.raises(AttributeError, match=r"Tensor.neg: use -x"):
        x.neg  # noqa: B018
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute 'foo'"):
        x.foo  # noqa: B018
    assert getattr(x, "foo", None) is None and not hasattr(x, "__deepcopy_hook__")


def test_every_hint_names_a_spelling_that_does_not_exist():
    # A hint for a name that exists would never be shown: keep the tables honest.
    from execmode.aliases import MODULE_HINTS, TENSOR_HINTS

    assert not [n for n in MODULE_HINTS if n in dir(em)]
    from execmode.tensor_methods import HintAttribute

    assert not [n for n in TENSOR_HINTS if not isinstance(vars(em.Tensor)[n], HintAttribute)]


def test_activation_methods_call_the_nn_functions():
    # x.relu() and x.sigmoid() once looked their function up in em.functional, which has
    # neither (they are em.nn.functional's): AttributeError on the first call.
    x = em.tensor(A)
    assert_close(x.relu(), np.maximum(A, 0))
    assert_close(x.sigmoid(), 1 / (1 + np.exp(-A)), rtol=1e-6)
    assert_close(x.softmax(-1), NF.softmax(x, -1).numpy())


def test_every_installed_method_reaches_a_function():
    # Each table entry is looked up when the methods are installed, so a misspelt one
    # fails at import; this checks the tables cover what Tensor answers to.
    from execmode.tensor_methods import methods

    table = methods()
    for name in ("__getitem__", "__matmul__", "__radd__", "sum", "reshape", "grad", "detach",
                 "float", "unsqueeze", "backward", "relu"):
        assert name in table and name in vars(em.Tensor)


def test_pytorch_twin_of_the_spellings():
    torch = torch_or_skip()
    t = torch.tensor(A)
    x = em.tensor(A)
    assert x.size() == tuple(t.size()) and x.size(1) == t.size(1)
    assert x.dim() == t.dim() and x.numel() == t.numel()
    for ours, theirs in [
        (x.transpose(0, 2), t.transpose(0, 2)),
        (x[0].t(), t[0].t()),
        (x.sum(dim=1, keepdim=True), t.sum(dim=1, keepdim=True)),
        (x.max(dim=2).values, t.max(dim=2).values),
        (x.max(dim=2).indices, t.max(dim=2).indices),
        (x.mean(dim=(0, 2)), t.mean(dim=(0, 2))),
        (x.var(dim=1, unbiased=True), t.var(dim=1, unbiased=True)),
        (x.repeat(2, 1, 1), t.repeat(2, 1, 1)),
        (x.long(), t.long()),
        (em.cat([x, x], dim=1), torch.cat([t, t], dim=1)),
    ]:
        assert_close(ours, theirs.numpy())


@pytest.mark.parametrize("space, name, says", [
    ("nn", "Bilinear", "torch.nn.Bilinear is not supported"),
    ("nn.functional", "fold", "torch.nn.functional.fold is not supported"),
    ("optim", "SparseAdam", "torch.optim.SparseAdam is not supported"),
])
def test_a_pytorch_name_nn_and_optim_lack_says_so(space, name, says):
    import importlib

    module = importlib.import_module(f"execmode.{space}")
    with pytest.raises(AttributeError, match=says):
        getattr(module, name)


def test_a_typo_in_nn_still_gets_pythons_suggestion():
    with pytest.raises(AttributeError) as caught:
        em.nn.Linearr  # noqa: B018
    # What Python's "Did you mean: 'Linear'?" is computed from when it prints the error.
    assert caught.value.obj is em.nn and caught.value.name == "Linearr"
