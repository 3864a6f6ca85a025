"""RNN, LSTM, GRU and their cells: PyTorch's parameter names, shapes and gate order (a
torch state_dict loads and gives torch's outputs and gradients), every layout (batch_first,
unbatched, num_layers, bidirectional), eager against em.jit, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from pytorch_twins import torch_or_skip

import execmode as em
from execmode import nn

RNG = np.random.default_rng(33)
SEQ = RNG.standard_normal((5, 3, 4)).astype(np.float32)  # (L, N, H_in)


def _h(shape):
    return RNG.standard_normal(shape).astype(np.float32)


CASES = [
    ("RNN", dict(input_size=4, hidden_size=6), SEQ, None),
    ("RNN relu 2 layers bidirectional", dict(
        input_size=4, hidden_size=6, num_layers=2, nonlinearity="relu", bidirectional=True),
     SEQ, _h((4, 3, 6))),
    ("LSTM 2 layers batch_first", dict(input_size=4, hidden_size=6, num_layers=2,
                                       batch_first=True), SEQ, None),
    ("LSTM unbatched bidirectional", dict(input_size=4, hidden_size=6, bidirectional=True),
     SEQ[:, 0], (_h((2, 6)), _h((2, 6)))),
    ("GRU 2 layers bidirectional no bias", dict(input_size=4, hidden_size=6, num_layers=2,
                                                bidirectional=True, bias=False), SEQ, None),
    ("GRU batch_first with h0", dict(input_size=4, hidden_size=6, batch_first=True), SEQ,
     _h((1, 5, 6))),
    ("RNNCell", dict(input_size=4, hidden_size=6), SEQ[0], _h((3, 6))),
    ("LSTMCell", dict(input_size=4, hidden_size=6), SEQ[0], (_h((3, 6)), _h((3, 6)))),
    ("GRUCell unbatched", dict(input_size=4, hidden_size=6), SEQ[0, 0], None),
]


def _class(name):
    return name.split()[0]


def _leaves(value):
    if isinstance(value, tuple | list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _weighted_sum(outputs, lib_tensor):
    """sum_k (k + 1) * sum(output_k): every output (and h_n, c_n) gets a gradient."""
    return sum((out * (k + 1)).sum() for k, out in enumerate(_leaves(outputs)))


def _as(lib_tensor, hx):
    if hx is None:
        return None
    if isinstance(hx, tuple):
        return tuple(lib_tensor(h) for h in hx)
    return lib_tensor(hx)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_recurrent_layers_match_torch(case):
    torch = torch_or_skip()
    name, kwargs, x, hx = case
    torch.manual_seed(0)
    theirs = getattr(torch.nn, _class(name))(**kwargs)
    ours = getattr(nn, _class(name))(**kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [tuple(p.shape) for p in ours.parameters()] == \
        [tuple(p.shape) for p in theirs.parameters()]
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    tx, ex = torch.tensor(x, requires_grad=True), em.tensor(x, requires_grad=True)
    want, got = theirs(tx, _as(torch.tensor, hx)), ours(ex, _as(em.tensor, hx))
    _weighted_sum(want, torch.tensor).backward()
    _weighted_sum(got, em.tensor).backward()
    for a, b in zip(_leaves(got), _leaves(want), strict=True):
        assert a.shape == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (pn, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=pn)


@pytest.mark.slow  # compiles an RNN's training step per cell kind
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_a_recurrent_training_step_agrees_under_jit(cls):
    def run(jit):
        em.random.seed(0)
        rnn = getattr(nn, cls)(4, 6, num_layers=2, batch_first=True, dropout=0.25)
        head = nn.Linear(6, 2)
        opt = em.optim.Adam(rnn.parameters() + head.parameters(), lr=0.05)
        x = em.tensor(np.swapaxes(SEQ, 0, 1))
        y = em.tensor(np.array([0, 1, 1]))

        def step(x, y):
            out, _ = rnn(x)
            loss = nn.functional.cross_entropy(head(out[:, -1]), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        f = em.jit(step, on_break="error") if jit else step
        return [f(x, y).item() for _ in range(3)], f

    eager, _ = run(False)
    jitted, f = run(True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)
    assert f.trace_count == 1


def test_recurrent_errors_and_repr():
    lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True)
    assert repr(lstm) == "LSTM(4, 6, num_layers=2, batch_first=True)"
    assert len(lstm.all_weights) == 2 and len(lstm.all_weights[0]) == 4
    with pytest.raises(em.ShapeError, match="H_in = 4"):
        lstm(em.ones((2, 3, 5)))
    with pytest.raises(em.ShapeError, match="h_0"):
        lstm(em.ones((2, 3, 4)), (em.zeros((1, 2, 6)), em.zeros((2, 2, 6))))
    with pytest.raises(em.ArgumentError, match="pair"):
        lstm(em.ones((2, 3, 4)), em.zeros((2, 2, 6)))
    with pytest.raises(em.ArgumentError, match="proj_size"):
        nn.LSTM(4, 6, proj_size=2)
    with pytest.raises(em.ArgumentError, match="nonlinearity"):
        nn.RNN(4, 6, nonlinearity="sigmoid")
    with pytest.raises(em.ShapeError, match="input"):
        nn.GRUCell(4, 6)(em.ones((2, 5)))
