"""The CPU runtime's contract with the plan: ``fn(*args)`` and ``run_into(out, *args)``,
cached pointers that never go stale, output buffers reused only when nobody holds them,
in-place writes, compile events, and one compiler call per graph."""

from __future__ import annotations

import os

import numpy as np
import pytest
from helpers import assert_close, mse_train_step
from kernel_helpers import call_args, compile_cases, fused_case

import execmode as em
from execmode import instrument
from execmode.codegen import kernel_factory_for
from execmode.codegen.lower import lower_fused


def _kernel(fn, *arrays, backend="c"):
    g, f = fused_case(fn, *arrays)
    (kernel,) = compile_cases([(g, f)], backend)
    return kernel, (lambda *xs: call_args(f, g, list(xs)))


@pytest.fixture(params=["c", "interpreter"])
def backend(request):
    return request.param


def test_call_and_run_into_agree(backend):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(4, dtype=np.float32)
    k, args = _kernel(lambda x, b: em.tanh(x * 0.1) + b, x, b, backend=backend)
    want = np.tanh(x * np.float32(0.1)) + b
    assert_close(k(*args(x, b)), want)
    out = np.empty((3, 4), np.float32)
    assert k.run_into(out, *args(x, b)) is out
    assert_close(out, want)


def test_inputs_changed_in_place_are_read_again(backend):
    """Pointers are cached per array object; the data behind them is read at every call
    (weights updated in place by an optimizer step)."""
    x = np.ones(5, np.float32)
    w = np.full(5, 2.0, np.float32)
    k, args = _kernel(lambda x, w: x * w, x, w, backend=backend)
    assert_close(k(*args(x, w)), np.full(5, 2.0, np.float32))
    w[...] = 3.0
    assert_close(k(*args(x, w)), np.full(5, 3.0, np.float32))
    assert_close(k(*args(x, np.full(5, 4.0, np.float32))), np.full(5, 4.0, np.float32))


def test_non_contiguous_wrong_dtype_and_scalar_inputs(backend):
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    k, args = _kernel(lambda x: x * 2 + 1, np.zeros((5, 4), np.float32), backend=backend)
    transposed = x.T                   # F-ordered view
    assert_close(k(*args(transposed)), transposed * 2 + 1)
    strided = np.arange(40, dtype=np.float32).reshape(5, 8)[:, ::2]
    assert_close(k(*args(strided)), strided * 2 + 1)
    s, sargs = _kernel(lambda s: s + 1, np.array(1.0, np.float32), backend=backend)
    assert_close(s(*sargs(np.float32(2.5))), np.array(3.5, np.float32))


def test_outputs_held_by_someone_are_never_overwritten(backend):
    x = np.arange(4, dtype=np.float32)
    k, args = _kernel(lambda x: x + 1, x, backend=backend)
    first = k(*args(x))
    second = k(*args(x + 10))
    view = second[1:]
    third = k(*args(x + 100))
    assert_close(first, x + 1)
    assert_close(second, x + 11)
    assert_close(view, (x + 11)[1:])
    assert_close(third, x + 101)
    del first
    fourth = k(*args(x + 1000))     # may reuse first's buffer: nobody holds it
    assert_close(fourth, x + 1001)
    assert_close(third, x + 101)


def test_output_buffer_is_reused_when_free():
    x = np.arange(4, dtype=np.float32)
    k, args = _kernel(lambda x: x * 3, x)
    ptr = k(*args(x)).ctypes.data
    assert k(*args(x)).ctypes.data == ptr   # the previous result was dropped


def test_run_into_in_place_over_an_input():
    """The memory plan may hand an input's buffer in as the output: the kernel is lowered
    with ``inplace`` (no restrict on the pair) and reads each point before writing it."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    g, f = fused_case(lambda x, y: em.tanh(x) * x + y * x, x, y)
    kernel = lower_fused(f, g.node_map(), inplace_input=f.inputs[0])
    assert kernel.inplace
    from execmode.codegen.c_runtime import build_library, make_kernel
    from execmode.codegen.render_c import CRenderer
    from execmode.codegen.toolchain import get_toolchain

    assert "restrict x" not in CRenderer().kernel(kernel)
    k = make_kernel(kernel, build_library([kernel], get_toolchain()))
    want = np.tanh(x) * x + y * x
    buf = x.copy()
    k.run_into(buf, *call_args(f, g, [buf, y]))
    assert_close(buf, want)


def test_wrong_output_is_refused():
    x = np.arange(4, dtype=np.float32)
    k, args = _kernel(lambda x: x + 1, x)
    with pytest.raises(ValueError, match="out must be"):
        k.run_into(np.empty(4, np.float64), *args(x))


class _Events:
    def __init__(self):
        self.events = []

    def on_event(self, event):
        self.events.append(event)


def test_compile_events_carry_the_source():
    x = np.ones((8, 8), np.float32)
    g, f = fused_case(lambda x: em.exp(x) * 2, x)
    with instrument.listening(_Events()) as listener:
        factory = kernel_factory_for(g, "events:0", "c")
    (event,) = [e for e in listener.events if e.kind == "compile"]
    for name in instrument.EVENT_KINDS["compile"]:
        assert name in event.data, name
    assert event.graph_id == "events:0" and event.what == "kernels"
    assert event.language == "c" and event.backend == "c"
    (kernel,) = event.kernels  # one unit, its kernel a child: one compile time, not per kernel
    assert kernel["kernel"] == "k0" and kernel["member_ops"] == ["exp", "multiply"]
    assert "em_exp_f32" in kernel["source"] and "/* %" in kernel["source"]
    assert event.end_ns - event.start_ns == event.compile_ns
    assert factory(f)[1] == "c"


def test_all_kernels_of_a_graph_share_one_library():
    """One translation unit (one compiler call) per graph."""
    model = em.nn.MLP([16, 8, 4])
    opt = em.optim.SGD(model.parameters(), lr=0.1)
    step = em.jit(mse_train_step(model, opt), backend="c")

    step(em.randn(4, 16), em.randn(4, 4))
    plan = step.concrete_functions[0].segments[0].compiled.plan
    compiled = [s.fn for s in plan.steps if getattr(s.fn, "library_path", None)]
    assert len(compiled) >= 3
    paths = {k.library_path for k in compiled}
    assert len(paths) == 1
    assert os.path.exists(paths.pop())
