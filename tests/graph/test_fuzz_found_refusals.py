"""Which failure a refused backward through a jitted call raises: eager's walk raises the
first failure it meets, and an op that fails on its values (the inverse of a singular
matrix in slogdet's backward) can come before the node that refuses an overwritten value. Each test names the fuzz seed and
program it comes from, minimized by hand."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz.check import assert_agrees

import execmode as em
from execmode.errors import ArgumentValueError, BackwardError

# x + x of ones: v0 @ v0.T is singular, and slogdet's backward inverts it
_ONES = "em.ones((3, 3), dtype=em.float32, requires_grad=True)"


def _det_then_overwrite(x):
    # slogdet's backward (the inverse of v0 @ v0.T, singular here) comes before matmul's
    # in eager's walk; matmul's refuses because v0 was overwritten after it read v0.
    v0 = x + x
    v1 = em.linalg.slogdet(v0 @ v0.T).logabsdet
    v0[...] = v1
    return v0.T


def test_an_op_failing_before_the_refusing_node_raises_first():
    # 20261221-2293: eager raised det's SVD failure (ArgumentValueError); the jitted
    # call checked the overwritten value before running anything and raised matmul's
    # BackwardError. (det's gradient at an inf matrix is NaN now, as PyTorch's: the
    # failing op here is slogdet's inverse of a singular matrix.)
    assert_agrees(f"""
import execmode as em

# --- setup ---
# --- function ---
def f(x):
    v0 = x + x
    v1 = em.linalg.slogdet(v0 @ v0.T).logabsdet
    v0[...] = v1
    return v0.T

F = em.jit(f)
# --- call 1 ---
out1 = F({_ONES})
# --- call 2 ---
(out1 * out1).sum().backward()
out2 = F({_ONES})
""")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn", [_det_then_overwrite, em.jit(_det_then_overwrite)],
                         ids=["eager", "jit"])
def test_the_failure_and_the_refusal_in_eager_order(fn):
    ones = em.ones((3, 3), dtype=em.float32, requires_grad=True)
    with pytest.raises(ArgumentValueError, match="linalg_inv"):
        (fn(ones) ** 2).sum().backward()
    # An invertible v0 @ v0.T: slogdet's backward runs, and matmul's node refuses (the
    # same message).
    x = em.tensor(np.eye(3, dtype=np.float32) + np.arange(9.0, dtype=np.float32).reshape(3, 3) / 9,
                  requires_grad=True)
    with pytest.raises(BackwardError, match="backward through matmul.*overwritten"):
        (fn(x) ** 2).sum().backward()
    assert x.grad is None


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_only_the_refused_output_runs_what_comes_before_its_refusal():
    # Two outputs, one refused (its way reads the overwritten v0): a backward through the
    # other runs; through the refused one, slogdet's failure comes first.
    def f(x):
        v0 = x + x
        v1 = em.linalg.slogdet(v0 @ v0.T).logabsdet
        v0[...] = v1
        return v0.T, x * 3.0

    for fn in (f, em.jit(f)):
        ones = em.ones((3, 3), dtype=em.float32, requires_grad=True)
        refused, fine = fn(ones)
        fine.sum().backward()
        assert np.all(ones.grad.numpy() == 3.0)
        with pytest.raises(ArgumentValueError, match="linalg_inv"):
            refused.sum().backward()
