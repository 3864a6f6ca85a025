"""A probe of common PyTorch spellings (issue 32): each case is one ordinary use of a name
(a function, a Tensor method, an nn layer, an F function, an optimizer or scheduler,
utils.data), written once against a ``torch``-like module, run on ``execmode.torch`` and on
PyTorch from the same small inputs, and compared: values (to a tolerance), shapes and
dtypes. Random draws compare shape and dtype only; layers copy PyTorch's weights first.

The list is what PyTorch tutorials, examples and the programs in docs/pytorch.md
("Programs tried") write, taken area by area, not chosen by what execmode has.

    python tests/torch_front/spellings_probe.py        # the table of failures and a count

tests/torch_front/test_spellings_probe.py runs every case as a test.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import numpy as np

RNG = np.random.default_rng(20)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((2, 3, 4)).astype(np.float32)
C = RNG.standard_normal((4, 5)).astype(np.float32)
V = RNG.standard_normal(6).astype(np.float32)
P = (np.abs(A) + 0.1).astype(np.float32)
IMG = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
SEQ = RNG.standard_normal((2, 5, 4)).astype(np.float32)
LABELS = np.array([0, 3, 1], dtype=np.int64)
IDX = np.array([2, 0, 1, 2], dtype=np.int64)
MASK = A > 0

CASES: list[tuple[str, Callable]] = []


def case(name: str):
    def add(fn):
        CASES.append((name, fn))
        return fn
    return add


def cases(pairs):
    for name, fn in pairs:
        CASES.append((name, fn))


def a(t):
    return t.tensor(A)


def b(t):
    return t.tensor(B)


def c(t):
    return t.tensor(C)


def v(t):
    return t.tensor(V)


def pos(t):
    return t.tensor(P)


def img(t):
    return t.tensor(IMG)


def seq(t):
    return t.tensor(SEQ)


def labels(t):
    return t.tensor(LABELS)


def shape_of(x):
    """Random draws: compare what does not depend on the generator."""
    return ("shape", tuple(x.shape), str(x.dtype).replace("torch.", ""))


# --- creation ------------------------------------------------------------------------------
cases([
    ("torch.tensor(list)", lambda t: t.tensor([[1.0, 2.0], [3.0, 4.0]])),
    ("torch.tensor(ints) is int64", lambda t: t.tensor([1, 2, 3])),
    ("torch.tensor(dtype=)", lambda t: t.tensor([1, 2], dtype=t.float32)),
    ("torch.zeros", lambda t: t.zeros(2, 3)),
    ("torch.zeros(tuple, dtype)", lambda t: t.zeros((2, 3), dtype=t.long)),
    ("torch.ones", lambda t: t.ones(3)),
    ("torch.full", lambda t: t.full((2, 2), 7.0)),
    ("torch.arange(n)", lambda t: t.arange(5)),
    ("torch.arange(a, b, step)", lambda t: t.arange(1.0, 2.0, 0.25)),
    ("torch.linspace", lambda t: t.linspace(0, 1, 5)),
    ("torch.eye", lambda t: t.eye(3)),
    ("torch.zeros_like", lambda t: t.zeros_like(a(t))),
    ("torch.ones_like", lambda t: t.ones_like(a(t))),
    ("torch.full_like", lambda t: t.full_like(a(t), 2.5)),
    ("torch.empty(shape)", lambda t: shape_of(t.empty(2, 3))),
    ("torch.rand", lambda t: shape_of(t.rand(2, 3))),
    ("torch.randn", lambda t: shape_of(t.randn(4))),
    ("torch.randint", lambda t: shape_of(t.randint(0, 10, (3,)))),
    ("torch.randperm", lambda t: sorted(t.randperm(5).tolist())),
    ("torch.randn_like", lambda t: shape_of(t.randn_like(a(t)))),
    ("torch.from_numpy", lambda t: t.from_numpy(A.copy())),
    ("torch.as_tensor", lambda t: t.as_tensor(A)),
    ("torch.Tensor(list)", lambda t: t.Tensor([1, 2])),
    ("torch.LongTensor", lambda t: t.LongTensor([1, 2])),
    ("torch.FloatTensor", lambda t: t.FloatTensor([1, 2])),
    ("torch.manual_seed", lambda t: (t.manual_seed(0), shape_of(t.rand(2)))[1]),
    ("torch.tril_indices", lambda t: t.tril_indices(3, 3)),
    ("torch.meshgrid(indexing=ij)", lambda t: t.meshgrid(t.arange(2), t.arange(3),
                                                         indexing="ij")),
])

# --- functions -----------------------------------------------------------------------------
UNARY = ["exp", "log", "sqrt", "abs", "sin", "cos", "tanh", "sigmoid", "relu", "floor",
         "ceil", "round", "sign", "neg", "reciprocal", "rsqrt", "erf", "log1p", "expm1",
         "square", "sinh", "cosh", "atan", "trunc", "log2"]
for _name in UNARY:
    CASES.append((f"torch.{_name}", lambda t, n=_name: getattr(t, n)(pos(t))))

cases([
    ("torch.clamp(min, max)", lambda t: t.clamp(a(t), min=-0.5, max=0.5)),
    ("torch.clamp(min=)", lambda t: t.clamp(a(t), min=0)),
    ("torch.where(cond, x, y)", lambda t: t.where(a(t) > 0, a(t), t.zeros_like(a(t)))),
    ("torch.where(cond, x, scalar)", lambda t: t.where(a(t) > 0, a(t), 0.0)),
    ("torch.maximum", lambda t: t.maximum(a(t), pos(t) - 1)),
    ("torch.minimum", lambda t: t.minimum(a(t), pos(t) - 1)),
    ("torch.max(x)", lambda t: t.max(a(t))),
    ("torch.max(x, dim)", lambda t: tuple(t.max(a(t), 1))),
    ("torch.max(x, dim=, keepdim=)", lambda t: tuple(t.max(a(t), dim=0, keepdim=True))),
    ("torch.max(x, y)", lambda t: t.max(a(t), pos(t))),
    ("torch.min(x, dim)", lambda t: tuple(t.min(a(t), 1))),
    ("torch.argmax(x, dim)", lambda t: t.argmax(a(t), dim=1)),
    ("torch.argmax(x)", lambda t: t.argmax(a(t))),
    ("torch.argmin", lambda t: t.argmin(a(t), 0)),
    ("torch.sum(x)", lambda t: t.sum(a(t))),
    ("torch.sum(x, dim, keepdim)", lambda t: t.sum(b(t), dim=1, keepdim=True)),
    ("torch.sum(x, (d0, d1))", lambda t: t.sum(b(t), (0, 2))),
    ("torch.mean(dim=)", lambda t: t.mean(a(t), dim=-1)),
    ("torch.std", lambda t: t.std(a(t))),
    ("torch.std(dim, unbiased=False)", lambda t: t.std(a(t), 1, unbiased=False)),
    ("torch.var(dim)", lambda t: t.var(a(t), 0)),
    ("torch.var(correction=0)", lambda t: t.var(a(t), dim=1, correction=0)),
    ("torch.prod", lambda t: t.prod(pos(t), 1)),
    ("torch.cumsum", lambda t: t.cumsum(a(t), dim=1)),
    ("torch.cumprod", lambda t: t.cumprod(pos(t), dim=0)),
    ("torch.logsumexp", lambda t: t.logsumexp(a(t), dim=1)),
    ("torch.softmax(x, dim)", lambda t: t.softmax(a(t), dim=-1)),
    ("torch.log_softmax", lambda t: t.log_softmax(a(t), 1)),
    ("torch.matmul", lambda t: t.matmul(a(t), c(t))),
    ("torch.mm", lambda t: t.mm(a(t), c(t))),
    ("torch.bmm", lambda t: t.bmm(b(t), t.tensor(np.stack([C, C])))),
    ("x @ y", lambda t: a(t) @ c(t)),
    ("torch.einsum", lambda t: t.einsum("ij,jk->ik", a(t), c(t))),
    ("torch.einsum batched", lambda t: t.einsum("bij,bkj->bik", b(t), b(t))),
    ("torch.transpose(x, 1, 2)", lambda t: t.transpose(b(t), 1, 2)),
    ("torch.permute", lambda t: t.permute(b(t), (2, 0, 1))),
    ("torch.reshape", lambda t: t.reshape(b(t), (6, -1))),
    ("torch.flatten(x, 1)", lambda t: t.flatten(b(t), 1)),
    ("torch.squeeze", lambda t: t.squeeze(t.zeros(1, 3, 1))),
    ("torch.unsqueeze", lambda t: t.unsqueeze(a(t), 0)),
    ("torch.cat(dim)", lambda t: t.cat([a(t), a(t)], dim=1)),
    ("torch.stack", lambda t: t.stack([a(t), pos(t)], dim=0)),
    ("torch.split(size)", lambda t: tuple(t.split(v(t), 4))),
    ("torch.split(sizes)", lambda t: tuple(t.split(v(t), [1, 5]))),
    ("torch.chunk", lambda t: tuple(t.chunk(v(t), 3))),
    ("torch.topk", lambda t: tuple(t.topk(v(t), 3))),
    ("torch.sort", lambda t: tuple(t.sort(v(t), descending=True))),
    ("torch.argsort", lambda t: t.argsort(v(t))),
    ("torch.gather", lambda t: t.gather(a(t), 1, t.tensor([[0], [2], [3]]))),
    ("torch.index_select", lambda t: t.index_select(a(t), 1, t.tensor(IDX))),
    ("torch.masked_fill", lambda t: t.masked_fill(a(t), t.tensor(MASK), -1.0)),
    ("torch.tril", lambda t: t.tril(a(t))),
    ("torch.triu(diagonal=1)", lambda t: t.triu(t.ones(3, 3), diagonal=1)),
    ("torch.outer", lambda t: t.outer(v(t), v(t))),
    ("torch.norm", lambda t: t.norm(a(t))),
    ("torch.linalg.norm(dim)", lambda t: t.linalg.norm(a(t), dim=1)),
    ("torch.linalg.inv", lambda t: t.linalg.inv(t.eye(3) * 2 + 0.1)),
    ("torch.allclose", lambda t: t.allclose(a(t), a(t) + 1e-9)),
    ("torch.isnan", lambda t: t.isnan(t.tensor([1.0, float("nan")]))),
    ("torch.isinf", lambda t: t.isinf(t.tensor([1.0, float("inf")]))),
    ("torch.isfinite", lambda t: t.isfinite(t.tensor([1.0, float("inf")]))),
    ("torch.any", lambda t: t.any(a(t) > 2)),
    ("torch.all", lambda t: t.all(pos(t) > 0)),
    ("torch.eq", lambda t: t.eq(labels(t), 1)),
    ("torch.ne", lambda t: t.ne(labels(t), 1)),
    ("torch.gt / lt / ge / le", lambda t: (t.gt(a(t), 0), t.lt(a(t), 0), t.ge(a(t), 0),
                                           t.le(a(t), 0))),
    ("torch.logical_and/or/not", lambda t: (t.logical_and(a(t) > 0, pos(t) > 1),
                                            t.logical_or(a(t) > 0, pos(t) > 1),
                                            t.logical_not(a(t) > 0))),
    ("torch.pow", lambda t: t.pow(pos(t), 2)),
    ("torch.fmod", lambda t: t.fmod(a(t), 0.3)),
    ("torch.remainder", lambda t: t.remainder(a(t), 0.3)),
    ("torch.lerp", lambda t: t.lerp(a(t), pos(t), 0.3)),
    ("torch.addmm", lambda t: t.addmm(t.ones(3, 5), a(t), c(t))),
    ("torch.baddbmm", lambda t: t.baddbmm(t.zeros(2, 3, 3), b(t), t.transpose(b(t), 1, 2))),
    ("torch.repeat_interleave", lambda t: t.repeat_interleave(labels(t), 2)),
    ("torch.roll", lambda t: t.roll(v(t), 2)),
    ("torch.flip", lambda t: t.flip(a(t), [0])),
    ("torch.diag", lambda t: t.diag(v(t))),
    ("torch.trace", lambda t: t.trace(t.eye(3) * 2)),
    ("torch.cdist", lambda t: t.cdist(a(t), pos(t))),
    ("torch.unique", lambda t: t.unique(t.tensor([3, 1, 3, 2]))),
    ("torch.bincount", lambda t: t.bincount(t.tensor([0, 2, 2, 3]))),
    ("torch.clone", lambda t: t.clone(a(t))),
    ("torch.numel", lambda t: t.numel(a(t))),
    ("torch.count_nonzero", lambda t: t.count_nonzero(a(t) > 0)),
    ("torch.nonzero", lambda t: t.nonzero(t.tensor([0, 1, 0, 2]))),
    ("torch.broadcast_to", lambda t: t.broadcast_to(v(t), (2, 6))),
    ("torch.narrow", lambda t: t.narrow(a(t), 1, 1, 2)),
    ("torch.tensordot", lambda t: t.tensordot(a(t), c(t), dims=1)),
    ("torch.amax / amin", lambda t: (t.amax(a(t), dim=1), t.amin(a(t), dim=0))),
    ("torch.nan_to_num", lambda t: t.nan_to_num(t.tensor([float("nan"), 1.0]), nan=0.0)),
    ("torch.masked_select", lambda t: t.masked_select(a(t), t.tensor(MASK))),
    ("torch.diff", lambda t: t.diff(v(t))),
    ("torch.searchsorted", lambda t: t.searchsorted(t.tensor([1.0, 2.0, 3.0]),
                                                    t.tensor([2.5, 0.0]))),
    ("torch.cosine_similarity", lambda t: t.cosine_similarity(a(t), pos(t), dim=1)),
    ("torch.dist", lambda t: t.dist(a(t), pos(t))),
    ("torch.atan2", lambda t: t.atan2(a(t), pos(t))),
    ("torch.floor_divide", lambda t: t.floor_divide(t.tensor([7, -7]), 2)),
    ("torch.div(rounding_mode=)", lambda t: t.div(t.tensor([7, -7]), 2, rounding_mode="floor")),
    ("torch.mul / add(alpha=)", lambda t: (t.mul(a(t), 2), t.add(a(t), pos(t), alpha=2))),
    ("torch.sub", lambda t: t.sub(a(t), 1)),
    ("torch.cross_entropy via F in torch.nn.functional", lambda t: t.nn.functional.cross_entropy(
        a(t), labels(t))),
    ("torch.no_grad", lambda t: _no_grad(t)),
    ("torch.is_tensor", lambda t: t.is_tensor(a(t))),
    ("torch.float32 / long names", lambda t: (str(t.float32).replace("torch.", ""),
                                              str(t.long).replace("torch.", ""))),
    ("torch.get_default_dtype", lambda t: str(t.get_default_dtype()).replace("torch.", "")),
    ("torch.finfo(float32).eps", lambda t: float(t.finfo(t.float32).eps)),
    ("torch.cuda.is_available", lambda t: t.cuda.is_available()),
    ("torch.device('cpu')", lambda t: str(t.device("cpu"))),
])


def _no_grad(t):
    x = t.ones(2, requires_grad=True)
    with t.no_grad():
        y = x * 2
    return y.requires_grad


# --- Tensor methods ------------------------------------------------------------------------
cases([
    ("x.view", lambda t: b(t).view(6, 4)),
    ("x.view(-1)", lambda t: a(t).view(-1)),
    ("x.view_as", lambda t: v(t).view_as(t.zeros(2, 3))),
    ("x.reshape", lambda t: a(t).reshape(2, 6)),
    ("x.size()", lambda t: tuple(b(t).size())),
    ("x.size(dim)", lambda t: b(t).size(1)),
    ("x.shape", lambda t: tuple(b(t).shape)),
    ("x.dim()", lambda t: b(t).dim()),
    ("x.ndim", lambda t: b(t).ndim),
    ("x.numel()", lambda t: b(t).numel()),
    ("x.nelement()", lambda t: b(t).nelement()),
    ("x.t()", lambda t: a(t).t()),
    ("x.T", lambda t: a(t).T),
    ("x.transpose", lambda t: b(t).transpose(0, 2)),
    ("x.permute(*dims)", lambda t: b(t).permute(1, 0, 2)),
    ("x.contiguous()", lambda t: a(t).t().contiguous()),
    ("x.is_contiguous()", lambda t: a(t).is_contiguous()),
    ("x.float() / long() / int() / double() / bool()",
     lambda t: (labels(t).float(), a(t).long(), a(t).int(), a(t).double(), a(t).bool())),
    ("x.to(dtype)", lambda t: labels(t).to(t.float32)),
    ("x.to('cpu')", lambda t: a(t).to("cpu")),
    ("x.type(dtype)", lambda t: labels(t).type(t.float32)),
    ("x.item()", lambda t: a(t)[0, 0].item()),
    ("x.tolist()", lambda t: labels(t).tolist()),
    ("x.numpy()", lambda t: a(t).numpy()),
    ("x.clone().detach()", lambda t: a(t).clone().detach()),
    ("x.sum(dim)", lambda t: a(t).sum(1)),
    ("x.sum(dim=, keepdim=)", lambda t: a(t).sum(dim=0, keepdim=True)),
    ("x.mean()", lambda t: a(t).mean()),
    ("x.max(dim)", lambda t: tuple(a(t).max(1))),
    ("x.max()", lambda t: a(t).max()),
    ("x.max(dim)[0]", lambda t: a(t).max(dim=1)[0]),
    ("x.max(dim).values", lambda t: a(t).max(dim=1).values),
    ("x.argmax(dim)", lambda t: a(t).argmax(1)),
    ("x.softmax(dim)", lambda t: a(t).softmax(-1)),
    ("x.log_softmax(dim)", lambda t: a(t).log_softmax(dim=1)),
    ("x.exp() / log() / sqrt() / abs()", lambda t: (pos(t).exp(), pos(t).log(), pos(t).sqrt(),
                                                    a(t).abs())),
    ("x.sigmoid() / tanh() / relu()", lambda t: (a(t).sigmoid(), a(t).tanh(), a(t).relu())),
    ("x.masked_fill", lambda t: a(t).masked_fill(t.tensor(MASK), float("-inf"))),
    ("x.masked_fill_", lambda t: a(t).masked_fill_(t.tensor(MASK), 0.0)),
    ("x.fill_", lambda t: a(t).fill_(3.0)),
    ("x.zero_", lambda t: a(t).zero_()),
    ("x.add_ / mul_ / sub_ / div_", lambda t: a(t).add_(1).mul_(2).sub_(0.5).div_(4)),
    ("x.add_(y, alpha=)", lambda t: a(t).add_(pos(t), alpha=-0.1)),
    ("x.copy_", lambda t: t.zeros(3, 4).copy_(a(t))),
    ("x.unsqueeze / squeeze", lambda t: (a(t).unsqueeze(1), t.zeros(1, 3).squeeze(0))),
    ("x.squeeze()", lambda t: t.zeros(1, 3, 1).squeeze()),
    ("x.expand", lambda t: v(t).unsqueeze(0).expand(3, -1)),
    ("x.expand_as", lambda t: t.ones(3, 1).expand_as(a(t))),
    ("x.repeat", lambda t: a(t).repeat(2, 1)),
    ("x.flatten()", lambda t: b(t).flatten()),
    ("x.split", lambda t: tuple(a(t).split(2, dim=1))),
    ("x.chunk", lambda t: tuple(a(t).chunk(2, dim=1))),
    ("x.gather", lambda t: a(t).gather(1, labels(t).unsqueeze(1))),
    ("x.scatter_", lambda t: t.zeros(3, 4).scatter_(1, labels(t).unsqueeze(1), 1.0)),
    ("x.scatter_add_", lambda t: t.zeros(4).scatter_add_(0, t.tensor(IDX), t.ones(4))),
    ("x.index_select", lambda t: a(t).index_select(0, t.tensor([2, 0]))),
    ("x.index_add_", lambda t: t.zeros(3, 2).index_add_(0, t.tensor([0, 2, 0]),
                                                         t.ones(3, 2))),
    ("x.topk", lambda t: tuple(a(t).topk(2, dim=1))),
    ("x.sort(dim)", lambda t: tuple(a(t).sort(dim=0))),
    ("x.clamp / clamp_", lambda t: (a(t).clamp(-0.1, 0.1), a(t).clamp_(min=0.0))),
    ("x.pow / ** ", lambda t: (pos(t).pow(3), pos(t) ** 0.5, 2 ** a(t))),
    ("x.eq / ne / ==", lambda t: (labels(t).eq(1), labels(t).ne(1), labels(t) == 3)),
    ("x.all() / any()", lambda t: ((a(t) > -9).all(), (a(t) > 2).any())),
    ("x.nonzero()", lambda t: t.tensor([0, 3, 0, 1]).nonzero()),
    ("x.cumsum(dim)", lambda t: a(t).cumsum(0)),
    ("x.norm()", lambda t: a(t).norm()),
    ("x.norm(p, dim)", lambda t: a(t).norm(p=1, dim=1)),
    ("x.std(dim) / var(dim)", lambda t: (a(t).std(1), a(t).var(0))),
    ("x.new_zeros / new_ones / new_full",
     lambda t: (a(t).new_zeros(2), a(t).new_ones((2, 1)), labels(t).new_full((2,), 7))),
    ("x.new_tensor", lambda t: a(t).new_tensor([1, 2])),
    ("x.new_empty", lambda t: shape_of(a(t).new_empty(2, 2))),
    ("x.type_as", lambda t: labels(t).type_as(a(t))),
    ("x.requires_grad_()", lambda t: a(t).requires_grad_().requires_grad),
    ("x.data", lambda t: a(t).data),
    ("x.device.type", lambda t: a(t).device.type),
    ("x.dtype", lambda t: str(labels(t).dtype).replace("torch.", "")),
    ("x.unbind", lambda t: tuple(a(t).unbind(0))),
    ("x.narrow", lambda t: a(t).narrow(0, 1, 2)),
    ("x.roll(shifts, dims)", lambda t: a(t).roll(1, dims=1)),
    ("x.flip(dims)", lambda t: a(t).flip(1)),
    ("x.tril / triu", lambda t: (a(t).tril(), a(t).triu(1))),
    ("x.matmul / mm / bmm", lambda t: (a(t).matmul(c(t)), a(t).mm(c(t)),
                                       b(t).bmm(b(t).transpose(1, 2)))),
    ("x.argsort(dim, descending)", lambda t: a(t).argsort(dim=1, descending=True)),
    ("x.unique()", lambda t: t.tensor([2, 1, 2]).unique()),
    ("x.masked_select", lambda t: a(t).masked_select(t.tensor(MASK))),
    ("x.detach().cpu().numpy()", lambda t: a(t).detach().cpu().numpy()),
    ("x.cpu() / x.cuda() absent on CPU", lambda t: a(t).cpu()),
    ("x[mask] = value", lambda t: _setitem_mask(t)),
    ("x[:, idx] indexing", lambda t: a(t)[:, t.tensor([0, 2])]),
    ("x[None, ..., 1:]", lambda t: a(t)[None, ..., 1:]),
    ("x[idx_tensor] (embedding-style)", lambda t: a(t)[labels(t) % 3]),
    ("x.float().mean() on ints", lambda t: labels(t).float().mean()),
    ("x.sum().backward()", lambda t: _grad_of(t, lambda x: (x * x).sum())),
    ("x.grad after mean().backward()", lambda t: _grad_of(t, lambda x: x.exp().mean())),
    ("x.retain_grad()", lambda t: _retain_grad(t)),
    ("x.register_hook absent -> grad", lambda t: _grad_of(t, lambda x: x.tanh().sum())),
    ("x.lerp_ / addcmul_ / addcdiv_",
     lambda t: a(t).lerp_(pos(t), 0.5).addcmul_(a(t), pos(t), value=0.1)
     .addcdiv_(a(t), pos(t), value=0.1)),
    ("x.clamp_min / clamp_max", lambda t: (a(t).clamp_min(0), a(t).clamp_max(0))),
    ("x.sign() / floor() / round()", lambda t: (a(t).sign(), a(t).floor(), a(t).round())),
    ("x.prod(dim)", lambda t: pos(t).prod(0)),
    ("x.logsumexp(dim)", lambda t: a(t).logsumexp(1)),
    ("x.amax(dim)", lambda t: a(t).amax(1)),
    ("x.isnan().any()", lambda t: a(t).isnan().any()),
    ("x.element_size()", lambda t: a(t).element_size()),
    ("x.dim() == 2 and x.is_floating_point()", lambda t: a(t).is_floating_point()),
])


def _setitem_mask(t):
    x = a(t)
    x[x > 0] = 0.0
    return x


def _grad_of(t, f):
    x = a(t).requires_grad_()
    f(x).backward()
    return x.grad


def _retain_grad(t):
    x = a(t).requires_grad_()
    y = x * 2
    y.retain_grad()
    y.sum().backward()
    return y.grad


# --- torch.nn.functional -------------------------------------------------------------------
ACTIVATIONS = ["relu", "gelu", "silu", "elu", "leaky_relu", "softplus", "sigmoid", "tanh",
               "hardtanh", "mish", "logsigmoid", "relu6", "selu", "softsign", "hardswish"]
for _name in ACTIVATIONS:
    CASES.append((f"F.{_name}", lambda t, n=_name: getattr(t.nn.functional, n)(a(t))))

cases([
    ("F.gelu(approximate='tanh')", lambda t: t.nn.functional.gelu(a(t), approximate="tanh")),
    ("F.softmax(dim)", lambda t: t.nn.functional.softmax(a(t), dim=-1)),
    ("F.log_softmax", lambda t: t.nn.functional.log_softmax(a(t), dim=1)),
    ("F.cross_entropy", lambda t: t.nn.functional.cross_entropy(a(t), labels(t))),
    ("F.cross_entropy(ignore_index)", lambda t: t.nn.functional.cross_entropy(
        a(t), t.tensor([0, -1, 2]), ignore_index=-1)),
    ("F.cross_entropy(label_smoothing)", lambda t: t.nn.functional.cross_entropy(
        a(t), labels(t), label_smoothing=0.1)),
    ("F.cross_entropy(reduction='none')", lambda t: t.nn.functional.cross_entropy(
        a(t), labels(t), reduction="none")),
    ("F.cross_entropy on (B, C, T)", lambda t: t.nn.functional.cross_entropy(
        b(t), t.tensor([[0, 1, 2, 0], [2, 2, 1, 0]]))),
    ("F.nll_loss", lambda t: t.nn.functional.nll_loss(a(t).log_softmax(1), labels(t))),
    ("F.mse_loss", lambda t: t.nn.functional.mse_loss(a(t), pos(t))),
    ("F.l1_loss", lambda t: t.nn.functional.l1_loss(a(t), pos(t))),
    ("F.smooth_l1_loss", lambda t: t.nn.functional.smooth_l1_loss(a(t), pos(t))),
    ("F.huber_loss", lambda t: t.nn.functional.huber_loss(a(t), pos(t), delta=0.5)),
    ("F.binary_cross_entropy", lambda t: t.nn.functional.binary_cross_entropy(
        a(t).sigmoid(), (pos(t) > 0.7).float())),
    ("F.binary_cross_entropy_with_logits", lambda t: t.nn.functional
     .binary_cross_entropy_with_logits(a(t), (pos(t) > 0.7).float())),
    ("F.kl_div(batchmean)", lambda t: t.nn.functional.kl_div(
        a(t).log_softmax(1), pos(t).softmax(1), reduction="batchmean")),
    ("F.linear", lambda t: t.nn.functional.linear(a(t), c(t).t(), t.ones(5))),
    ("F.conv1d", lambda t: t.nn.functional.conv1d(seq(t).transpose(1, 2),
                                                   t.tensor(B[:, :, :3].repeat(2, 1)[:, :4]),
                                                   padding=1)),
    ("F.conv2d", lambda t: t.nn.functional.conv2d(img(t), t.ones(4, 3, 3, 3) * 0.1,
                                                   stride=1, padding=1)),
    ("F.max_pool2d", lambda t: t.nn.functional.max_pool2d(img(t), 2)),
    ("F.avg_pool2d", lambda t: t.nn.functional.avg_pool2d(img(t), kernel_size=2, stride=2)),
    ("F.adaptive_avg_pool2d", lambda t: t.nn.functional.adaptive_avg_pool2d(img(t), (1, 1))),
    ("F.dropout(training=False)", lambda t: t.nn.functional.dropout(a(t), 0.5,
                                                                    training=False)),
    ("F.dropout (shape)", lambda t: shape_of(t.nn.functional.dropout(a(t), 0.5))),
    ("F.embedding", lambda t: t.nn.functional.embedding(labels(t), c(t))),
    ("F.layer_norm", lambda t: t.nn.functional.layer_norm(a(t), (4,))),
    ("F.group_norm", lambda t: t.nn.functional.group_norm(img(t), 1)),
    ("F.normalize", lambda t: t.nn.functional.normalize(a(t), dim=1)),
    ("F.pad", lambda t: t.nn.functional.pad(a(t), (1, 2))),
    ("F.one_hot", lambda t: t.nn.functional.one_hot(labels(t), 4)),
    ("F.cosine_similarity", lambda t: t.nn.functional.cosine_similarity(a(t), pos(t))),
    ("F.scaled_dot_product_attention(is_causal)", lambda t: t.nn.functional
     .scaled_dot_product_attention(b(t), b(t), b(t), is_causal=True)),
    ("F.glu", lambda t: t.nn.functional.glu(a(t), dim=-1)),
    ("F.interpolate(nearest)", lambda t: t.nn.functional.interpolate(img(t), scale_factor=2,
                                                                      mode="nearest")),
    ("F.pairwise_distance", lambda t: t.nn.functional.pairwise_distance(a(t), pos(t))),
    ("F.softmin", lambda t: t.nn.functional.softmin(a(t), dim=1)),
    ("F.unfold", lambda t: t.nn.functional.unfold(img(t), kernel_size=2)),
])


# --- nn layers (PyTorch's weights copied into execmode's) -----------------------------------
def layer(name, build, x, train=False):
    def run(t):
        if t.__name__ == "torch":
            t.manual_seed(0)
            mod = build(t)
            LAYER_WEIGHTS[name] = {k: w.detach().numpy().copy()
                                   for k, w in mod.state_dict().items()}
        else:
            mod = build(t)
            mod.load_state_dict({k: t.tensor(w) for k, w in LAYER_WEIGHTS[name].items()})
        mod.train(train)
        out = mod(*x(t)) if isinstance(x(t), tuple) else mod(x(t))
        if isinstance(out, tuple) and isinstance(out[1], tuple):  # LSTM's (h, c)
            out = (out[0], *out[1])
        return out
    CASES.append((name, run))


LAYER_WEIGHTS: dict[str, dict] = {}

layer("nn.Linear", lambda t: t.nn.Linear(4, 5), a)
layer("nn.Linear(bias=False)", lambda t: t.nn.Linear(4, 2, bias=False), a)
layer("nn.Conv1d", lambda t: t.nn.Conv1d(4, 3, 3, padding=1), lambda t: seq(t).transpose(1, 2))
layer("nn.Conv2d", lambda t: t.nn.Conv2d(3, 4, 3, stride=2, padding=1), img)
layer("nn.ConvTranspose2d", lambda t: t.nn.ConvTranspose2d(3, 2, 2, stride=2), img)
layer("nn.BatchNorm1d (train)", lambda t: t.nn.BatchNorm1d(4), a, train=True)
layer("nn.BatchNorm2d (eval)", lambda t: t.nn.BatchNorm2d(3), img)
layer("nn.LayerNorm", lambda t: t.nn.LayerNorm(4), b)
layer("nn.GroupNorm", lambda t: t.nn.GroupNorm(1, 3), img)
layer("nn.Embedding", lambda t: t.nn.Embedding(5, 3), labels)
layer("nn.Dropout (eval)", lambda t: t.nn.Dropout(0.3), a)
layer("nn.ReLU / GELU / Tanh in nn.Sequential", lambda t: t.nn.Sequential(
    t.nn.Linear(4, 8), t.nn.ReLU(), t.nn.Linear(8, 8), t.nn.GELU(), t.nn.Tanh()), a)
layer("nn.Softmax(dim)", lambda t: t.nn.Softmax(dim=1), a)
layer("nn.Flatten", lambda t: t.nn.Flatten(), img)
layer("nn.MaxPool2d", lambda t: t.nn.MaxPool2d(2), img)
layer("nn.AvgPool2d", lambda t: t.nn.AvgPool2d(3, stride=1), img)
layer("nn.AdaptiveAvgPool2d", lambda t: t.nn.AdaptiveAvgPool2d((2, 2)), img)
layer("nn.LSTM(batch_first)", lambda t: t.nn.LSTM(4, 3, batch_first=True), seq)
layer("nn.GRU", lambda t: t.nn.GRU(4, 3, num_layers=2, batch_first=True), seq)
layer("nn.RNN", lambda t: t.nn.RNN(4, 3, batch_first=True), seq)
layer("nn.MultiheadAttention", lambda t: t.nn.MultiheadAttention(4, 2, batch_first=True),
      lambda t: (seq(t), seq(t), seq(t)))
layer("nn.TransformerEncoderLayer (eval)", lambda t: t.nn.TransformerEncoderLayer(
    4, 2, dim_feedforward=8, batch_first=True), seq)
layer("nn.Identity", lambda t: t.nn.Identity(), a)
layer("nn.Sigmoid / SiLU / LeakyReLU", lambda t: t.nn.Sequential(
    t.nn.Sigmoid(), t.nn.SiLU(), t.nn.LeakyReLU(0.2)), a)
layer("nn.CrossEntropyLoss", lambda t: t.nn.CrossEntropyLoss(), lambda t: (a(t), labels(t)))
layer("nn.MSELoss", lambda t: t.nn.MSELoss(), lambda t: (a(t), pos(t)))
layer("nn.BCEWithLogitsLoss", lambda t: t.nn.BCEWithLogitsLoss(),
      lambda t: (a(t), (pos(t) > 0.7).float()))
layer("nn.NLLLoss", lambda t: t.nn.NLLLoss(), lambda t: (a(t).log_softmax(1), labels(t)))
layer("nn.L1Loss", lambda t: t.nn.L1Loss(), lambda t: (a(t), pos(t)))


def _module_api(t):
    class Net(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = t.nn.Linear(4, 3)
            self.blocks = t.nn.ModuleList([t.nn.Linear(3, 3) for _ in range(2)])
            self.heads = t.nn.ModuleDict({"out": t.nn.Linear(3, 2)})
            self.register_buffer("scale", t.ones(1))

        def forward(self, x):
            x = self.fc(x)
            for blk in self.blocks:
                x = blk(x)
            return self.heads.out(x) * self.scale

    net = Net()
    return (sorted(k for k, _ in net.named_parameters()), sorted(net.state_dict()),
            sum(p.numel() for p in net.parameters()), len(list(net.modules())),
            [n for n, _ in net.named_children()], net.training, net.eval().training)


cases([
    ("nn.Module: named_parameters, state_dict, ModuleList, ModuleDict, register_buffer",
     _module_api),
    ("nn.Module.apply + nn.init.zeros_/ones_/constant_", lambda t: _apply_init(t)),
    ("nn.init.xavier_uniform_ / kaiming_normal_ / normal_ (shape)",
     lambda t: [shape_of(f(t.empty(3, 4))) for f in (
         t.nn.init.xavier_uniform_, t.nn.init.kaiming_normal_, t.nn.init.normal_)]),
    ("nn.utils.clip_grad_norm_", lambda t: _clip(t)),
    ("nn.Parameter", lambda t: t.nn.Parameter(a(t)).requires_grad),
    ("model.zero_grad()", lambda t: _zero_grad(t)),
    ("model.requires_grad_(False)", lambda t: [p.requires_grad for p in
                                               t.nn.Linear(2, 2).requires_grad_(False)
                                               .parameters()]),
    ("nn.Sequential indexing and len", lambda t: (len(t.nn.Sequential(t.nn.ReLU(),
                                                                      t.nn.Tanh())),
                                                  type(t.nn.Sequential(t.nn.ReLU(),
                                                                       t.nn.Tanh())[1])
                                                  .__name__)),
])


def _apply_init(t):
    net = t.nn.Sequential(t.nn.Linear(3, 2), t.nn.Linear(2, 2))

    def init(m):
        if isinstance(m, t.nn.Linear):
            t.nn.init.constant_(m.weight, 0.5)
            t.nn.init.zeros_(m.bias)

    net.apply(init)
    return net(t.ones(1, 3))


def _clip(t):
    w = t.tensor(A, requires_grad=True)
    (w * 10).sum().backward()
    total = t.nn.utils.clip_grad_norm_([w], max_norm=1.0)
    return total, w.grad


def _zero_grad(t):
    m = t.nn.Linear(2, 2)
    m(t.ones(1, 2)).sum().backward()
    m.zero_grad()
    return [p.grad is None for p in m.parameters()]


# --- optim and schedulers ------------------------------------------------------------------
def optimizer(name, build, steps=3):
    def run(t):
        w = t.tensor(A, requires_grad=True)
        opt = build(t, [w])
        for _ in range(steps):
            opt.zero_grad()
            ((w - 0.3) ** 2).sum().backward()
            opt.step()
        return w.detach()
    CASES.append((name, run))


optimizer("optim.SGD", lambda t, p: t.optim.SGD(p, lr=0.1))
optimizer("optim.SGD(momentum, nesterov, weight_decay)", lambda t, p: t.optim.SGD(
    p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2))
optimizer("optim.Adam", lambda t, p: t.optim.Adam(p, lr=1e-2))
optimizer("optim.Adam(betas, eps, amsgrad)", lambda t, p: t.optim.Adam(
    p, lr=1e-2, betas=(0.8, 0.9), eps=1e-6, amsgrad=True))
optimizer("optim.AdamW", lambda t, p: t.optim.AdamW(p, lr=1e-2, weight_decay=0.1))
optimizer("optim.RMSprop", lambda t, p: t.optim.RMSprop(p, lr=1e-2))
optimizer("optim.Adagrad", lambda t, p: t.optim.Adagrad(p, lr=0.1))
optimizer("optim.Adadelta", lambda t, p: t.optim.Adadelta(p, lr=1.0))
optimizer("optim param groups", lambda t, p: t.optim.SGD([{"params": p, "lr": 0.05}], lr=1.0))


def scheduler(name, build, steps=6):
    def run(t):
        w = t.tensor(A, requires_grad=True)
        opt = t.optim.SGD([w], lr=0.1)
        sched = build(t, opt)
        lrs = []
        for _ in range(steps):
            opt.step()
            sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        return lrs
    CASES.append((name, run))


scheduler("lr_scheduler.StepLR", lambda t, o: t.optim.lr_scheduler.StepLR(o, 2, gamma=0.5))
scheduler("lr_scheduler.MultiStepLR", lambda t, o: t.optim.lr_scheduler.MultiStepLR(
    o, [2, 4], 0.1))
scheduler("lr_scheduler.ExponentialLR", lambda t, o: t.optim.lr_scheduler.ExponentialLR(o, 0.9))
scheduler("lr_scheduler.CosineAnnealingLR", lambda t, o: t.optim.lr_scheduler
          .CosineAnnealingLR(o, T_max=6))
scheduler("lr_scheduler.OneCycleLR", lambda t, o: t.optim.lr_scheduler.OneCycleLR(
    o, max_lr=1.0, total_steps=10))
scheduler("lr_scheduler.LambdaLR", lambda t, o: t.optim.lr_scheduler.LambdaLR(
    o, lambda e: 1 / (e + 1)))
scheduler("lr_scheduler.LinearLR", lambda t, o: t.optim.lr_scheduler.LinearLR(
    o, start_factor=0.5, total_iters=4))
scheduler("lr_scheduler.SequentialLR", lambda t, o: t.optim.lr_scheduler.SequentialLR(
    o, [t.optim.lr_scheduler.LinearLR(o, 0.5, total_iters=2),
        t.optim.lr_scheduler.ExponentialLR(o, 0.9)], milestones=[2]))


def _plateau(t):
    w = t.tensor(A, requires_grad=True)
    opt = t.optim.SGD([w], lr=0.1)
    sched = t.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1, factor=0.5)
    lrs = []
    for loss in (1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5):
        sched.step(loss)
        lrs.append(opt.param_groups[0]["lr"])
    return lrs


def _opt_state_dict(t):
    w = t.tensor(A, requires_grad=True)
    opt = t.optim.Adam([w], lr=1e-2)
    w.sum().backward()
    opt.step()
    sd = opt.state_dict()
    return sorted(sd), sorted(sd["state"][0]), sd["param_groups"][0]["lr"]


cases([
    ("lr_scheduler.ReduceLROnPlateau", _plateau),
    ("optimizer.state_dict()", _opt_state_dict),
    ("scheduler.get_last_lr()", lambda t: t.optim.lr_scheduler.StepLR(
        t.optim.SGD([t.tensor(A, requires_grad=True)], lr=0.1), 1).get_last_lr()),
])


# --- utils.data ----------------------------------------------------------------------------
def _loader_batches(t, **kw):
    data = t.utils.data.TensorDataset(t.tensor(C), t.arange(4))
    return [tuple(batch) for batch in t.utils.data.DataLoader(data, batch_size=3, **kw)]


class _Squares:
    """A map-style Dataset (a class with __getitem__ and __len__)."""

    def __init__(self, t):
        self.t = t

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": self.t.tensor([float(i)]), "y": i * i}


cases([
    ("utils.data.TensorDataset", lambda t: tuple(t.utils.data.TensorDataset(
        t.tensor(C), t.arange(4))[1])),
    ("DataLoader(batch_size)", lambda t: _loader_batches(t)),
    ("DataLoader(drop_last)", lambda t: _loader_batches(t, drop_last=True)),
    ("DataLoader(shuffle) sizes", lambda t: [tuple(x.shape) for x, _ in _loader_batches(
        t, shuffle=True)]),
    ("DataLoader over a Dataset of dicts", lambda t: [
        (d["x"], d["y"]) for d in t.utils.data.DataLoader(_Squares(t), batch_size=2)]),
    ("len(DataLoader)", lambda t: len(t.utils.data.DataLoader(range(10), batch_size=4))),
    ("random_split lengths", lambda t: [len(s) for s in t.utils.data.random_split(
        range(10), [7, 3])]),
    ("Subset", lambda t: list(t.utils.data.Subset(range(10), [1, 5]))),
    ("ConcatDataset", lambda t: len(t.utils.data.ConcatDataset([range(3), range(4)]))),
    ("BatchSampler(SequentialSampler)", lambda t: list(t.utils.data.BatchSampler(
        t.utils.data.SequentialSampler(range(5)), batch_size=2, drop_last=False))),
    ("default_collate", lambda t: t.utils.data.default_collate([(1, 2.0), (3, 4.0)])),
])


# --- autograd ------------------------------------------------------------------------------
def _autograd_grad(t):
    x = t.tensor(A, requires_grad=True)
    (g,) = t.autograd.grad((x ** 2).sum(), x)
    return g


def _retain_graph(t):
    x = t.tensor(A, requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad


def _detach_and_no_grad_sum(t):
    x = t.tensor(A, requires_grad=True)
    y = x.detach() * 2
    return y.requires_grad, (x * 2).requires_grad


def _set_grad_enabled(t):
    x = t.tensor(A, requires_grad=True)
    with t.set_grad_enabled(False):
        y = x * 2
    return y.requires_grad


def _inference_mode(t):
    x = t.tensor(A, requires_grad=True)
    with t.inference_mode():
        y = x * 2
    return y.requires_grad


cases([
    ("torch.autograd.grad", _autograd_grad),
    ("backward(retain_graph=True) twice", _retain_graph),
    ("x.detach()", _detach_and_no_grad_sum),
    ("torch.set_grad_enabled", _set_grad_enabled),
    ("torch.inference_mode", _inference_mode),
    ("backward(gradient)", lambda t: _backward_with(t)),
])


def _backward_with(t):
    x = t.tensor(A, requires_grad=True)
    (x * 3).backward(t.ones(3, 4))
    return x.grad


# --- running and comparing -----------------------------------------------------------------
def to_plain(value):
    """A comparable form: arrays for tensors, tuples for sequences, numbers as they are."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        return np.asarray(value.detach().numpy())
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, tuple | list):
        return tuple(to_plain(x) for x in value)
    if hasattr(value, "_fields"):  # a named tuple
        return tuple(to_plain(x) for x in value)
    return value


