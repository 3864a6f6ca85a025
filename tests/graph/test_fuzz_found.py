"""One test per mismatch class the differential fuzzer's slow tier found (tests/fuzz; each
test names its seed and program, from 1795535866 on), minimized by hand from its repros."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz.check import assert_agrees

import execmode as em
from execmode.graph.views import c_ordered, proxy_of


@pytest.mark.parametrize("passes", [None, ["fold_constants"]])
def test_a_constant_result_is_fresh_at_every_call(passes):
    # Folding turns the result into a constant node; the graph keeps that one array, and
    # returned it to every call: writing into one result changed the next (2877, 9938).
    def f(d):
        d.zero_()
        v = em.exp(d)
        v[1] = 2.0
        return v

    jitted = em.jit(f, passes=passes)
    first = jitted(em.tensor([3.0, 4.0, 5.0]))
    second = jitted(em.tensor([3.0, 4.0, 5.0]))
    assert not np.shares_memory(first._data, second._data)
    first[0] = 7.0
    np.testing.assert_array_equal(jitted(em.tensor([3.0, 4.0, 5.0])).numpy(), [1.0, 2.0, 1.0])


def test_subtracting_negative_zero_is_not_an_identity():
    # x - (-0.0) is x + 0.0: it turns -0.0 into 0.0, so simplify must keep it (8265).
    def f(z):
        z -= -0.0
        return z * 1.0

    x = em.tensor([-0.0, 0.0, 1.5])
    got = em.jit(f, passes=["simplify"])(x.clone()).numpy()
    want = f(x.clone()).numpy()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert not np.signbit(got[0])


@pytest.mark.parametrize("backend", [None, "interpreter"])
def test_a_sum_over_one_negative_zero_is_positive_zero(backend):
    # NumPy reduces from the identity, 0.0 + -0.0 = 0.0; the interpreter handed the lone
    # value through (5060).
    def f(x):
        return (x * 1.0).sum(axis=0)

    x = em.tensor([[0.5, -0.0, -0.0]])
    got = em.jit(f, passes=["fuse"], backend=backend)(x).numpy()
    want = f(x).numpy()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_a_capture_the_function_gives_a_history_changes_the_next_results_flags():
    # g *= b makes g require grad after the first call, so the second call's result
    # requires grad eagerly; the replay kept the first trace's flags (9082).
    g = em.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = em.tensor([0.5, 2.0], requires_grad=True)

    def f(k):
        nonlocal g
        out = k @ g
        g *= b
        return out

    jitted = em.jit(f)
    results = [jitted(em.ones(1, 2)) for _ in range(3)]
    assert [r.requires_grad for r in results] == [False, True, True]


def test_freezing_a_captured_weight_between_calls_is_seen():
    w = em.tensor([1.0, 2.0], requires_grad=True)

    @em.jit
    def f(x):
        return x * w

    assert f(em.ones(2)).requires_grad
    w.requires_grad = False
    assert not f(em.ones(2)).requires_grad
    w.requires_grad = True
    assert f(em.ones(2)).requires_grad


def test_backward_into_an_earlier_calls_result_says_why():
    # The documented limitation (docs/graph-mode.md): the first call writes a value with a
    # history into a capture; the second call's backward reaches it. Eager walks the first
    # call's tape; a jit result has none, so jit says so instead of a wrong gradient (5875).
    g = em.zeros(2)
    w = em.tensor([1.0, -2.0], requires_grad=True)

    def f(x, y):
        y[...] = g
        loss = ((x - y) * w).sum()
        loss.backward()
        g[...] = loss
        return None

    # (Eagerly both calls return: tests/fuzz/known.py runs this program both ways.)
    jitted = em.jit(f)
    jitted(em.ones(2), em.zeros(2))
    with pytest.raises(em.BackwardError, match="result of an em.jit function"):
        jitted(em.ones(2), em.zeros(2))


# Seed 1795550527 (program 383).
def test_a_write_after_stacking_an_unknown_layout_result():
    # em.stack adds an axis to each input (a reshape). Of a fancy-indexed transpose, whose
    # layout only NumPy knows, the tracer took that reshape for "view or copy, unknown",
    # and the write to the stacked tensor raised GraphBreakError (the autograd tape kept
    # the reshaped tensor alive) where eager ran. Adding or dropping axes of length 1 is
    # always a view in NumPy.
    def f(z):
        v1 = z.T[em.tensor([3, 1])]
        stacked = em.stack([v1, v1 * 2.0])
        v1[...] = 1.0
        return stacked, v1

    x = em.tensor(np.arange(20, dtype=np.float32).reshape(5, 4), requires_grad=True)
    got, want = em.jit(f)(x), f(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


# Seed 1795551149 (program 6369).
def test_a_fused_subtraction_of_an_overflowing_product_keeps_nan():
    # GCC fused exp's last multiply and the subtraction into one FMA, whose exact product
    # does not overflow: inf - exp(inf) gave inf where NumPy gives nan. Kernels now compile
    # with -ffp-contract=off (and NVRTC with --fmad=false).
    x = em.tensor([np.inf, -2.25, -0.0, 88.0], dtype=em.float32)
    got = em.jit(lambda y: y - em.exp(y), passes=["fuse"])(x).numpy()
    want = (x - em.exp(x)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[0])


# Seed 20240613 (program 168), fast tier with outer_backward.
def test_an_argument_written_with_a_history_backpropagates_outside_the_call():
    # x -= y gives the caller's x y's history, as eagerly; v = x.T is a view of it. The
    # results' backward stopped at x, whose history the call left as "kept in the
    # graph" (the old refusal), where eager reaches y: a written argument is now an
    # output of the call's node, and the backward walks through its new history.
    assert_agrees("""
