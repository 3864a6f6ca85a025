"""``torch.compile(model)`` then ``loss.backward()`` outside, the way PyTorch 2 programs
train: execmode.torch against real PyTorch (twins, where torch is installed), same
weights, same batches, same gradients and updates."""

from __future__ import annotations

import numpy as np
import pytest
from pytorch_twins import torch_or_skip

import execmode.torch as etorch


def _model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))


@pytest.mark.slow  # torch.compile's dynamo traces the twin model (seconds)
def test_a_compiled_model_trains_as_pytorchs_compiled_model():
    torch = torch_or_skip()
    torch.manual_seed(0)
    theirs, ours = _model(torch), _model(etorch)
    ours.load_state_dict({k: etorch.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    # aot_eager: PyTorch's AOTAutograd (a joint forward/backward graph, partitioned) with
    # no code generation, which would take a C++ compile per graph.
    their_step = torch.compile(theirs, backend="aot_eager")
    our_step = etorch.compile(ours)
    opts = (torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9),
            etorch.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9))
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.standard_normal((8, 6)).astype(np.float32)
        y = rng.integers(0, 4, 8)
        losses = []
        for lib, step, opt in ((torch, their_step, opts[0]), (etorch, our_step, opts[1])):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(step(lib.tensor(x)), lib.tensor(y))
            loss.backward()
            losses.append(loss.item())
            grads = [p.grad.numpy().copy() for p in (theirs if lib is torch else ours)
                     .parameters()]
            opt.step()
            if lib is torch:
                want = grads
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)
        for got, expected in zip(grads, want, strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
    for p, q in zip(ours.parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)
    assert our_step.concrete_functions[0].joint.graphs  # the compiled backward ran