def compare(got, want, path="result") -> str | None:
    """None when ``got`` (execmode) matches ``want`` (PyTorch), else what differs."""
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"{path}: {type(got).__name__}, PyTorch gives an array"
        if got.shape != want.shape:
            return f"{path}: shape {got.shape}, PyTorch {want.shape}"
        if got.dtype != want.dtype:
            return f"{path}: dtype {got.dtype}, PyTorch {want.dtype}"
        if want.dtype.kind in "fc":
            if not np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True):
                worst = np.nanmax(np.abs(got.astype(np.float64) - want))
                return f"{path}: values differ (max abs {worst:.3g})"
        elif not np.array_equal(got, want):
            return f"{path}: values {got.tolist()}, PyTorch {want.tolist()}"
        return None
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return f"{path}: {got!r:.60}, PyTorch {want!r:.60}"
        for i, (g, w) in enumerate(zip(got, want)):
            bad = compare(g, w, f"{path}[{i}]")
            if bad:
                return bad
        return None
    if isinstance(want, float) and isinstance(got, int | float):
        return None if math.isclose(got, want, rel_tol=1e-5, abs_tol=1e-6) or (
            math.isnan(got) and math.isnan(want)) else f"{path}: {got}, PyTorch {want}"
    if isinstance(want, bool | int | str | type(None)):
        return None if got == want and type(got) is type(want) or (
            isinstance(want, int) and not isinstance(want, bool) and got == want
            and isinstance(got, int)) else f"{path}: {got!r}, PyTorch {want!r}"
    if isinstance(want, dict):
        return compare(tuple(sorted(got.items())), tuple(sorted(want.items())), path)
    return None if got == want else f"{path}: {got!r:.60}, PyTorch {want!r:.60}"


def check(fn, ours, theirs) -> str | None:
    """Run one case on both; None when they agree, else the first difference or error."""
    want = to_plain(fn(theirs))
    try:
        got = to_plain(fn(ours))
    except Exception as exc:  # noqa: BLE001 - the probe reports any failure
        first = str(exc).split("\n")[0]
        return f"{type(exc).__name__}: {first[:160]}"
    return compare(got, want)


def main() -> int:
    import torch as theirs

    import execmode.torch as ours

    failures = []
    for name, fn in CASES:
        bad = check(fn, ours, theirs)
        if bad:
            failures.append((name, bad))
    for name, bad in failures:
        print(f"FAIL {name}: {bad}")
    print(f"{len(CASES)} spellings tried, {len(failures)} failing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