import execmode as em

# --- setup ---
w = em.tensor([[1.0, -2.0, 0.5], [0.25, 1.5, -1.0]], requires_grad=True)

# --- function ---
def f(x, y):
    x -= y
    v = x.T
    return v, v

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
y1 = em.tensor([[0.5, 0.25, 1.0], [2.0, 1.0, 0.0]], requires_grad=True)
out1 = F(x1, y1)
# --- call 2 ---
(out1[1].sum() + out1[0].sum()).backward()
x2 = em.tensor([[1.0, 0.0, 3.0], [4.0, 5.0, -6.0]])
out2 = F(x2, y1)
""")


# Seed 20240613 (program 182), fast tier with outer_backward.
def test_a_capture_with_an_earlier_calls_history_is_not_traced_into_the_backward():
    # Call 1 writes g1 with w's history: g1 becomes an output of call 1's node. Call 2
    # overwrites g1; the copy of its old value (autograd's, for g1's history) carries
    # call 1's node, which the backward trace took for one of its own and asked for its
    # vjp (AttributeError). Nodes made before the trace are the call's inputs now.
    assert_agrees("""
import execmode as em

# --- setup ---
g1 = em.zeros(3)
w = em.tensor([1.0, -2.0, 0.5], requires_grad=True)

# --- function ---
def f(x):
    g1[...] = w * x
    v = g1 * 2.0
    return v

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([1.0, 2.0, 3.0])
out1 = F(x1)
# --- call 2 ---
(out1 * out1).sum().backward()
x2 = em.tensor([0.5, 0.25, -1.0])
out2 = F(x2)
# --- call 3 ---
(out2 * out2).sum().backward()
out3 = F(x2)
""")


# Found by the path-matrix campaign of issue 33 (slow tier, seed 1858958899, 10,000
# programs): program 8911, minimized by hand.
OVERWRITE_AFTER_USE = """
import execmode as em

# --- setup ---
g0 = em.tensor([0.0, 0.0], dtype=em.float32)
w = em.tensor([1.0, 2.0], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x):
    global g0
    v0 = (x * w).sum()
    g0 += v0
    v0 *= 0.5
    return v0

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([1.0, 1.0], dtype=em.float32)
out1 = F(x1)

