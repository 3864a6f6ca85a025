"""Whole-graph programs with an op that may raise (a label check) and a constant among
their outputs: the program runs them, gives eager's values, and a bad label raises
eager's error through every replay path (the first call, the C fast entry's Python
replay, the general path) with nothing written."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.codegen.toolchain import NoCompiler, get_toolchain
from execmode.ops import OPS


@pytest.fixture(autouse=True, scope="module")
def _compiler():
    try:
        get_toolchain()
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")


def _masked(x, labels):
    keep = em.functional.primitives.apply(OPS["check_labels"], labels, num_classes=5,
                                          ignore_index=-100, caller="masked")
    return em.where(keep, x * 2.0, 0.0)


def _plan(jitted):
    (concrete,) = jitted.concrete_functions
    return concrete.segments[0].compiled.plan


def _program(jitted):
    """The jitted function's whole-graph program, which must have been built."""
    plan = _plan(jitted)
    assert plan.program is not None, plan.program_reason
    return plan.program


def _labels(values):
    return em.tensor(np.array(values, dtype=np.int64))


def test_a_label_check_runs_inside_the_program_with_eagers_values():
    x = em.tensor(np.linspace(-1, 1, 6, dtype=np.float32))
    labels = _labels([0, 4, -100, 2, 1, -100])
    f = em.jit(_masked)
    for _ in range(3):
        np.testing.assert_array_equal(f(x, labels).numpy(), _masked(x, labels).numpy())
    program = _program(f)
    assert program.failed is not None and program.calls >= 2


@pytest.mark.parametrize("bad", [5, -1])
def test_a_bad_label_raises_eagers_error_on_every_call_and_the_next_good_call_runs(bad):
    x = em.tensor(np.ones(4, np.float32))
    good, wrong = _labels([1, 2, 3, 4]), _labels([1, bad, 3, 4])
    with pytest.raises(em.IndexingError) as eager_error:
        _masked(x, wrong)
    f = em.jit(_masked)
    f(x, good)
    f(x, good)  # the replay paths are built
    calls = _plan(f).program.calls
    for _ in range(2):
        with pytest.raises(em.IndexingError) as jit_error:
            f(x, wrong)
        assert str(jit_error.value).splitlines()[0] == str(eager_error.value).splitlines()[0]
    assert _plan(f).program.calls > calls  # the program ran, failed and was replayed
    assert _plan(f).program.failed[0] == 0
    np.testing.assert_array_equal(f(x, good).numpy(), _masked(x, good).numpy())


def test_a_failed_check_writes_nothing_into_an_assigned_input():
    state = em.zeros(3)
    labels_ok, labels_bad = _labels([0, 1, 2]), _labels([0, 9, 2])

    def update(labels):
        keep = em.functional.primitives.apply(OPS["check_labels"], labels, num_classes=5,
                                              ignore_index=-100, caller="update")
        state.add_(em.where(keep, 1.0, 0.0))
        return state * 1.0

    f = em.jit(update)
    f(labels_ok)
    f(labels_ok)
    assert _plan(f).program is not None, _plan(f).program_reason
    before = state.numpy().copy()
    with pytest.raises(em.IndexingError):
        f(labels_bad)
    np.testing.assert_array_equal(state.numpy(), before)


def test_a_constant_among_the_outputs_is_copied_into_each_calls_own_array():
    def with_positions(x):
        return x + 1.0, em.arange(4)

    f = em.jit(with_positions)
    x = em.ones(4)
    first = f(x)[1]
    second = f(x)[1]
    assert _plan(f).program is not None, _plan(f).program_reason
    np.testing.assert_array_equal(second.numpy(), np.arange(4))
    assert not np.shares_memory(first.numpy(), second.numpy())
    second.numpy()[:] = 7  # the caller's array: the constant the program keeps is its own
    np.testing.assert_array_equal(f(x)[1].numpy(), np.arange(4))


# --- gather and scatter along an axis, broadcasts read in place ---------------------------

def _classifier_step(w, x, y):
    loss = em.nn.functional.cross_entropy(x @ w, y)
    loss.backward()
    with em.no_grad():
        w -= 0.1 * w.grad
    w.grad = None
    return loss


