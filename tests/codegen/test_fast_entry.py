"""The C fast entry of jitted replays (codegen/fast_entry.py): same results and the same
misses as the generated Python replay and as eager, only cheaper."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from helpers import assert_close

import execmode as em
from execmode import instrument
from execmode.codegen import extension_build, fast_entry
from execmode.jit_driver.fastcall import MISS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module", autouse=True)
def extension():
    module = fast_entry.load_extension()
    if module is None:
        pytest.skip(f"no fast-entry extension here: {fast_entry.extension_status()['reason']}")
    # These tests read the C entry the jitted call takes, whatever EXECMODE_JIT_REPLAY
    # the suite runs under (jit_driver/paths.py).
    from execmode.jit_driver import paths

    with paths.pinned(replay="auto"):
        yield module


def _is_c_entry(fast) -> bool:
    return type(fast).__name__ == "FastEntry"


def _fancy(a, b, c, d):
    e = a + b
    f = c + d
    return e + f


def _tensors(n, shape=(1,), dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [em.tensor(rng.standard_normal(shape).astype(dtype)) for _ in range(n)]


def _jitted_fancy():
    jf = em.jit(_fancy)
    args = _tensors(4)
    jf(*args)  # trace and compile
    assert _is_c_entry(jf._fast), jf._fast
    return jf, args


def test_fancy_func_matches_eager_and_the_python_replay():
    jf, args = _jitted_fancy()
    for seed in range(3):
        args = _tensors(4, seed=seed)
        got = jf(*args)
        assert type(got) is em.Tensor and got.requires_grad is False
        assert got.dtype == np.float32 and got.shape == (1,)
        assert_close(got.numpy(), _fancy(*args).numpy())
        assert_close(got.numpy(), jf._fast.python(*args).numpy())
        assert got.grad_fn is None and got.grad is None


@pytest.mark.parametrize("change", ["shape", "dtype", "class", "requires_grad", "count"])
def test_mismatched_arguments_miss_and_still_give_correct_results(change):
    jf, args = _jitted_fancy()
    entry = jf._fast
    other = list(args)
    if change == "shape":
        other[1] = _tensors(1, shape=(3,))[0]
    elif change == "dtype":
        other[2] = _tensors(1, dtype=np.float64)[0]
    elif change == "class":
        class MyTensor(em.Tensor):
            __slots__ = ()

        t = object.__new__(MyTensor)
        t._data, t.requires_grad = other[3]._data.copy(), False
        other[3] = t
    elif change == "requires_grad":
        other[0] = em.tensor(other[0].numpy(), requires_grad=True)
    else:
        assert entry(*args[:3]) is MISS
        assert entry(*args, args[0]) is MISS
        assert entry(*args[:3], d=args[3]) is MISS
        return
    assert entry(*other) is MISS
    assert_close(jf(*other).numpy(), _fancy(*other).numpy())
    # A non-tensor where a tensor was traced misses too.
    assert entry(args[0], args[1], 1.0, args[3]) is MISS


@pytest.mark.parametrize("c_entry", ["1", "0"])
def test_a_default_argument_left_out_or_given_misses_in_both_replays(monkeypatch, c_entry):
    """Another argument count is a new signature, never a TypeError from the replay."""
    monkeypatch.setenv("EXECMODE_FAST_ENTRY", c_entry)

    def f(x, y=None):
        return em.tanh(x) * 2.0 if y is None else em.tanh(x) * y

    jf = em.jit(f)
    x, y = _tensors(2, shape=(3,))
    for args in [(x,), (x, y), (x,), (x, y)]:
        assert_close(jf(*args).numpy(), f(*args).numpy())
    assert _is_c_entry(jf._fast) == (c_entry == "1")
    assert jf._fast(x) is MISS and jf._fast(x, y, y) is MISS


def test_a_layout_only_c_checks_goes_to_the_python_replay():
    """A strided view of the right shape and dtype: the Python replay copies it into the
    kernel's layout, so the C entry hands the call over instead of missing."""
    jf = em.jit(_fancy)
    args = _tensors(4, shape=(3,))
    jf(*args)
    assert _is_c_entry(jf._fast)
    strided = em.tensor(np.arange(6, dtype=np.float32))
    view = object.__new__(em.Tensor)
    view._data, view.requires_grad = strided._data[::2], False
    got = jf._fast(view, *args[1:])
    assert got is not MISS
    assert_close(got.numpy(), _fancy(view, *args[1:]).numpy())


