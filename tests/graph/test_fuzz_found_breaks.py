"""Mismatch classes the differential fuzzer's slow tier found around graph breaks (an
argument written, assigned or given a history in a segment before a break; the state the
jit hands back after it), one test each, minimized by hand from the repros; the other
classes are in test_fuzz_found.py."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz.check import assert_agrees

import execmode as em


def test_a_result_from_before_a_graph_break_backpropagates_into_the_argument():
    # Seed 5151, program 178: f returns 0 - y, computed before a break (unique_values'
    # data-dependent shape), and its last segment returns nothing differentiable. The
    # tape of the earlier segment named y's stand-in, and was pointed at the caller's y
    # only when the last segment had differentiable results: y.grad stayed None.
    w = em.tensor([[1.0, 0.25], [2.0, 3.0]], requires_grad=True)

    def f(y):
        v0 = 0.0 - y
        em.sum(em.unique_values(em.reshape(w, (-1,))))
        return v0

    jitted = em.jit(f)
    for _ in range(2):  # the trace and a later call
        y = em.tensor([1.0, 2.0], requires_grad=True)
        jitted(y).sum().backward()
        np.testing.assert_array_equal(y.grad.numpy(), [-1.0, -1.0])


@pytest.mark.parametrize("jit", [False, True])
def test_an_argument_overwritten_before_a_graph_break_refuses_the_backward(jit):
    # Seed 6262, programs 527 and 932: x @ w, then x.zero_(), then a graph break. Eager's
    # backward refuses (x was overwritten after matmul used it); under jit the segment's
    # write reached the caller's x without its write mark, and the backward ran on the
    # zeros: a gradient of 0 for w instead of the refusal.
    w = em.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)

    def f(x):
        v0 = (x @ w).sum()
        x.zero_()
        em.sum(em.unique_values(em.reshape(w, (-1,))))
        return v0

    step = em.jit(f) if jit else f
    for _ in range(2):
        with pytest.raises(em.errors.BackwardError, match="overwritten in place"):
            step(em.tensor([[1.0, 1.0]])).backward()
    assert w.grad is None


def test_an_argument_assigned_from_itself_read_as_a_global_after_a_break_is_no_write():
    # Seed 9595, program 1035: y is obj.buf; after a graph break em.assign(y, obj.buf)
    # is a no-op eagerly (one object), but the trace saw the argument's stand-in and the
    # global as two tensors, wrote one into the other and marked it overwritten: the
    # backward through y @ w refused where eager's runs.
    class Obj:
        pass

    obj = Obj()
    obj.buf = em.tensor([-0.5, 0.0, -3.0, 1.25])
    w = em.tensor([[1.0, 1.25], [-2.0, -3.0], [-0.5, 0.0], [1.0, -0.5]], requires_grad=True)

    def f(x, y):
        v0 = (y @ w).sum()
        em.sum(em.unique_values(em.reshape(x, (-1,))))
        em.assign(y, obj.buf)
        return v0

    grads = []
    for step in (f, em.jit(f)):
        w.grad = None
        step(em.tensor([[1.0, 2.0]]), obj.buf).backward()
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


def test_an_argument_written_with_a_history_before_a_break_backpropagates():
    # Seed 20261130, program 2351: y[...] = d (d requires grad), then a graph break:
    # eagerly y carries d's history; the jit handed y back with results.JIT_RESULT (the
    # flag write after the call), so a backward through y refused where eager's reaches d.
    def f(y, d):
        y[...] = d
        em.sum(em.unique_values(em.reshape(d, (-1,))))
        return y

    grads = []
    for step in (f, em.jit(f)):
        d = em.tensor([0.5, 0.75], dtype=em.float64, requires_grad=True)
        out = step(em.tensor([2.0, -3.0]), d)
        (out * out).sum().backward()
        grads.append(d.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


def test_assigning_a_missing_grad_raises_under_jit_as_eagerly():
    # Seed 20261143, program 1679: em.assign(g1, b.grad) before any backward: eagerly
    # assign refuses None; under jit the check for "the same object as an argument's
    # stand-in" matched None against the capture's missing stand-in and returned.
    g = em.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = em.tensor([1.0, 2.0], requires_grad=True)

    def f():
        em.assign(g, b.grad)

    for step in (f, em.jit(f, passes=[]), em.jit(f)):
        with pytest.raises(em.errors.ArgumentError, match=r"assign\(f32\[2,2\]@cpu, NoneType\)"
                           r".*got NoneType(.|\n)*test_fuzz_found_breaks.py"):
            step()
    np.testing.assert_array_equal(g.numpy(), [[1.0, 2.0], [3.0, 4.0]])


def test_a_global_written_with_a_history_before_a_break_backpropagates():
    # 20261196-3343: g0 += y (y requires grad) on a global, a graph break, then g0 + v1.
    # Eagerly g0 carries y's history; the jit handed it back with results.JIT_RESULT (the
    # capture's flag write after the call overwrote the real node of the segment before
    # the break), so a backward through the result refused where eager's reaches y and b.
    # The argument's case is the test above; the fuzz comparator checks values, the
    # .grad of y and b, and the global's array and flags after each call.
    assert_agrees("""
