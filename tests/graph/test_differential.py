"""Eager and graph agree: random programs run eagerly and under em.jit, with every pass and
with each pass alone, forward and backward."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from programs import programs, run, tolerance

import execmode as em
from execmode.passes.manager import ALL


def _check(program, arrays, passes=None, backward=False):
    def inputs():
        return [em.tensor(a, requires_grad=backward) for a in arrays]

    expected = run(program, inputs(), backward)
    jitted = em.jit(lambda *xs: run(program, list(xs), backward), passes=passes)
    got = jitted(*inputs())
    again = jitted(*inputs())  # the replayed plan, not the trace
    tol = tolerance(arrays[0].dtype)
    if backward:
        (e_out, e_grads), (g_out, g_grads) = expected, again
        np.testing.assert_allclose(g_out.numpy(), e_out.numpy(), **tol)
        for eg, gg in zip(e_grads, g_grads):
            if eg is None:
                assert gg is None
            else:
                np.testing.assert_allclose(gg.numpy(), eg.numpy(), **tol)
        return
    for out in (got, again):
        assert out.shape == expected.shape and out.dtype == expected.dtype
        np.testing.assert_allclose(out.numpy(), expected.numpy(), **tol)


@given(programs())
def test_random_programs_all_passes(case):
    _check(*case)


@given(programs(max_len=6))
def test_random_programs_with_backward(case):
    _check(*case, backward=True)


@pytest.mark.parametrize("name", ALL)
@given(case=programs(max_len=6))
@settings(max_examples=10)
def test_random_programs_each_pass_alone(name, case):
    _check(*case, passes=[name])


@given(programs(max_len=6))
@settings(max_examples=10)
def test_random_programs_no_passes(case):
    _check(*case, passes=[])