def test_static_arguments_are_checked_by_type_and_value():
    def f(x, n, mode):
        y = x * n + 1.0
        return y * 2.0 if mode == "double" else y

    jf = em.jit(f)
    x = _tensors(1, shape=(4,))[0]
    assert_close(jf(x, 3, "double").numpy(), f(x, 3, "double").numpy())
    entry = jf._fast
    assert _is_c_entry(entry)
    assert_close(entry(x, 3, "double").numpy(), f(x, 3, "double").numpy())
    assert entry(x, 4, "double") is MISS
    assert entry(x, 3.0, "double") is MISS   # 3.0 keys another signature than 3
    assert entry(x, True, "double") is MISS
    assert entry(x, 3, "single") is MISS
    for n, mode in [(4, "double"), (3.0, "double"), (3, "single")]:
        assert_close(jf(x, n, mode).numpy(), f(x, n, mode).numpy())


def test_a_listener_makes_it_fall_back_so_kernel_events_are_emitted():
    jf, args = _jitted_fancy()
    entry = jf._fast

    class Listener:
        def __init__(self):
            self.events, self.steps = [], []

        def on_kernel(self, event):
            self.events.append(event)

    listener = Listener()
    with instrument.listening(listener):
        assert entry(*args) is MISS
        got = jf(*args)
    assert_close(got.numpy(), _fancy(*args).numpy())
    assert [e.kind for e in listener.events] == ["kernel"]
    assert listener.events[0].kernel == jf.concrete_functions[0].segments[0].compiled \
        .plan.steps[0].name

    class Stepper:
        def before_kernel(self, plan, index, values):
            pass

    with instrument.listening(Stepper()):
        assert entry(*args) is MISS
    assert entry(*args) is not MISS


def test_events_other_than_kernel_runs_keep_the_fast_entry():
    jf, args = _jitted_fancy()
    entry = jf._fast

    class Listener:
        def on_event(self, event):
            pass

    with instrument.listening(Listener()):
        assert entry(*args) is not MISS


def test_the_kernel_clock_keeps_the_fast_entry_and_times_its_step():
    jf, args = _jitted_fancy()
    entry = jf._fast
    clock = jf.concrete_functions[0].segments[0].compiled.plan.clock

    class Timer:
        wants_kernel_times = True

    before = clock.step_totals(0)[0]
    with instrument.listening(Timer()):
        for _ in range(3):
            assert entry(*args) is not MISS
    calls, ns, low, high, _ = clock.step_totals(0)
    assert calls == before + 3 and ns >= 3 * low > 0 and high >= low
    assert clock.run_totals()[0] >= 3
    entry(*args)  # the clock stopped with its last listener: nothing more is counted
    assert clock.step_totals(0)[0] == before + 3


def test_disable_jit_no_grad_and_tracing_miss():
    jf, args = _jitted_fancy()
    entry = jf._fast
    with em.disable_jit():
        assert entry(*args) is MISS
        assert_close(jf(*args).numpy(), _fancy(*args).numpy())
    with em.no_grad():
        assert entry(*args) is MISS
        assert_close(jf(*args).numpy(), _fancy(*args).numpy())
    # Called inside another trace: the entry misses and the Python body inlines.
    outer = em.jit(lambda a, b, c, d: jf(a, b, c, d) * 2.0)
    assert_close(outer(*args).numpy(), _fancy(*args).numpy() * 2)
    assert entry(*args) is not MISS


def test_outputs_are_fresh_while_the_caller_keeps_them():
    jf, _ = _jitted_fancy()
    kept = []
    for seed in range(6):
        args = _tensors(4, seed=seed)
        kept.append((jf(*args), _fancy(*args).numpy()))
    assert len({id(t._data) for t, _ in kept}) == len(kept)
    for got, want in kept:
        assert_close(got.numpy(), want)
    # A result nobody holds any more is reused (the OutputPool rule), one still held never.
    args = _tensors(4)
    first = jf(*args)
    address = first._data.ctypes.data
    del first
    second = jf(*args)
    assert second._data.ctypes.data == address
    third = jf(*args)
    assert third._data.ctypes.data != address
    assert_close(second.numpy(), third.numpy())


def test_several_outputs_constants_and_nested_structures():
    def f(a, b):
        return {"sum": a + b, "pair": (a * b, 7), "neg": -a}

    jf = em.jit(f)
    a, b = _tensors(2, shape=(2, 3))
    jf(a, b)
    got = jf(a, b)
    assert jf._fast(a, b) is not MISS
    want = f(a, b)
    assert got["pair"][1] == 7
    for key in ("sum", "neg"):
        assert_close(got[key].numpy(), want[key].numpy())
    assert_close(got["pair"][0].numpy(), want["pair"][0].numpy())