# --- call 2 ---
(out1 * out1).backward()
x2 = em.tensor([1.0, 1.0], dtype=em.float32)
out2 = F(x2)
"""


def test_an_overwrite_refuses_only_the_backward_that_reaches_it():
    # g0 += v0 reads v0, which v0 *= 0.5 then overwrites: eager refuses a backward through
    # g0, not one through the returned v0. The call refused both (BackwardError).
    assert_agrees(OVERWRITE_AFTER_USE)

    def run(wrap):
        w = em.tensor([1.0, 2.0], requires_grad=True)
        g0 = em.tensor([0.0, 0.0])

        def f(x):
            v0 = (x * w).sum()
            g0.add_(v0)
            v0.mul_(0.5)
            return v0

        out = wrap(f)(em.tensor([1.0, 1.0]))
        (out * out).backward()
        with pytest.raises(em.BackwardError, match="overwritten in place"):
            g0.sum().backward()
        return w.grad.numpy()

    np.testing.assert_array_equal(run(em.jit), run(lambda f: f))


def test_an_outside_backward_reaches_the_parameters_a_jitted_step_updated_in_place():
    # Seed 9901, program 624. Inside the call: backward, opt.step() (w and b written in
    # place under no_grad), then a result from the updated w and b. Outside: backward
    # through that result. Eagerly the leaves w and b get gradients (the step wrote into
    # them in place, they stay the leaves); through the jitted call b.grad stayed None:
    # the backward graph counted a captured leaf holding a traced value (after the write)
    # as a tensor of the call (jit_driver/backward_trace.py, _receives).
    def run(jit: bool):
        buf = em.tensor([-3.0, -2.0, 2.25, -2.25])
        w = em.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 4, requires_grad=True)
        b = em.tensor([-1.5, 2.25, 1.0], requires_grad=True)
        opt = em.optim.Adam([w, b], lr=0.25, eps=0.0625)

        def f(x):
            (x @ w + b).sum().backward()
            opt.step()
            return (buf @ w + b).sum()

        step, grads = em.jit(f) if jit else f, []
        for _ in range(3):  # the trace, then replays
            out = step(em.ones(1, 4))
            opt.zero_grad()
            (out * out).backward()
            grads.append((w.grad.numpy().copy(), b.grad.numpy().copy()))
        return grads

    for (ew, eb), (jw, jb) in zip(run(False), run(True)):
        np.testing.assert_allclose(jw, ew, rtol=1e-5)
        np.testing.assert_allclose(jb, eb, rtol=1e-5)


# The same class (issue 33 rerun of seed 1858958899, program 9397, minimized): eager's walk
# stops where no gradient flows (em.sign's), so reaching the node is not enough: the
# output's backward is traced alone to decide.
OVERWRITE_BEHIND_SIGN = """
import execmode as em

# --- setup ---
g1 = em.tensor([[-1.25, -1.25, 2.225], [3.0, -0.75, 0.0], [2.5, 2.5, -1.0], [-2.5, -1.0, 2.75]], dtype=em.float32)
b = em.tensor([1.0, -1.25, 1.75], dtype=em.float32, requires_grad=True)

# --- function ---
def f():
    v0 = g1 / b
    v1 = v0.astype(em.float32)
    v2 = v1 - v0
    v3 = em.maximum(v2, v0)
    v5 = em.sign(v3)
    v1[...] = v2
    v6 = v3.astype(em.float64)
    return v6, v5

F = em.jit(f, passes=[])
# --- call 1 ---
out1 = F()