def test_a_cross_entropy_training_step_is_one_program_with_eagers_values():
    # (Within rounding: a matmul this small is generated loops, which add the products in
    # their own order, docs/graph-mode.md; the gather and scatter have eager's bits.)
    rng = np.random.default_rng(0)
    x = em.tensor(rng.standard_normal((16, 8)).astype(np.float32))
    y = em.tensor(rng.integers(0, 5, 16))
    w_eager = em.tensor(rng.standard_normal((8, 5)).astype(np.float32), requires_grad=True)
    w_jit = em.tensor(w_eager.numpy().copy(), requires_grad=True)
    step = em.jit(_classifier_step)
    for _ in range(4):
        eager = _classifier_step(w_eager, x, y)
        jitted = step(w_jit, x, y)
        np.testing.assert_allclose(jitted.numpy(), eager.numpy(), rtol=1e-6)
        np.testing.assert_allclose(w_jit.numpy(), w_eager.numpy(), rtol=1e-5, atol=1e-7)
    source = _program(step).source
    assert "take_along_axis" in source and "scatter_add" in source


@pytest.mark.parametrize("op", ["gather", "scatter_add"])
def test_an_index_out_of_range_raises_eagers_error_from_the_program(op):
    x = em.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    good = em.tensor(np.array([[0, 3], [2, 2], [1, 0]]))
    bad = em.tensor(np.array([[0, 3], [2, 4], [1, 0]]))
    src = em.tensor(np.ones((3, 2), np.float32))

    def f(index):
        y = x * 2.0
        out = em.gather(y, 1, index) if op == "gather" else em.scatter_add(y, 1, index, src)
        return out + 0.5

    with pytest.raises(em.IndexingError) as eager_error:
        f(bad)
    g = em.jit(f)
    for _ in range(2):
        np.testing.assert_array_equal(g(good).numpy(), f(good).numpy())
    _program(g)
    with pytest.raises(em.IndexingError) as jit_error:
        g(bad)
    assert str(jit_error.value).splitlines()[0] == str(eager_error.value).splitlines()[0]


def test_repeated_scatter_indices_add_up_in_numpys_order():
    rng = np.random.default_rng(1)
    src = em.tensor(rng.standard_normal((64, 7)).astype(np.float32) * 1e4)
    index = em.tensor(rng.integers(0, 3, (64, 7)))

    def f(s):
        return em.scatter_add(em.zeros((3, 7)), 0, index, s * 1.0)

    g = em.jit(f)
    for _ in range(2):
        assert g(src).numpy().tobytes() == f(src).numpy().tobytes()
    _program(g)


def test_a_broadcast_read_by_a_matmul_leaves_the_graph_to_the_plan_with_the_reason():
    def f(v, m):
        return em.broadcast_to(v * 2.0, (4, 3)) @ m

    v, m = em.ones(3), em.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    g = em.jit(f)
    for _ in range(2):
        np.testing.assert_array_equal(g(v, m).numpy(), f(v, m).numpy())
    plan = _plan(g)
    assert plan.program is None and "needs it copied" in plan.program_reason


# --- indexing: slices and rows, their gradients, views the caller receives ----------------

def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _agree_bit_for_bit(f, g, *args, calls=3):
    """Eager ``f`` and jitted ``g`` give results of the same bits, call after call."""
    for _ in range(calls):
        for a, b in zip(f(*args), g(*args)):
            _same_bits(a.numpy(), b.numpy())


def test_slices_and_their_gradient_run_in_the_program_with_eagers_bits():
    rng = np.random.default_rng(2)
    qkv = em.tensor(rng.standard_normal((2, 3, 12)).astype(np.float32), requires_grad=True)
    mask = em.tensor(rng.standard_normal((1, 1, 6, 6)).astype(np.float32))

    def f(t):
        q, k = t[:, :, 0:4], t[:, :, 8:12:2]
        out = (q * 2.0).sum() + (k * 3.0).sum() + (mask[:, :, :3, ::-2] * 1.5).sum()
        out.backward()
        g = t.grad
        t.grad = None
        return out, g * 1.0, t[-1, 1, ::-3] + 0.0

    g = em.jit(f)
    for _ in range(3):
        (eager_loss, *eager), (jit_loss, *jitted) = f(qkv), g(qkv)
        # (a float sum is within rounding of eager's: docs/graph-mode.md)
        np.testing.assert_allclose(jit_loss.numpy(), eager_loss.numpy(), rtol=1e-6)
        for a, b in zip(eager, jitted):
            _same_bits(a.numpy(), b.numpy())
    _program(g)


