"""Whole training steps as one program call: BLAS matmuls called from C, and the
write-backs of functionalized state (assigns) done inside the program."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from helpers import assert_close, mse_train_step

import execmode as em
from execmode import matmul_bits
from execmode.codegen import blas
from execmode.codegen.program import program_or_reason

# Slow tier: every test compiles and runs whole-program steps (training steps, BLAS calls).
pytestmark = pytest.mark.slow

needs_blas = pytest.mark.skipif(blas.find() is None, reason=f"no BLAS: {blas.reason()}")


def _plan(jitted):
    (compiled,) = jitted._segments.values()
    return compiled.plan


# --- matmuls through NumPy's BLAS ------------------------------------------------------------

def _shapes():
    # (a shape, b shape, how a and b reach the matmul)
    return [
        ((300, 40), (40, 30), "plain"),        # tall
        ((20, 400), (400, 300), "plain"),      # wide
        ((1, 300), (300, 200), "plain"),       # one row: gemv
        ((200, 300), (300, 1), "plain"),       # one column: gemv
        ((1, 50000), (50000, 1), "plain"),     # one number: dot
        ((40, 300), (40, 50), "a.T"),          # transposed operands
        ((60, 300), (50, 300), "b.T"),
        ((300, 60), (50, 300), "both.T"),
        ((70, 300), None, "a @ a.T"),          # syrk, as NumPy
        ((300, 70), None, "a.T @ a"),
        ((4, 50, 60), (4, 60, 70), "plain"),   # batched
        ((50, 60), (3, 60, 70), "plain"),      # batched, broadcast
        ((2, 1, 30, 60), (3, 60, 40), "plain"),
    ]


_VIEWS = {
    "plain": (lambda a, b: em.matmul(a, b), lambda a, b: np.matmul(a, b)),
    "a.T": (lambda a, b: em.matmul(a.mT, b), lambda a, b: np.matmul(a.T, b)),
    "b.T": (lambda a, b: em.matmul(a, b.mT), lambda a, b: np.matmul(a, b.T)),
    "both.T": (lambda a, b: em.matmul(a.mT, b.mT), lambda a, b: np.matmul(a.T, b.T)),
    "a @ a.T": (lambda a: em.matmul(a, a.mT), lambda a: np.matmul(a, a.T)),
    "a.T @ a": (lambda a: em.matmul(a.mT, a), lambda a: np.matmul(a.T, a)),
}


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape,b_shape,kind", _shapes())
def test_blas_matmul_in_a_program_equals_numpy_bit_for_bit(a_shape, b_shape, kind, dtype):
    rng = np.random.default_rng(zlib.crc32(repr((a_shape, b_shape, kind)).encode()))
    arrays = [rng.standard_normal(a_shape).astype(dtype)]
    if b_shape is not None:
        arrays.append(rng.standard_normal(b_shape).astype(dtype))
    fn, reference = _VIEWS[kind]
    graph = em.jit(lambda *t: fn(*t) * 1.0).lower(*[em.tensor(a) for a in arrays]).graph
    program, reason = program_or_reason(graph, "mm")
    assert program is not None, reason
    assert "gemm" in program.source or "gemv" in program.source or "dot" in program.source
    (got,) = program.run(arrays)
    want = reference(*arrays)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # Other values in the same buffers: the pointers are read at every call.
    arrays = [a * 2 for a in arrays]
    np.testing.assert_array_equal(program.run(arrays)[0], reference(*arrays))


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape,b_shape,kind", [
    case for case in _shapes() if case[2] in ("plain", "a.T", "b.T", "both.T")
    and len(case[0]) == len(case[1]) == 2 and 1 not in case[0] + case[1]])
def test_a_matmul_turned_round_equals_numpy_bit_for_bit(a_shape, b_shape, kind, dtype,
                                                         monkeypatch):
    # gemm_orientation.py: C = A @ B computed as (B^T @ A^T)^T where that is faster.
    # Forced here: every product big enough is turned where its bits equal NumPy's (the
    # check refuses some float64 shapes: OpenBLAS's dgemm sums those in another order).
    monkeypatch.setenv("EXECMODE_GEMM_ORIENTATION", "transposed")
    monkeypatch.setenv("EXECMODE_GEMM_KERNEL", "blas")  # its own kernel is asked first
    rng = np.random.default_rng(zlib.crc32(repr((a_shape, b_shape, kind)).encode()))
    arrays = [rng.standard_normal(a_shape).astype(dtype),
              rng.standard_normal(b_shape).astype(dtype)]
    fn, reference = _VIEWS[kind]
    graph = em.jit(lambda *t: fn(*t) * 1.0).lower(*[em.tensor(a) for a in arrays]).graph
    program, reason = program_or_reason(graph, "mm")
    assert program is not None, reason
    a_view, b_view = {"plain": (False, False), "a.T": (True, False), "b.T": (False, True),
                      "both.T": (True, True)}[kind]
    m, n = (a_shape[::-1] if a_view else a_shape)
    p = b_shape[0] if b_view else b_shape[1]
    same_bits = matmul_bits.turned_same_bits(np.dtype(dtype).str, m, n, p, a_view, b_view)
    assert ("turned round" in program.source) == same_bits
    for scale in (1, -3):  # other values in the same buffers
        arrays = [a * scale for a in arrays]
        np.testing.assert_array_equal(program.run(arrays)[0], reference(*arrays))


@needs_blas
def test_an_mlp_layer_is_turned_round_where_its_bits_stay(monkeypatch):
    # The case that motivated it: a batch of rows times a transposed weight, float32.
    monkeypatch.setenv("EXECMODE_GEMM_ORIENTATION", "transposed")
    monkeypatch.setenv("EXECMODE_GEMM_KERNEL", "blas")
    # Where this BLAS sums the turned float32 product in another order (OpenBLAS's Haswell
    # sgemm does), it is never turned; test_other_openblas_core.py runs the other case.
    same_bits = matmul_bits.turned_same_bits("<f4", 64, 512, 256, False, True)
    rng = np.random.default_rng(3)
    x, w = (em.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((64, 512),
                                                                           (256, 512)))
    jitted = em.jit(lambda x: em.relu(x @ w.mT))
    got = jitted(x)
    assert ("turned round" in _plan(jitted).program.source) == same_bits
    np.testing.assert_array_equal(got.numpy(), np.maximum(x.numpy() @ w.numpy().T, 0))


@needs_blas
def test_numpys_orientation_is_kept_when_asked(monkeypatch):
    monkeypatch.setenv("EXECMODE_GEMM_ORIENTATION", "numpy")
    x, w = em.ones(64, 512), em.ones(256, 512)
    graph = em.jit(lambda x, w: (x @ w.mT) * 1.0).lower(x, w).graph
    program, reason = program_or_reason(graph, "mm")
    assert program is not None, reason
    assert "turned round" not in program.source


@needs_blas
def test_a_matmul_feeding_an_epilogue_calls_blas_in_the_program():
    rng = np.random.default_rng(3)
    w = em.tensor(rng.standard_normal((64, 128)).astype(np.float32))
    b = em.tensor(rng.standard_normal(64).astype(np.float32))
    x = rng.standard_normal((32, 128)).astype(np.float32)
    jitted = em.jit(lambda x: em.relu(x @ w.mT + b))
    for _ in range(3):
        got = jitted(em.tensor(x))
    plan = _plan(jitted)
    # (replays go through the C fast entry, which calls the program's function itself)
    assert plan.program is not None, plan.program_reason
    np.testing.assert_array_equal(got.numpy(), np.maximum(x @ w.numpy().T + b.numpy(), 0))


# --- training steps --------------------------------------------------------------------------

def _train_step(optimizer: str, dtype, seed: int = 4):
    em.random.seed(seed)
    model = em.nn.MLP([96, 64, 32, 3])
    for p in model.parameters():
        p._data = p._data.astype(dtype)
    if optimizer == "sgd":
        opt = em.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    else:
        opt = em.optim.Adam(model.parameters(), lr=0.01)
    return model, opt, mse_train_step(model, opt)


def _state(model, opt) -> list[np.ndarray]:
    arrays = [p.numpy().copy() for p in model.parameters()]
    for value in vars(opt).values():
        for item in value if isinstance(value, list | tuple) else [value]:
            if isinstance(item, dict):
                item = list(item.values())
            for t in item if isinstance(item, list) else [item]:
                if isinstance(t, em.Tensor):
                    arrays.append(t.numpy().copy())
    return arrays


@needs_blas
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_mlp_train_step_is_one_program_call(optimizer, dtype, monkeypatch):
    rng = np.random.default_rng(5)
    x = em.tensor(rng.standard_normal((48, 96)).astype(dtype))
    y = em.tensor(rng.standard_normal((48, 3)).astype(dtype))
    eager_model, eager_opt, eager_step = _train_step(optimizer, dtype)
    model, opt, step = _train_step(optimizer, dtype)
    jitted = em.jit(step)
    # The plan replay of the same graphs (before programs took assigns and BLAS).
    import execmode.jit_driver.compiled_segment as compiled_segment

    replay_model, replay_opt, replay_step = _train_step(optimizer, dtype)
    replayed = em.jit(replay_step)
    steps = 4
    for k in range(steps):
        want = eager_step(x, y)
        got = jitted(x, y)
        with monkeypatch.context() as patched:
            patched.setattr(compiled_segment, "compile_graph",
                             _without_program(compiled_segment))
            replayed(x, y)
        if k == 0:
            plan = _plan(jitted)
            assert plan.program is not None, plan.program_reason
            assert plan.assigns  # the parameters' write-backs are in the program
            assert plan.program.kernels  # it calls the kernels the plan compiled
            calls = plan.program.calls
    assert plan.program.calls == calls + steps - 1  # one native call per step
    assert _plan(replayed).program is None
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    assert_close(got.numpy(), want.numpy(), rtol=rtol, atol=rtol)
    program_state, eager_state = _state(model, opt), _state(eager_model, eager_opt)
    replay_state = _state(replay_model, replay_opt)
    assert len(program_state) == len(eager_state) == len(replay_state) > 6
    for mine, eager, replay in zip(program_state, eager_state, replay_state):
        # As close to eager as the plan replay is (Adam's 1/sqrt(v) magnifies last-bit
        # differences of its tiny second moments).
        scale = max(np.abs(eager - replay).max(), np.finfo(dtype).eps * np.abs(eager).max())
        assert np.abs(mine - eager).max() <= 4 * scale + np.finfo(dtype).tiny


def _three_sgd_steps(x, y):
    """A fresh MLP's jitted SGD step, run three times: (its program's source, the state)."""
    model, opt, step = _train_step("sgd", np.float32)
    jitted = em.jit(step)
    for _ in range(3):
        jitted(x, y)
    return _plan(jitted).program.source, _state(model, opt)


@needs_blas
def test_the_weight_gradients_reach_the_update_contiguous(monkeypatch):
    """Backward's gradient of ``x @ w.T`` is computed as ``g^T @ x``, laid out as ``w``
    (ops/linalg.py, PyTorch's linear): no update kernel reads a gradient across its rows
    (that strided read was a sixth of the MLP training step: benchmarks/bench_peers.py),
    whatever simplify's turning of products decides on this machine (matmul_bits.py), and
    the step's bits do not depend on that decision."""
    import execmode.passes.simplify as simplify_module

    rng = np.random.default_rng(6)
    x = em.tensor(rng.standard_normal((48, 96)).astype(np.float32))
    y = em.tensor(rng.standard_normal((48, 3)).astype(np.float32))
    source, state = _three_sgd_steps(x, y)
    with monkeypatch.context() as patched:
        patched.setattr(simplify_module, "turned_same_bits", lambda *args: False)
        plain_source, plain_state = _three_sgd_steps(x, y)
    with monkeypatch.context() as patched:
        patched.setattr(simplify_module, "turned_same_bits", lambda *args: True)
        turned_source, turned_state = _three_sgd_steps(x, y)
    for text in (source, plain_source, turned_source):
        assert "read across rows" not in text
    assert len(state) == len(plain_state) == len(turned_state) > 6
    for mine, without, turned in zip(state, plain_state, turned_state):
        np.testing.assert_array_equal(mine, without)
        np.testing.assert_array_equal(turned, without)


def _without_program(compiled_segment):
    original = compiled_segment.compile_graph

    def compile_graph(lowered, graph_id, backend=None):
        plan = original(lowered, graph_id, backend)
        plan.program = None
        return plan

    return compile_graph


def test_a_listener_still_steps_through_the_plan():
    from execmode import instrument

    def make():
        return em.tensor(np.linspace(0, 1, 64, dtype=np.float32))

    def update(p, g):
        em.assign(p, p * 0.5 + em.exp(p - g).sum() * 0.001)
        return p * 1.0

    p, eager_p = make(), make()
    jitted = em.jit(lambda g: update(p, g))
    g = em.tensor(np.full(64, 2.0, np.float32))
    jitted(g)
    update(eager_p, g)
    plan = _plan(jitted)
    assert plan.program is not None, plan.program_reason
    calls = plan.program.calls
    kernels = []

    class Listener:
        def on_kernel(self, event):
            kernels.append(event)

    with instrument.listening(Listener()):
        jitted(g)
    update(eager_p, g)
    assert kernels and plan.program.calls == calls  # the plan's steps, one event each
    assert_close(p.numpy(), eager_p.numpy(), rtol=1e-6)  # (a C exp, a float64 sum)


# --- assigns: the plan's semantics, exactly ---------------------------------------------------

def _both(fn, make):
    """Run ``fn`` eagerly on one set of state and jitted (three calls) on another; return
    (eager results, jit results, eager state, jit state, the jitted plan)."""
    eager_state, jit_state = make(), make()
    jitted = em.jit(lambda *a: fn(jit_state, *a))
    eager_out, jit_out = [], []
    for k in range(3):
        g = em.tensor(np.linspace(-1, 1, 40, dtype=np.float32) * (k + 1))
        eager_out.append(fn(eager_state, g).numpy().copy())
        jit_out.append(jitted(g).numpy().copy())
    return eager_out, jit_out, eager_state, jit_state, _plan(jitted)


def _check(fn, make):
    eager_out, jit_out, eager_state, jit_state, plan = _both(fn, make)
    assert plan.program is not None, plan.program_reason
    assert plan.program.calls >= 2
    for a, b in zip(eager_out, jit_out):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(eager_state, jit_state):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def _params():
    return [em.tensor(np.arange(40, dtype=np.float32) / 7), em.tensor(np.ones(40, np.float32))]


def test_parameter_read_after_its_assign_sees_the_new_value():
    def fn(state, g):
        p, q = state
        p -= g * 0.25
        q += p * 2.0       # reads p after its update, in the same step
        return p * q

    _check(fn, _params)


def test_the_same_buffer_assigned_twice_keeps_the_last_value():
    def fn(state, g):
        p, _ = state
        p *= 0.5
        old = p * 1.0
        p += g
        return old + p

    _check(fn, _params)


def test_views_of_parameters_assigned():
    def fn(state, g):
        p, q = state
        v = p.reshape(4, 10)
        v += g.reshape(4, 10) * 3.0
        w = q.mT   # a transposed view: written back through its strides
        w *= g.reshape(5, 8)
        return p * 2.0

    _check(fn, lambda: [em.tensor(np.arange(40, dtype=np.float32) / 7),
                        em.tensor(np.ones((8, 5), np.float32))])


def test_a_sliced_view_assigned_is_left_to_the_plan_with_a_reason():
    def fn(state, g):
        p, q = state
        p[5:15] = g[:10] * 3.0
        return p - q

    eager_out, jit_out, eager_state, jit_state, plan = _both(fn, _params)
    assert plan.program is None and "index_put" in plan.program_reason
    for a, b in zip(eager_state, jit_state):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_value_read_before_the_write_back_keeps_the_old_contents():
    def fn(state, g):
        p, q = state
        before = p * 1.0
        em.assign(q, p + g)   # q's new value depends on p's old one
        em.assign(p, q * 0.5)
        return before

    _check(fn, _params)


def test_an_assigned_input_in_another_layout_is_left_to_the_plan():
    p = em.tensor(np.zeros((30, 20), np.float32))

    def update(g):
        em.assign(p, p + g)
        return g * 2.0

    g = np.ones((30, 20), np.float32)
    graph = em.jit(update).lower(em.tensor(g)).graph
    program, reason = program_or_reason(graph, "update")
    assert program is not None, reason
    by_label = {"p": None, "g": g}
    target = np.zeros((20, 30), np.float32).T  # p's values, transposed memory
    inputs = [target if graph.node(i).label != "g" else by_label["g"] for i in graph.inputs]
    assert program.run(inputs) is None  # a copy would take the write: Plan.run replays
    assert not target.any()
    inputs = [np.zeros((30, 20), np.float32) if graph.node(i).label != "g" else g
              for i in graph.inputs]
    (doubled,) = program.run(inputs)
    np.testing.assert_array_equal(doubled, g * 2)
    np.testing.assert_array_equal(next(a for a in inputs if a is not g), g)


def test_without_blas_a_large_matmul_is_left_to_the_plan_with_the_reason(monkeypatch):
    monkeypatch.setattr(blas, "find", lambda: None)
    monkeypatch.setattr(blas, "reason", lambda: "no BLAS library among the loaded ones")
    a = em.tensor(np.ones((64, 128), np.float32))
    graph = em.jit(lambda a: (a @ a.mT) * 2.0).lower(a).graph
    program, reason = program_or_reason(graph)
    assert program is None
    assert "no BLAS library among the loaded ones" in reason


def test_numpys_blas_is_found_among_the_loaded_libraries():
    found = blas.find()
    if found is None:
        pytest.skip(blas.reason())
    assert found.pointer("s", "gemm") and found.pointer("d", "dot")
    assert found.int_type in ("int", "long long")


def test_one_member_kernels_are_not_named_after_libm_functions():
    """Fuzz 1795574563-9791: a lone exp at node 10 became a kernel named exp10, which is
    also libm's (10 ** x): the program's call never ran the kernel."""
    from fuzz.check import assert_agrees

    assert_agrees('''
import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---

# --- function ---
def f(x, z, k):
    v0 = z / 0.5
    v1 = em.where(z > 0.0, z, k)
    v2 = em.sigmoid(k)
    return v2

F = em.jit(f, passes=[])
# --- call 1 ---
x1 = em.tensor([[-2.25, 3.0, 1.75, -1.0]], dtype=em.float32, requires_grad=True)
z1 = em.tensor([[-0.25, 0.5, 2.75, -0.25]], dtype=em.float32)
k1 = em.tensor([[6, 1, 5, 6]], dtype=em.int64)
out1 = F(x1, z1, k1)
''')