# --- call 2 ---
(out1[1] * out1[1]).sum().backward()
out2 = F()
"""


def test_an_overwrite_behind_a_zero_gradient_refuses_nothing():
    assert_agrees(OVERWRITE_BEHIND_SIGN)


def test_a_backward_frees_only_what_its_results_reached_in_a_jitted_call():
    # Seed 112826, program 3386: a jitted call writes b into a captured g1 and returns
    # sigmoid(x). A backward through one call's sigmoid freed the whole call's node; the
    # next call's g1 has that call's g1 in its history, so a backward through it walked
    # into the freed node and raised "backward through the graph a second time", where
    # eager frees each op's values apart and the copy from b had freed nothing.
    def run(jit):
        g1 = em.zeros(4, 3)
        b = em.tensor([1.25, -2.0, 0.5], requires_grad=True)

        def f(x):
            g1[...] = b
            return g1, em.sigmoid(x), x

        step = em.jit(f) if jit else f
        first = step(em.ones(2, 4, requires_grad=True))
        (first[1].sum() + first[2].sum()).backward()
        second = step(em.ones(2, 4, requires_grad=True))
        (second[0].sum() + second[2].sum()).backward()
        again = (first[1].sum() + first[2].sum())
        with pytest.raises(em.errors.BackwardError, match="a second time"):
            again.backward()  # what the first backward freed stays freed
        return b.grad.numpy()

    np.testing.assert_array_equal(run(True), run(False))


def test_a_complex_result_refuses_only_its_own_backward_in_a_jitted_call():
    # Seeds 735035 (66) and 3535791 (950): f returns v2 = x @ w and a complex value made
    # from it. The call's backward refused as a whole (the complex node's refusal), so a
    # backward through v2 alone raised under jit where eager computes w's gradient. (The
    # complex value is rounded now, which keeps refusing complex values: a complex
    # multiply, sign and the linalg functions have gradients.)
    w = em.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)

    def f(x):
        v2 = x @ w
        return v2, em.round(v2.astype(em.complex64) * 2j)

    grads = []
    for step in (f, em.jit(f)):
        w.grad = None
        v2, v3 = step(em.tensor([[1.0, -1.0], [0.5, 2.0]]))
        (v2 * v2).sum().backward()
        grads.append(w.grad.numpy())
        with pytest.raises(em.errors.BackwardError, match="complex"):
            em.real(v3).sum().backward()
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("dtype", [em.float32, em.complex128])
def test_a_sum_over_no_axes_turns_minus_zero_into_zero_under_simplify(dtype):
    # Seed 7373, program 993: simplify replaced a sum over no axes (of a 0-d value) by its
    # input, but NumPy's sum adds the identity 0.0, so -0.0 (or an imaginary part -0.0)
    # comes out +0.0 eagerly and stayed -0.0 under jit.
    def f(x):
        return em.sum(em.sum(x) * -1.0)

    x = em.tensor([0.0]).astype(dtype)
    eager = f(x).numpy()
    for passes in (None, ["simplify"]):
        jitted = em.jit(f, passes=passes)(x).numpy()
        np.testing.assert_array_equal(np.signbit(np.real(jitted)), np.signbit(np.real(eager)))
        np.testing.assert_array_equal(np.signbit(np.imag(jitted)), np.signbit(np.imag(eager)))


def test_a_python_int_out_of_a_small_dtype_raises_under_jit_even_unused():
    # Seed 7373, program 2968: v0 -= -1 on a uint32 intermediate that nothing uses. Eager
    # raises NumPy's OverflowError (as an ArgumentValueError); the jit dropped the dead
    # op and returned. The range is checked when the op is bound, from the value alone.
    def f(v):
        v0 = v ^ (v // 3)
        v0 -= -1

    v = em.tensor([6, 4], dtype=em.uint32)
    for step in (f, em.jit(f)):
        with pytest.raises(em.errors.ArgumentValueError, match="out of bounds for uint32"):
            step(v)


def test_a_masked_write_of_a_wrapping_python_int_runs_under_jit_as_eagerly():
    # Seed 8484, program 2280: v[v > 0] = -1 on a uint64 value; eagerly the write wraps
    # (np.where's rule, not the binary ufuncs' OverflowError), and under jit the write,
    # functionalized into where, was refused by the binary ops' range check.
    def f(v):
        v = v * 1
        v[v > 0] = -1
        return v

    v = em.tensor([5, 0], dtype=em.uint64)
    np.testing.assert_array_equal(em.jit(f)(v).numpy(), f(v).numpy())


def test_a_data_dependent_op_on_a_capture_reads_it_at_every_call():
    # Seed 8484, program 888: unique_values of a captured tensor (or of its view, which
    # ran eagerly) did not break the graph: its result was baked at trace time and the
    # replay kept it after the capture changed.
    g0 = em.tensor([-2.75, 0.25, 0.75, -0.75])

    def f():
        return em.sum(em.unique_values(em.reshape(g0, (-1,))))

    jitted = em.jit(f)
    assert jitted().item() == f().item()
    g0[1] = 2.0
    assert jitted().item() == f().item() == -0.75


def test_a_backward_reads_the_numbers_of_its_call_not_the_current_ones():
    # Seed 20261129, program 176: v2 = w * obj.lr; obj.lr changed between a call and the
    # backward through its result. Eager's node keeps the call's lr; the jitted call's
    # backward graph read obj.lr again at backward time: a gradient 6.5x eager's.
    class Obj:
        pass

    obj = Obj()
    w = em.tensor([1.0, -2.0], requires_grad=True)

    def f():
        return w * obj.lr

    grads = []
    for step in (f, em.jit(f)):
        w.grad = None
        for lr in (0.5, 0.125):
            obj.lr = lr
            out = step()
            obj.lr = 1.5  # after the call, before its backward
            (out * out).sum().backward()
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


def test_an_indexed_write_of_a_python_int_out_of_range_raises_under_jit_even_unused():
    # Seed 20261131, program 3267: v[0] = -1 on a uint32 value nothing uses: eager's
    # setitem raises NumPy's OverflowError; the jit's index_put was dead code, dropped.
    def f(k):
        v = k.astype(em.uint32) * 1
        v[0] = -1

    k = em.tensor([4, 1], dtype=em.int64)
    for step in (f, em.jit(f, passes=["eliminate_dead_code"])):
        with pytest.raises(em.errors.ArgumentValueError, match="out of bounds for uint32"):
            step(k)


@pytest.mark.parametrize("passes", [None, []])
def test_a_write_through_a_flattened_roll_reaches_the_roll(passes):
    # Seed 20261141, program 2281: roll is a concat of two column slices, which NumPy lays
    # out C-contiguous, so reshape(-1) of it is a view and writing through it changes the
    # roll. The tracer took a concat of non-contiguous inputs for an unknown layout and
    # refused the write (GraphBreakError) where eager returned.
    g = em.tensor([[3.0, -1.0, 0.5], [0.25, 1.5, -2.0]])

    def f():
        v = em.roll(g, 1, axis=1)
        v.reshape(-1)[1:4] = 0.0
        return v

    want = f().numpy()
    np.testing.assert_array_equal(em.jit(f, passes=passes)().numpy(), want)
    np.testing.assert_array_equal(want, [[0.5, 0.0, 0.0], [0.0, 0.25, 1.5]])
    np.testing.assert_array_equal(g.numpy(), [[3.0, -1.0, 0.5], [0.25, 1.5, -2.0]])


def test_numpy_lays_a_concat_of_c_ordered_inputs_out_c_contiguous():
    # What the tracer assumes for the concat above (graph/views.py c_ordered), against
    # NumPy itself; inputs that are not all C-ordered stay of unknown layout, and rightly:
    # two transposed inputs give a result that is not C-contiguous.
    a = np.arange(24.0).reshape(4, 6)
    layouts = [                                   # each pair (4, 2) and (4, 2)
        ([a[:, 1:3], a[:, 3:5]], True),           # column slices (roll's)
        ([a[::-1, ::3], a[:, :2]], True),         # reversed and stepped
        ([np.broadcast_to(a[:, :1], (4, 2)), a[:, :2]], True),
        ([np.broadcast_to(a[:1, :2], (4, 2)), a[:, :2]], False),
        ([a[:2, :4].T, a[:, :2]], False),
        ([a[:2, :4].T, a[2:, :4].T], False),
    ]
    for arrays, known in layouts:
        assert all(c_ordered(proxy_of(x)) for x in arrays) == known, [x.strides for x in arrays]
        if known:
            for axis in (0, 1):
                assert np.concatenate(arrays, axis=axis).flags.c_contiguous, (arrays, axis)
    assert not np.concatenate([a[:2, :4].T, a[2:, :4].T], axis=0).flags.c_contiguous


def test_an_elementwise_result_of_a_flipped_input_is_c_contiguous_and_writable_in_place():
    # Seed 20261211, program 1248: log(flip(z)) has no known layout to the tracer (an op
    # result of strided inputs), so an in-place write through its reshape was refused as
    # an aliasing it could not resolve, while eager ran. NumPy lays an elementwise result
    # out by its inputs' absolute strides: C-ordered inputs (flipped, stepped) give a
    # C-contiguous result, whose reshape is a view.
    assert_agrees("""