@pytest.mark.parametrize("negative", [False, True])
def test_embedding_rows_and_their_gradient_in_the_program_with_eagers_bits(negative):
    rng = np.random.default_rng(3)
    table = em.tensor(rng.standard_normal((7, 5)).astype(np.float32), requires_grad=True)
    ids = rng.integers(0, 7, (4, 6))
    ids = em.tensor(ids - 7 if negative else ids)  # repeats add up, in index order

    def f(i):
        rows = table[i]
        loss = (rows * rows).sum()
        loss.backward()
        grad = table.grad
        table.grad = None
        return loss, grad * 1.0

    g = em.jit(f)
    for _ in range(3):
        (eager_loss, eager_grad), (jit_loss, jit_grad) = f(ids), g(ids)
        np.testing.assert_allclose(jit_loss.numpy(), eager_loss.numpy(), rtol=1e-6)
        _same_bits(eager_grad.numpy(), jit_grad.numpy())
    _program(g)


def test_a_row_index_out_of_range_raises_eagers_error_from_the_program():
    table = em.tensor(np.arange(12, dtype=np.float32).reshape(4, 3))

    def f(i):
        return table[i] * 2.0 + 1.0

    good, bad = em.tensor(np.array([0, 3, -4])), em.tensor(np.array([0, 4, 1]))
    with pytest.raises(em.IndexingError) as eager_error:
        f(bad)
    g = em.jit(f)
    g(good)
    g(good)
    _program(g)
    with pytest.raises(em.IndexingError) as jit_error:
        g(bad)
    assert str(jit_error.value).splitlines()[0] == str(eager_error.value).splitlines()[0]
    _same_bits(g(good).numpy(), f(good).numpy())


def test_a_reshape_of_a_transpose_and_views_returned_are_copies_of_their_own():
    rng = np.random.default_rng(4)
    x = em.tensor(rng.standard_normal((3, 4, 5)).astype(np.float32))

    def f(t):
        y = t * 2.0
        merged = em.reshape(em.permute_dims(y, (1, 0, 2)), (4, 15))
        return merged + 1.0, em.reshape(y, (12, 5)), em.permute_dims(y, (2, 1, 0))

    g = em.jit(f)
    first = g(x)
    _agree_bit_for_bit(f, g, x, calls=1)
    _program(g)
    second = g(x)
    for a, b in zip(first, second):
        assert not np.shares_memory(a.numpy(), b.numpy())


def test_integer_indices_read_their_element_regression_fuzz_20261210_227():
    # The differential fuzzer's program 20261210-227: `d[0]` made a NumPy scalar of the
    # index's stand-in (no view), whose address gave the program an offset far outside
    # `d`, and the process crashed. Integers alone, with a slice, and after an ellipsis.
    w = em.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    d = em.tensor(np.array([[1.0, -1.0, -0.5], [-1.75, 2.5, 4.0]]))

    def f(x):
        return em.maximum(w, w) - x[0, 1], x[-1] * 2.0, x[..., 2] + 1.0, x[1, ::-2] * 3.0

    g = em.jit(f, passes=["fold_constants", "plan_memory"])
    _agree_bit_for_bit(f, g, d)
    _program(g)


# --- a CNN's sliding windows --------------------------------------------------------------

def test_padding_pooling_and_their_gradients_run_in_the_program_with_eagers_bits():
    rng = np.random.default_rng(5)
    x = em.tensor(rng.standard_normal((2, 3, 7, 6)).astype(np.float32), requires_grad=True)
    F = em.nn.functional

    def f(t):
        padded = F.pad(t * 1.5, (1, 2, 2, 0), value=-0.25)
        pooled = F.max_pool2d(padded, 2, stride=2)
        same = F.max_pool2d(t, 3, stride=1, padding=1)
        # (a float sum is within rounding; its gradient flows through the windows exactly)
        ((pooled * pooled).sum() + (same * 3.0).sum()).backward()
        grad = t.grad
        t.grad = None
        return padded + 0.0, pooled, same, grad * 1.0

    g = em.jit(f)
    _agree_bit_for_bit(f, g, x)
    _program(g)


def test_a_convolution_training_step_is_one_program():
    rng = np.random.default_rng(6)
    conv = em.nn.Conv2d(2, 4, 3, padding=1)
    x = em.tensor(rng.standard_normal((3, 2, 8, 8)).astype(np.float32))

    def step(inp):
        out = em.nn.functional.max_pool2d(em.relu(conv(inp)), 2)
        loss = (out * out).mean()
        loss.backward()
        grads = [p.grad * 1.0 for p in conv.parameters()]
        for p in conv.parameters():
            p.grad = None
        return loss, grads

    g = em.jit(step)
    for _ in range(3):
        (eager_loss, eager_grads), (jit_loss, jit_grads) = step(x), g(x)
        # (within rounding: the convolution's matmul and the mean, docs/graph-mode.md)
        np.testing.assert_allclose(jit_loss.numpy(), eager_loss.numpy(), rtol=1e-5)
        for a, b in zip(eager_grads, jit_grads):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-6)
    _program(g)