def test_a_whole_graph_program_runs_through_the_entry():
    def power(x, y):
        result = em.eye(6, dtype=em.float32)
        for _ in range(y):
            result = em.matmul(x, result)
        return result

    jf = em.jit(power)
    x = em.tensor(np.random.default_rng(0).uniform(0, 0.3, (6, 6)).astype(np.float32))
    jf(x, 5)
    plan = jf.concrete_functions[0].segments[0].compiled.plan
    assert plan.program is not None and _is_c_entry(jf._fast)
    for scale in (1.0, 2.0):
        xs = em.tensor(x.numpy() * scale)
        assert_close(jf(xs, 5).numpy(), power(xs, 5).numpy(), rtol=1e-5)


def test_captured_tensors_are_read_by_reference():
    w = em.tensor(np.arange(4, dtype=np.float32))

    def f(x):
        return x * w + 1.0

    jf = em.jit(f)
    x = _tensors(1, shape=(4,))[0]
    jf(x)
    assert _is_c_entry(jf._fast)
    w._data = np.full(4, 3.0, np.float32)
    assert_close(jf(x).numpy(), f(x).numpy())
    # Another dtype behind the captured tensor: the Python replay handles it.
    w._data = np.full(4, 2.0, np.float64)
    assert_close(jf._fast(x).numpy(), jf._fast.python(x).numpy())


