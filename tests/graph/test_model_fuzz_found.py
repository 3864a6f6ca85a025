"""One test per mismatch class found one level above programs: whole models under jit
(issue 38's model-level fuzzing, and tests/model_fuzz since). Each compares with the same
code run eagerly, after every call."""

from __future__ import annotations

import gc
import sys
import types
import weakref

import numpy as np
import pytest

import execmode as em
from execmode.jit_driver.registry import all_jit_functions, keep_jit_functions


def _same(a, b):
    """Bit-equal values (these tests do the same float32 arithmetic in both modes)."""
    np.testing.assert_array_equal(a.numpy(), b.numpy())


# --- class 1: a .grad written in place --------------------------------------------------

def _clip_and_step_run(jit: bool, clip):
    w = em.tensor([1.0, 2.0, 3.0], requires_grad=True)

    def clip_and_step():
        clip([w])
        with em.no_grad():
            em.assign(w, w - 0.1 * w.grad)

    step = em.jit(clip_and_step) if jit else clip_and_step
    seen = []
    for x in ([0.1, -0.2, 0.3], [-1.0, 2.0, -3.0], [0.5, 0.5, 0.5]):
        (w * em.tensor(x)).sum().backward()     # grads accumulate: no zero_grad
        grad = w.grad
        step()
        seen.append((w.numpy().copy(), w.grad.numpy().copy(), w.grad is grad))
    return seen


def _scale_grads(params):
    for p in params:
        p.grad *= 0.5


@pytest.mark.parametrize("clip", [
    lambda ps: em.nn.utils.clip_grad_norm_(ps, 0.5),
    lambda ps: em.nn.utils.clip_grad_value_(ps, 0.15),
    _scale_grads,
], ids=["clip_grad_norm_", "clip_grad_value_", "grad_times_k"])
def test_a_grad_written_in_place_is_the_callers_current_grad(clip):
    # The replay rebound p.grad to the tensor seen while tracing, holding old values:
    # with accumulation the weights diverged from the second step (issue 38, class 1).
    eager, jitted = _clip_and_step_run(False, clip), _clip_and_step_run(True, clip)
    for (w_e, g_e, same_e), (w_j, g_j, same_j) in zip(eager, jitted):
        np.testing.assert_array_equal(w_j, w_e)
        np.testing.assert_array_equal(g_j, g_e)
        assert same_j == same_e is True


def test_a_returned_grad_is_the_callers_grad_of_this_call():
    w = em.tensor([3.0, -4.0], requires_grad=True)

    @em.jit
    def clip():
        em.nn.utils.clip_grad_norm_([w], 1.0)
        return w.grad

    for values in ([3.0, -4.0], [0.3, 0.4], [6.0, 8.0]):
        w.grad = em.tensor(values)
        given = w.grad
        out = clip()
        assert out is given and w.grad is given
        np.testing.assert_allclose(out.numpy(), np.array(values) / max(
            1.0, np.hypot(*values) + 1e-6), rtol=1e-6)


def test_a_grad_of_another_dtype_retraces():
    w = em.tensor([1.0, 2.0], requires_grad=True)
    clip = em.jit(lambda: em.nn.utils.clip_grad_value_([w], 1.0))
    w.grad = em.tensor([3.0, -0.5])
    clip()
    w.grad = em.tensor([3.0, -0.5], dtype=em.float64)
    clip()
    assert w.grad.dtype == em.float64
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, -0.5])
    assert "float64" in clip.retraces[-1].reason


def test_grads_that_become_one_tensor_retrace():
    # p1.grad is p2.grad: eager scales that tensor twice; a graph traced with two grads
    # writes two inputs, one of which would win.
    def run(jit):
        a, b = em.ones(2, requires_grad=True), em.ones(2, requires_grad=True)
        scale = em.jit(_scale_grads) if jit else _scale_grads
        out = []
        for shared in (False, True, False):
            a.grad = em.tensor([4.0, 8.0])
            b.grad = a.grad if shared else em.tensor([4.0, 8.0])
            scale([a, b])
            out.append((a.grad.numpy().tolist(), b.grad.numpy().tolist()))
        return out, scale

    (eager, _), (jitted, scale) = run(False), run(True)
    assert jitted == eager
    assert "share memory" in scale.retraces[0].reason


def test_a_grad_scaled_in_place_then_set_to_none_traces():
    # Model fuzzer 2-14: `p.grad *= 0.25; opt.step(); model.zero_grad()` in one jitted
    # step raised AttributeError at its trace: the guard on which grads share memory was
    # counted after the step had set them to None.
    def run(jit):
        w = em.tensor([1.0, 2.0], requires_grad=True)

        def step():
            w.grad *= 0.25
            with em.no_grad():
                em.assign(w, w - 0.1 * w.grad)
            w.grad = None

        f = em.jit(step) if jit else step
        seen = []
        for _ in range(3):
            (w * em.tensor([1.0, 3.0])).sum().backward()
            f()
            seen.append((w.numpy().tolist(), w.grad))
        return seen

    assert run(True) == run(False)