import execmode as em

# --- setup ---
g0 = em.tensor([2.75, 0.75, -2.5, 2.0], dtype=em.float32)
b = em.tensor([-1.75, -2.75, -0.25], dtype=em.float32, requires_grad=True)

# --- function ---
def f(y):
    global g0
    g0 += y
    v1 = em.sum(em.unique_values(em.reshape(b, (-1,))))
    return g0 + v1

F = em.jit(f, passes=[])
# --- call 1 ---
y1 = em.tensor([-2.75, -2.0, -0.75, -1.75], dtype=em.float32, requires_grad=True)
out1 = F(y1)
# --- call 2 ---
(out1[0] * out1[0]).sum().backward()
y2 = em.tensor([2.75, -1.25, 2.75, 1.25], dtype=em.float32, requires_grad=True)
out2 = F(y2)
# --- call 3 ---
(out2[0] * out2[0]).sum().backward()
out3 = F(em.tensor([1.0, 2.0, 3.0, 4.0], dtype=em.float32))
""")


@pytest.mark.parametrize("passes", [None, []])
def test_a_captured_tensor_given_a_history_before_a_break_backpropagates_from_itself(passes):
    # The same cause, seen through the captured tensor itself: a slice of it set from y
    # before the break, nothing differentiable returned, then a backward through g after
    # the call.
    b = em.tensor([-1.75, -2.75, -0.25], requires_grad=True)

    def run(jit):
        g = em.tensor([2.75, 0.75, -2.5, 2.0])

        def f(y):
            g[1:3] = y[:2] * 2.0
            return em.sum(em.unique_values(em.reshape(b, (-1,))))

        y = em.tensor([0.5, -1.0, 3.0], requires_grad=True)
        (em.jit(f, passes=passes) if jit else f)(y)
        (g * g).sum().backward()
        return y.grad.numpy()

    np.testing.assert_array_equal(run(True), run(False))


def test_an_argument_written_from_a_leaf_before_a_break_passes_its_gradient_on():
    # Seed 20261212, program 3091: x[...] = y, a graph break, then y - x. After the break
    # the traced `y - x` was pointed at the caller's x (which takes y's history only after
    # the call), so the backward trace saw an x without requires_grad and dropped its
    # gradient: y.grad 3 where eager gives 1.
    assert_agrees("""
import execmode as em

# --- setup ---

# --- function ---
def f(x, y):
    x[...] = y
    v0 = em.sum(em.unique_values(em.reshape(x, (-1,))))
    v1 = y - x
    return v1, y, v1

F = em.jit(f, passes=[])
# --- call 1 ---
x1 = em.tensor([[-1.5, -1.0, -0.0, -2.75], [1.25, -1.75, -0.5, 2.25]], dtype=em.float32)
y1 = em.tensor([1.75, 2.25, 3.0, -1.0], dtype=em.float32, requires_grad=True)
out1 = F(x1, y1)
# --- call 2 ---
(out1[2].sum() + out1[1].sum()).backward()
x2 = em.tensor([[-0.25, 3.5, -0.0, -1.0], [1.0, -1.5, -0.5, 1.0], [-2.0, -2.0, 1.0, -0.75]], dtype=em.float32)
y2 = em.tensor([-0.5, -0.5, -0.25, -1.0], dtype=em.float32, requires_grad=True)
out2 = F(x2, y2)
# --- call 3 ---
(out2[0].sum() * 2.0).backward()
out3 = F(x1, y1)
""")