import execmode as em

# --- setup ---

# --- function ---
def f(z):
    v0 = em.flip(z, axis=0)
    v1 = em.log(v0)
    v3 = v1.reshape(-1, 2, 2)
    v3.zero_()
    return v1 * 1.0, v3 + 1.0

F = em.jit(f, passes=[])
# --- call 1 ---
z1 = em.tensor([[-0.25, -2.75, -1.0, 2.0], [2.75, 0.5, 3.0, 0.5], [-1.25, -2.25, -2.75, -1.25], [-1.5, 0.75, 2.75, 1.25], [-1.5, 1.5, -1.75, -1.25]], dtype=em.float32)
out1 = F(z1)
""")


def test_numpy_lays_an_elementwise_result_of_c_ordered_inputs_out_c_contiguous():
    # What the tracer assumes above (graph/binding.py), against NumPy and the eager ops.
    a = np.arange(1.0, 49.0, dtype=np.float32).reshape(6, 8)
    for x in (a[::-1], a[:, ::-1], a[:, ::2], a[::2, ::-3], np.broadcast_to(a[:, :1], (6, 8))):
        assert c_ordered(proxy_of(x))
        assert np.log(x).flags.c_contiguous and np.add(x, x).flags.c_contiguous
        for out in (em.log(em.tensor(x)), em.tensor(x) * 2.0, em.tanh(em.tensor(x))):
            assert out.numpy().flags.c_contiguous
    assert not c_ordered(proxy_of(a.T))


# Seed 20261260 (program 625), fast tier (listener=all).
def test_a_bias_gradient_under_a_listener_keeps_its_shape():
    # A backward program's gradient that is a reshape of its output (b's: the sum over
    # the broadcast rows keeps them, (1, 3) -> (3,)) is allocated in its final shape, so
    # that autograd keeps it without a copy. Its rebuild once dropped the reshape; under
    # a listener the plan runs step by step and hands out (1, 3): b's .grad had that
    # shape, and Adam's step raised where eager's ran.
    assert_agrees("""
# fuzz options: listener=all
import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---
g1 = em.tensor([[-0.25, -inf, -2.089], [inf, 2.75, -2.5], [-1.323, -1.087, 0.888], [-1.062, inf, -2.645]], dtype=em.float32)
w = em.tensor([[-0.25, 0.5, 0.0], [-2.195, 2.5, -1.5], [-0.387, -1.25, 3.0], [2.75, -0.75, nan]], dtype=em.float32, requires_grad=True)
b = em.tensor([1.25, 2.25, -1.25], dtype=em.float32, requires_grad=True)
opt = em.optim.Adam([w, b], lr=0.25, eps=0.0625)

# --- function ---
def f(y):
    v1 = g1.clone()
    v3 = v1 - b
    return y, v3

F = em.jit(f, passes=[])
# --- call 1 ---
y1 = em.tensor([-2.75, -inf, 0.248, 1.25], dtype=em.float32)
out1 = F(y1)

# --- call 2 ---
(out1[1] * out1[1]).sum().backward()
opt.step()
out2 = F(y1)
""")