@pytest.mark.parametrize("holder", ["optimizer", "module"])
def test_zero_grad_without_set_to_none_zeroes_in_place(holder):
    # PyTorch's semantics: the same tensor, zeroed (a reference held elsewhere sees it).
    model = em.nn.Linear(2, 1)
    opt = em.optim.SGD(model.parameters(), lr=0.1)
    target = opt if holder == "optimizer" else model
    model(em.ones((1, 2))).sum().backward()
    grad = model.weight.grad
    target.zero_grad(set_to_none=False)
    assert model.weight.grad is grad
    np.testing.assert_array_equal(grad.numpy(), [[0.0, 0.0]])
    target.zero_grad()
    assert model.weight.grad is None


def test_a_jitted_zero_grad_without_set_to_none_keeps_the_grad_objects():
    def run(jit):
        em.random.seed(5)
        model = em.nn.Linear(3, 2)
        opt = em.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = em.randn(4, 3)

        def step():
            opt.zero_grad(set_to_none=False)
            model(x).square().mean().backward()
            opt.step()

        run_step = em.jit(step) if jit else step
        model(x).sum().backward()  # grads exist before the first step
        held = model.weight.grad
        for _ in range(3):
            run_step()
        return model.weight.numpy(), model.weight.grad.numpy(), held.numpy()

    for e, j in zip(run(False), run(True)):
        np.testing.assert_allclose(j, e, rtol=1e-6, atol=1e-7)


# --- class 2: Python state written by the function --------------------------------------

class _Stats:
    steps = 0          # a class attribute: `stats.steps += 1` creates the instance's
    history: list = []


def _python_counters_run(jit: bool, write):
    _Stats.steps, _Stats.history = 0, []
    stats, cfg = _Stats(), {"n": 0, "deep": {"a": [{"b": 0}]}}
    box = types.SimpleNamespace(log=[])

    def f(x):
        write(stats, cfg, box)
        return x * 2

    run = em.jit(f) if jit else f
    states = []
    for _ in range(3):
        run(em.ones(2))
        states.append((vars(stats).copy(), _Stats.steps, list(_Stats.history),
                       repr(cfg), list(box.log)))
    return states, run


def _instance_counter(stats, cfg, box):
    stats.steps += 1


def _class_counter(stats, cfg, box):
    _Stats.steps += 1


def _class_list(stats, cfg, box):
    stats.history.append(len(stats.history))


def _dict_counters(stats, cfg, box):
    cfg["n"] += 1
    cfg["deep"]["a"][0]["b"] -= 1
    cfg.setdefault(f"key{len(cfg)}", True)


def _namespace_log(stats, cfg, box):
    box.log.append("called")


@pytest.mark.parametrize("write", [_instance_counter, _class_counter, _class_list,
                                   _dict_counters, _namespace_log])
def test_python_state_written_by_the_function_changes_at_every_call(write):
    # `class Stats: steps = 0` and `stats.steps += 1` counted once under jit: the write
    # created the instance attribute and nothing noticed (issue 38, class 2).
    eager, _ = _python_counters_run(False, write)
    jitted, run = _python_counters_run(True, write)
    assert jitted == eager
    assert run.concrete_functions[0].python_writes  # noticed, and named
    assert run.compile_count == 1                   # the graph still compiles once


_calls = 0


def _count_call():
    global _calls
    _calls += 1


def test_a_helper_writing_a_global_runs_at_every_call():
    global _calls
    _calls = 0

    @em.jit
    def f(x):
        _count_call()
        return x + 1

    for _ in range(3):
        f(em.ones(2))
    assert _calls == 3


def test_a_counter_on_a_jitted_methods_object_counts_every_call():
    class Trainer:
        calls = 0

        @em.jit
        def step(self, x):
            self.calls += 1
            return x * 3

    t = Trainer()
    for _ in range(3):
        t.step(em.ones(2))
    assert t.calls == 3 and Trainer.calls == 0


def test_a_class_attribute_read_is_guarded():
    class Cfg:
        scale = 2.0
        enabled = True

    cfg = Cfg()
    f = em.jit(lambda x: x * cfg.scale if cfg.enabled else x)
    x = em.ones(2)
    _same(f(x), em.full((2,), 2.0))
    Cfg.scale = 3.0
    _same(f(x), em.full((2,), 3.0))
    Cfg.enabled = False
    _same(f(x), x)
    assert any("enabled" in r.reason for r in f.retraces)


