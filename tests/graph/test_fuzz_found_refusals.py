"""Which failure a refused backward through a jitted call raises: eager's walk raises the
first failure it meets, and an op that fails on its values (an SVD of an inf) can come
before the node that refuses an overwritten value. Each test names the fuzz seed and
program it comes from, minimized by hand."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz.check import assert_agrees

import execmode as em
from execmode.errors import ArgumentValueError, BackwardError

_HUGE = "em.full((3, 3), 1e38, dtype=em.float32, requires_grad=True)"


def _det_then_overwrite(x):
    # det's backward (an SVD of v0 @ v0.T, inf here) comes before matmul's in eager's
    # walk; matmul's refuses because v0 was overwritten after it read v0.
    v0 = x + x
    v1 = em.linalg.det(v0 @ v0.T + 4.0 * em.eye(v0.shape[0], dtype=v0.dtype))
    v0[...] = v1
    return v0.T


def test_an_op_failing_before_the_refusing_node_raises_first():
    # 20261221-2293: eager raised det's SVD failure (ArgumentValueError); the jitted
    # call checked the overwritten value before running anything and raised matmul's
    # BackwardError.
    assert_agrees(f"""
import execmode as em

# --- setup ---
# --- function ---
def f(x):
    v0 = x + x
    v1 = em.linalg.det(v0 @ v0.T + 4.0 * em.eye(v0.shape[0], dtype=v0.dtype))
    v0[...] = v1
    return v0.T

F = em.jit(f)
# --- call 1 ---
out1 = F({_HUGE})
# --- call 2 ---
(out1 * out1).sum().backward()
out2 = F({_HUGE})
""")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("fn", [_det_then_overwrite, em.jit(_det_then_overwrite)],
                         ids=["eager", "jit"])
def test_the_failure_and_the_refusal_in_eager_order(fn):
    huge = em.full((3, 3), 1e38, dtype=em.float32, requires_grad=True)
    with pytest.raises(ArgumentValueError, match="linalg_svd"):
        (fn(huge) ** 2).sum().backward()
    # Finite values: det's backward runs, and matmul's node refuses (the same message).
    x = em.tensor(np.arange(9.0, dtype=np.float32).reshape(3, 3) / 9, requires_grad=True)
    with pytest.raises(BackwardError, match="backward through matmul.*overwritten"):
        (fn(x) ** 2).sum().backward()
    assert x.grad is None


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_only_the_refused_output_runs_what_comes_before_its_refusal():
    # Two outputs, one refused (its way reads the overwritten v0): a backward through the
    # other runs; through the refused one, det's failure comes first.
    def f(x):
        v0 = x + x
        v1 = em.linalg.det(v0 @ v0.T + 4.0 * em.eye(v0.shape[0], dtype=v0.dtype))
        v0[...] = v1
        return v0.T, x * 3.0

    for fn in (f, em.jit(f)):
        huge = em.full((3, 3), 1e38, dtype=em.float32, requires_grad=True)
        refused, fine = fn(huge)
        fine.sum().backward()
        assert np.all(huge.grad.numpy() == 3.0)
        with pytest.raises(ArgumentValueError, match="linalg_svd"):
            refused.sum().backward()