def test_large_kernels_release_the_gil_and_run_from_threads():
    jf = em.jit(lambda x, y: em.tanh(x * 0.5) + y)
    xs = [_tensors(2, shape=(1 << 15,), seed=s) for s in range(4)]
    jf(*xs[0])
    assert _is_c_entry(jf._fast)
    results = [None] * len(xs)

    def work(i):
        for _ in range(20):
            results[i] = jf(*xs[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (x, y), got in zip(xs, results):
        assert_close(got.numpy(), np.tanh(x.numpy() * 0.5) + y.numpy(), rtol=1e-5, atol=1e-6)


def test_switched_off_or_without_headers_the_python_replay_is_used(monkeypatch):
    monkeypatch.setenv("EXECMODE_FAST_ENTRY", "0")
    jf = em.jit(_fancy)
    args = _tensors(4)
    jf(*args)
    assert callable(jf._fast) and hasattr(jf._fast, "__source__")
    monkeypatch.delenv("EXECMODE_FAST_ENTRY")
    monkeypatch.setattr(fast_entry, "_loaded", {})
    monkeypatch.setattr(extension_build.sysconfig, "get_paths", lambda: {"include": "/nowhere"})
    jf = em.jit(_fancy)
    jf(*args)
    assert not _is_c_entry(jf._fast)
    assert "Python headers" in fast_entry.extension_status()["reason"]
    assert_close(jf(*args).numpy(), _fancy(*args).numpy())


SCRIPT = """
import json
import numpy as np
import execmode as em
from execmode.codegen import extension_build, fast_entry

def fancy(a, b, c, d):
    return (a + b) + (c + d)

f = em.jit(fancy)
args = [em.tensor(np.full(1, i, np.float32)) for i in range(4)]
values = [f(*args).numpy().tolist() for _ in range(3)]
status = fast_entry.extension_status()
print(json.dumps({"values": values, "entry": type(f._fast).__name__, "ok": status["ok"],
                  "hit": status["cache_hit"], "reason": status["reason"]}))
"""


def _run(cache_dir, **extra):
    # The child takes the C entry it reports on, whatever replay the suite runs under.
    env = dict(os.environ, EXECMODE_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT,
               EXECMODE_JIT_REPLAY="auto", **extra)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Slow tier: a second process.
@pytest.mark.slow
def test_a_second_process_finds_the_extension_in_the_disk_cache(tmp_path):
    first = _run(tmp_path)
    second = _run(tmp_path)
    assert (first["ok"], first["hit"], first["entry"]) == (True, False, "FastEntry")
    assert (second["ok"], second["hit"], second["entry"]) == (True, True, "FastEntry")
    assert first["values"] == second["values"] == [[6.0]] * 3
    assert [f for f in os.listdir(tmp_path / "extensions") if f.startswith(".tmp")] == []


def test_without_a_compiler_everything_still_works(tmp_path):
    result = _run(tmp_path, CC="/nonexistent/cc")
    assert result["values"] == [[6.0]] * 3
    assert result["entry"] == "function" and not result["ok"]
    assert "no C compiler" in result["reason"]
    assert not (tmp_path / "extensions").exists() or not os.listdir(tmp_path / "extensions")


# --- call mode: a plan of one NumPy ufunc step (a jitted single op) ------------------------

def _bits(t):
    return t.numpy().view(np.uint8) if isinstance(t, em.Tensor) else np.asarray(t)


def test_a_single_op_gets_the_entry_with_numpys_exact_results():
    a, b = _tensors(2, shape=(3, 5))
    for fn in (lambda x, y: x + y, lambda x, y: x / y, lambda x, y: em.maximum(x, y)):
        jf = em.jit(fn)
        jf(a, b)
        assert _is_c_entry(jf._fast)
        got = jf._fast(a, b)
        assert got is not MISS and type(got) is em.Tensor and got.requires_grad is False
        np.testing.assert_array_equal(_bits(got), _bits(fn(a, b)))  # bit for bit


def test_call_mode_literals_captures_and_layouts():
    w = em.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    scaled = em.jit(lambda x: x * 2.5)
    captured = em.jit(lambda x: x - w)
    x = _tensors(1, shape=(2, 3))[0]
    for jf, fn in ((scaled, lambda x: x * 2.5), (captured, lambda x: x - w)):
        jf(x)
        assert _is_c_entry(jf._fast)
        assert_close(jf(x).numpy(), fn(x).numpy())
        # A transposed view of the right shape: a ufunc reads any layout.
        view = em.tensor(np.arange(6, dtype=np.float32).reshape(3, 2)).T
        got = jf._fast(view)
        assert got is not MISS
        assert_close(got.numpy(), fn(view).numpy())
    w._data = np.full((2, 3), 4.0, np.float32)  # read by reference at every call
    assert_close(captured(x).numpy(), (x - w).numpy())
    w._data = np.full((2, 3), 4.0, np.float64)  # another dtype: the Python replay
    assert_close(captured._fast(x).numpy(), captured._fast.python(x).numpy())


def test_call_mode_misses_like_the_python_replay_and_errors_stay_eagers():
    jf = em.jit(lambda x, y: x ** y)
    x = em.tensor(np.array([2, 3], np.int64))
    y = em.tensor(np.array([1, 2], np.int64))
    assert_close(jf(x, y).numpy(), np.array([2, 9]))
    entry = jf._fast
    assert entry(x, _tensors(1, shape=(2,))[0]) is MISS  # another dtype
    with em.no_grad():
        assert entry(x, y) is MISS
    negative = em.tensor(np.array([1, -1], np.int64))
    with pytest.raises(Exception) as jitted:
        jf(x, negative)
    with pytest.raises(Exception) as eager:
        x ** negative
    assert type(jitted.value) is type(eager.value)


def test_one_tensor_passed_twice_gets_the_entry_and_an_identity_check():
    x, y = _tensors(2, shape=(4,))
    for fn in (lambda a, b: a + b, lambda a, b: a * b + 1.0):  # call mode, a kernel
        jf = em.jit(fn)
        jf(x, x)
        entry = jf._fast
        assert _is_c_entry(entry)
        assert_close(entry(x, x).numpy(), fn(x, x).numpy())
        assert entry(x, y) is MISS and entry(y, x) is MISS
        assert_close(jf(x, y).numpy(), fn(x, y).numpy())  # another signature: a retrace


def test_the_jitted_call_is_c_and_keeps_every_path():
    # fast_entry.install_call: JitFunction.__call__ in C, once a fast entry was made.
    from execmode.jit_driver.jit import JitFunction

    jf = em.jit(lambda a, b: a * b + 1.0)
    a, b = _tensors(2, shape=(3,))
    want = a.numpy() * b.numpy() + 1.0
    np.testing.assert_array_equal(jf(a, b).numpy(), want)   # trace, compile, install
    assert type(JitFunction.__dict__["__call__"]).__name__ == "JitCall"
    assert JitFunction.__call__.__name__ == "__call__"
    np.testing.assert_array_equal(jf(a, b).numpy(), want)   # the fast entry
    np.testing.assert_array_equal(jf(a, b=b).numpy(), want)  # keywords: the Python __call__
    np.testing.assert_array_equal(jf.__call__(a, b).numpy(), want)  # a bound method
    c, d = _tensors(2, shape=(5,), seed=1)                    # a miss: a new signature
    np.testing.assert_array_equal(jf(c, d).numpy(), c.numpy() * d.numpy() + 1.0)
    assert len(jf.concrete_functions) == 3  # (a, b), (a, b=b), the new shape
    with pytest.raises(em.ShapeError):                        # errors propagate as before
        jf(a, d)
    with em.disable_jit():
        np.testing.assert_array_equal(jf(a, b).numpy(), want)
