"""em.jit keeps eager aliasing: in-place writes to arguments and captures, tensors passed
twice, returned inputs and copies, and tensors that escape a trace. Each test once gave a
different answer under em.jit than eagerly (or crashed, or left state behind)."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em


def _both(fn, make_args):
    """fn eagerly and jitted (first call and a replay), on fresh arguments each time."""
    eager = fn(*make_args())
    jitted = em.jit(fn)
    return eager, jitted(*make_args()), jitted(*make_args())


def _np(x):
    return x.numpy() if isinstance(x, em.Tensor) else np.asarray(x)


def test_a_returned_copy_is_not_changed_by_a_later_assign_to_its_source():
    def f(x, y):
        t = x.clone()
        em.assign(x, y)
        return t * 1.0, x + 0.0

    def args():
        return em.tensor([1.0, 2.0]), em.tensor([5.0, 6.0])

    for got in _both(f, args):
        np.testing.assert_allclose(_np(got[0]), [1.0, 2.0])
        np.testing.assert_allclose(_np(got[1]), [5.0, 6.0])


def test_swapping_two_arguments_in_place():
    def swap(a, b):
        t = a.clone()
        em.assign(a, b)
        em.assign(b, t)
        return a.sum()

    for jit in (False, True):
        f = em.jit(swap) if jit else swap
        for _ in range(2):
            a, b = em.tensor([1.0, 2.0]), em.tensor([5.0, 6.0])
            f(a, b)
            np.testing.assert_allclose(a.numpy(), [5.0, 6.0])
            np.testing.assert_allclose(b.numpy(), [1.0, 2.0])


def test_returning_an_input_next_to_computed_outputs():
    def f(x):
        return x, (x * 2 + 1).sum(axis=1), x * 3 + 1

    x = em.arange(6).astype(em.float32).reshape(2, 3)
    for got in _both(f, lambda: (x,)):
        np.testing.assert_allclose(_np(got[0]), x.numpy())
        np.testing.assert_allclose(_np(got[1]), [9.0, 27.0])


def test_an_exception_while_tracing_leaves_captures_as_they_were():
    w = em.tensor([1.0, 2.0])

    @em.jit
    def f(x):
        with em.no_grad():
            w.__iadd__(x)
        return x @ em.ones(3)  # a shape error after the in-place update

    with pytest.raises(em.ShapeError):
        f(em.ones(2))
    np.testing.assert_allclose((w + 1).numpy(), [2.0, 3.0])


def test_eager_ops_on_a_leaked_tensor_say_it_leaked():
    leaked = []

    @em.jit
    def f(x):
        leaked.append(x * 2)
        return x + 1

    f(em.ones(2))
    with pytest.raises(em.GraphBreakError, match="escaped the trace"):
        leaked[0] + 1.0
    with pytest.raises(em.GraphBreakError, match="escaped the trace"):
        em.ones(2) + leaked[0]


def test_the_same_tensor_passed_twice_sees_in_place_updates():
    def h(x, y):
        with em.no_grad():
            x += 10.0
        return y * 1.5

    for jit in (False, True):
        g = em.jit(h) if jit else h
        for _ in range(2):
            a = em.tensor([1.0, 2.0])
            np.testing.assert_allclose(g(a, a).numpy(), [16.5, 18.0])
            b, c = em.tensor([1.0, 2.0]), em.tensor([1.0, 2.0])
            np.testing.assert_allclose(g(b, c).numpy(), [1.5, 3.0])


def test_a_returned_argument_is_the_callers_tensor():
    def f(x):
        with em.no_grad():
            x += 1.0
        return x

    g = em.jit(f)
    for _ in range(2):
        x = em.zeros(2)
        y = g(x)
        assert y is x
        np.testing.assert_allclose(x.numpy(), [1.0, 1.0])