def test_a_plain_training_step_writes_no_python_state():
    # The watch must not see writes where there are none: the step replays its plan.
    em.random.seed(0)
    model = em.nn.Sequential(em.nn.Linear(4, 8), em.nn.Dropout(0.1), em.nn.LayerNorm(8),
                             em.nn.Linear(8, 2))
    opt = em.optim.AdamW(model.parameters(), lr=1e-2, amsgrad=True)
    sched = em.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    x, y = em.randn(3, 4), em.randn(3, 2)

    @em.jit
    def step():
        opt.zero_grad()
        loss = em.mse_loss(model(x), y)
        loss.backward()
        em.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    for _ in range(3):
        step()
        sched.step()
    assert [cf.python_writes for cf in step.concrete_functions] == [[]]
    assert step.trace_count == 1


# --- state read through a helper function --------------------------------------------

def _bn_model():
    em.random.seed(0)
    return em.nn.Sequential(em.nn.Conv2d(3, 4, 3, padding=1), em.nn.BatchNorm2d(4),
                            em.nn.Flatten(), em.nn.Linear(4 * 4 * 4, 2))


_helper_model = None


def _global_fwd_bwd(x):
    loss = _helper_model(x).square().mean()
    loss.backward()
    return loss


def _helper_step_run(jit: bool, how: str):
    global _helper_model
    model = _helper_model = _bn_model()
    opt = em.optim.SGD(model.parameters(), lr=0.1)

    def fwd_bwd(x):
        loss = model(x).square().mean()
        loss.backward()
        return loss

    class Trainer:
        def __init__(self):
            self.model = model

        def fwd_bwd(self, x):
            return fwd_bwd(x)

    helper = {"closure": fwd_bwd, "global": _global_fwd_bwd,
              "method": Trainer().fwd_bwd}[how]

    def step(x):
        opt.zero_grad()    # the model is read only inside the helper
        loss = helper(x)
        opt.step()
        return loss

    run = em.jit(step) if jit else step
    rng = np.random.default_rng(0)
    seen = []
    for i in range(4):
        if i == 2:
            model.eval()
        if i == 3:
            model.train()
        loss = run(em.tensor(rng.standard_normal((2, 3, 4, 4)).astype(np.float32)))
        seen.append((loss.numpy(), model[1].running_mean.numpy().copy(),
                     int(model[1].num_batches_tracked.item())))
    return seen, run


@pytest.mark.parametrize("how", ["closure", "global", "method"])
def test_model_eval_read_through_a_helper_retraces(how):
    # The independent model fuzzer: the step called fwd_bwd, which closed over the model;
    # the guards skipped functions, so model.training went unguarded and model.eval()
    # between calls replayed the training graph (batch statistics, running stats updated).
    eager, _ = _helper_step_run(False, how)
    jitted, run = _helper_step_run(True, how)
    for (l_e, m_e, n_e), (l_j, m_j, n_j) in zip(eager, jitted):
        np.testing.assert_allclose(l_j, l_e, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m_j, m_e, rtol=1e-5, atol=1e-6)
        assert n_j == n_e
    assert any("training: True -> False" in r.reason for r in run.retraces)


# --- reductions near the float limits ----------------------------------------------------

@pytest.mark.parametrize("backend", [None, "interpreter"])
def test_a_float32_mean_whose_partial_sums_overflow_is_inf_as_eagerly(backend):
    # NumPy sums float32 in float32: 3e38 + 3e38 overflows, so the mean is inf; the
    # kernels summed in float64 and returned 1e38 (issue 38; codegen/eager_sum.py).
    def loss(x, w):
        return em.mean(x * w), em.sum(x * w, axis=0)

    x = em.tensor([[3e38, 1.0], [3e38, -2.0], [-3e38, 0.5]])
    w = em.tensor([1.0, 1.0])
    with np.errstate(all="ignore"):
        want = [t.numpy() for t in loss(x, w)]
        got = [t.numpy() for t in em.jit(loss, backend=backend)(x, w)]
    assert np.isinf(want[0]) and np.isinf(want[1][0])
    for g, e in zip(got, want):
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("backend", ["c", "numpy", "interpreter"])
def test_the_issues_float32_mean_is_inf_under_jit_as_eagerly(backend):
    # issue 38's own case: mean([3e38, 3e38, -3e38]) in float32 is inf eagerly (NumPy's
    # float32 partial sums overflow) and was 1e38 under jit (float64 accumulation).
    x = em.tensor([3e38, 3e38, -3e38])
    with np.errstate(all="ignore"):
        want = em.mean(x).numpy()
        got = em.jit(lambda x: em.mean(x), backend=backend)(x).numpy()
        fused = em.jit(lambda x: em.mean(x * 1.0 + 0.0), backend=backend)(x).numpy()
    assert x.dtype == em.float32 and np.isposinf(want)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(fused, want)


# --- execmode explain ---------------------------------------------------------------------

