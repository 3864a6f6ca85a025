"""module.train() / module.eval() under em.jit: the flag is read in Python while tracing,
so a change must retrace (a guard), never replay a graph traced in the other mode."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode import nn


class Halve(nn.Module):
    """Halves its input while training (a stand-in for Dropout's scaling)."""

    def forward(self, x):
        return x * 0.5 if self.training else x


class Deep(nn.Module):
    """Halve sits five attributes below the root: deeper than the guards walk."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(2, 2),
                                                   nn.ModuleDict({"act": Halve()}))])

    def forward(self, x):
        for block in self.blocks:
            x = block[1]["act"](block[0](x))
        return x


def _flat():
    return nn.Sequential(nn.Linear(2, 2), Halve())


@pytest.mark.parametrize("make", [_flat, Deep], ids=["flat", "deep"])
def test_jit_sees_train_and_eval_of_the_root(make):
    em.random.seed(0)
    model = make()
    x = em.ones((3, 2))
    f = em.jit(lambda x: model(x))
    trained = f(x).numpy()
    np.testing.assert_allclose(trained, model(x).numpy())
    model.eval()
    np.testing.assert_allclose(f(x).numpy(), model(x).numpy())
    assert not np.allclose(f(x).numpy(), trained)
    assert "training" in f.retraces[-1].reason
    model.train()
    np.testing.assert_allclose(f(x).numpy(), trained)


@pytest.mark.parametrize("make", [_flat, Deep], ids=["flat", "deep"])
def test_jit_sees_a_submodule_switched_alone(make):
    em.random.seed(0)
    model = make()
    x = em.ones((3, 2))
    f = em.jit(lambda x: model(x))
    f(x)
    halve = next(m for m in model.modules() if isinstance(m, Halve))
    halve.eval()
    np.testing.assert_allclose(f(x).numpy(), model(x).numpy())
    halve.training = True  # a plain assignment, as PyTorch users sometimes write
    np.testing.assert_allclose(f(x).numpy(), model(x).numpy())


def test_jit_sees_the_mode_of_a_module_passed_as_an_argument():
    em.random.seed(0)
    model = Deep()
    x = em.ones((3, 2))
    f = em.jit(lambda m, x: m(x))
    f(model, x)
    model.blocks[0][1]["act"].eval()
    np.testing.assert_allclose(f(model, x).numpy(), model(x).numpy())


def test_a_module_added_later_is_watched_too():
    em.random.seed(0)
    model = nn.ModuleList([nn.Linear(2, 2)])
    late = Halve()
    model.append(nn.Sequential(nn.Identity(), nn.Sequential(late)))
    x = em.ones((1, 2))
    f = em.jit(lambda x: model[1](model[0](x)))
    f(x)
    late.eval()
    np.testing.assert_allclose(f(x).numpy(), model[1](model[0](x)).numpy())


def test_a_number_deep_in_a_model_is_watched():
    # Guards walk a module's whole subtree (Module._em_guard_deep): a layer's scale three
    # containers down changed between calls retraces instead of replaying the old value.
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = 2.0

        def forward(self, x):
            return x * self.k

    model = nn.ModuleList([nn.Sequential(nn.Identity(), nn.Sequential(nn.Identity(), Scale()))])
    f = em.jit(lambda x: model[0](x))
    np.testing.assert_array_equal(f(em.ones(2)).numpy(), [2.0, 2.0])
    model[0][1][1].k = 3.0
    np.testing.assert_array_equal(f(em.ones(2)).numpy(), [3.0, 3.0])
    assert "k: 2.0 -> 3.0" in f.retraces[-1].reason