def test_explain_keeps_the_jitted_functions_a_script_dropped():
    # `execmode explain` listed the live functions only: a step jitted inside a helper
    # was garbage before the report (1 of 4 steps shown, its graph break missing).
    def make(i):
        @em.jit
        def step(x):
            return x * 2 if bool(x.sum() > 0) else x
        step.name = f"step{i}"
        return step

    with keep_jit_functions():
        for i in range(4):
            make(i)(em.ones(3))
        gc.collect()
        names = [f.name for f in all_jit_functions()]
    assert [n for n in names if n.startswith("step")] == ["step0", "step1", "step2", "step3"]


# --- the write watch's false positives ---------------------------------------------------

def _cnn_step():
    """benchmarks/bench_torch_programs.py's CNN step, smaller: conv2d, max pooling,
    flatten, linear, cross entropy, SGD with momentum."""
    em.random.seed(3)
    nn = em.nn
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 10))
    opt = em.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = em.randn(2, 1, 8, 8)
    y = em.tensor(np.array([1, 7]))

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = em.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, x, y


def _unpacked_wheel(tmp_path, name: str, with_record: bool):
    """A package on sys.path outside the site directories (PyTorch carried as an unpacked
    wheel), with the .dist-info an installer leaves next to it, or without (a person's
    own code)."""
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text(
        "import gc, weakref\n"
        "_cache_entry_0 = object()\n"
        "class _Compiled:\n"
        "    pass\n"
        "def compile_something():\n"
        "    # torch dynamo's CleanupHook: a global of its own, deleted when the compiled\n"
        "    # code is garbage (whenever the collector runs, a trace included)\n"
        "    code = _Compiled()\n"
        "    code.cycle = code\n"
        "    weakref.finalize(code, globals().pop, '_cache_entry_0', None)\n")
    if with_record:
        info = tmp_path / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (info / "RECORD").write_text(f"{name}/__init__.py,,\n{name}-1.0.dist-info/METADATA,,\n"
                                     f"{name}-1.0.dist-info/RECORD,,\n")


def test_a_package_installed_outside_the_site_dirs_is_no_user_state(tmp_path, monkeypatch):
    # bench_torch_programs' CNN step under em.jit, with PyTorch found through PYTHONPATH
    # (not in this interpreter's site-packages): its modules were walked as the user's
    # state (past 20,000 containers), and a global dynamo's garbage collection deleted
    # during the trace read as a write, so the step re-ran its Python at every call (1.9x
    # slower than eager).
    import importlib

    from execmode.graph.python_writes import is_library_module

    _unpacked_wheel(tmp_path, "em_fake_framework", with_record=True)
    _unpacked_wheel(tmp_path, "em_fake_user_code", with_record=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    framework = importlib.import_module("em_fake_framework")
    user_code = importlib.import_module("em_fake_user_code")
    try:
        assert is_library_module("em_fake_framework")
        assert not is_library_module("em_fake_user_code")
        step, x, y = _cnn_step()

        def bench_step(x, y):
            _ = framework  # the benchmark's globals hold torch
            gc.collect()   # the collector runs during the trace
            return step(x, y)

        jitted = em.jit(bench_step)
        gc.collect()
        gc.disable()  # the entry dies inside the trace, as it did in the benchmark
        try:
            framework.compile_something()
            jitted(x, y)
        finally:
            gc.enable()
        assert "_cache_entry_0" not in vars(framework)
        jitted(x, y)
        assert [cf.python_writes for cf in jitted.concrete_functions] == [[]]
        assert jitted.trace_count == 1
        del user_code
    finally:
        for name in ("em_fake_framework", "em_fake_user_code"):
            sys.modules.pop(name, None)


_dynamo_owned = {}


def test_dunder_globals_that_die_during_a_trace_are_no_write():
    # torch dynamo puts __builtins_dict___0 / __compiled_fn_1 into the globals of code it
    # compiles (this module's, for a function of it) and deletes them when that code is
    # garbage: the interpreter's and tools' names, never a person's counter.
    step, x, y = _cnn_step()

    def helper_step(x, y):
        _dynamo_owned.get("unused")  # this module's globals are walked (a helper's)
        gc.collect()                 # dynamo's cleanup runs inside the trace
        return step(x, y)

    class _Code:
        pass

    code = _Code()
    code.cycle = code
    globals()["__builtins_dict___0"] = {}
    weakref.finalize(code, globals().pop, "__builtins_dict___0", None)
    del code
    jitted = em.jit(helper_step)
    gc.disable()
    try:
        jitted(x, y)
    finally:
        gc.enable()
    assert "__builtins_dict___0" not in globals()
    jitted(x, y)
    assert [cf.python_writes for cf in jitted.concrete_functions] == [[]]
    assert jitted.trace_count == 1
