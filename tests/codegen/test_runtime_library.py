"""The runtime library of float32 transcendentals (codegen/runtime_library.py): a long
kernel calls it with the bits its inlined helpers give, it is built once per machine and
source and reused, and rebuilt when its source changes or its file fails the trust checks."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_helpers import call_args, fused_case

import execmode as em
from execmode.codegen import runtime_library
from execmode.codegen.c_runtime import build_library, make_kernel
from execmode.codegen.cache_trust import CacheWarning
from execmode.codegen.lower import lower_fused
from execmode.codegen.render_c import CRenderer
from execmode.codegen.toolchain import NoCompiler, get_toolchain


@pytest.fixture(scope="module")
def toolchain():
    try:
        chain = get_toolchain()
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")
    if not runtime_library.usable(chain):
        pytest.skip("the compiler honours no omp declare simd: kernels inline every helper")
    return chain


def _every_helper_twice(x):
    a = em.abs(x)
    return (em.tanh(x) + em.exp(x * 0.5) + em.log(a + 0.5) + em.erf(x) + em.expm1(x * 0.25)
            + em.log1p(a) + em.tanh(x * 3.0) + em.exp(-a) + em.log(a + 2.0) + em.erf(x * 0.5)
            + em.expm1(-a) + em.log1p(a * 0.5))


def _special_values(n=4099):
    """Random values and every edge case the helpers select on, at positions both the
    vector loop and its scalar remainder reach (n is not a multiple of 16)."""
    x = np.random.default_rng(7).standard_normal(n).astype(np.float32) * 4
    edges = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 88.8, -104.0, 100.0,
                      -100.0, 10.0, 0.55, -0.55, 3.92, 1e-8], np.float32)
    x[:len(edges)] = edges
    x[-len(edges):] = edges
    x[n // 2:n // 2 + len(edges)] = edges
    return x


def test_a_long_kernel_calls_the_library_and_gets_the_inlined_bits(toolchain, monkeypatch):
    x = _special_values()
    graph, fused = fused_case(_every_helper_twice, x)
    kernel = lower_fused(fused, graph.node_map(), graph_id="runtime")
    called = build_library([kernel], toolchain)
    assert runtime_library.used(called.source) == runtime_library.HELPERS
    assert "extern float em_rt_tanh_f32(" in called.source

    monkeypatch.setattr(runtime_library, "INLINE_MAX", 10 ** 6)
    inlined = build_library([kernel], toolchain)
    assert runtime_library.used(inlined.source) == ()
    assert inlined.path != called.path

    args = call_args(fused, graph, [x])
    got = make_kernel(kernel, called)(*args).copy()
    want = make_kernel(kernel, inlined)(*args).copy()
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))


def test_a_short_kernel_inlines_its_helpers_beside_a_long_one(toolchain):
    x = _special_values(64)
    graph, fused = fused_case(lambda x: em.tanh(x) * em.exp(x), x, label="short")
    short = lower_fused(fused, graph.node_map(), graph_id="runtime")
    assert runtime_library.MARK not in CRenderer().translation_unit([short], runtime=True)
    graph, fused = fused_case(_every_helper_twice, x, label="long")
    long = lower_fused(fused, graph.node_map(), graph_id="runtime")
    source = CRenderer().translation_unit([long, short], runtime=True)
    # The long kernel's names mean the library's from just before it to just after it.
    redirect = source.index("#define em_tanh_f32 em_rt_tanh_f32")
    undo = source.index("#undef em_tanh_f32")
    assert redirect < source.index(f"void {long.name}(") < undo
    assert undo < source.index(f"void {short.name}(")
    assert source.count("#define em_tanh_f32 em_rt_tanh_f32") == 1


def test_built_once_reused_and_rebuilt_when_its_source_changes(toolchain, tmp_path,
                                                               monkeypatch):
    monkeypatch.setenv("EXECMODE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(runtime_library._State, "built", {})
    helpers = CRenderer().helpers()
    path = runtime_library.ensure_built(toolchain, helpers, "tanh")
    assert runtime_library.build_record(toolchain, helpers, "tanh")[0] is False  # compiled
    assert runtime_library.ensure_built(toolchain, helpers, "tanh") == path

    # A new process (this one's memory of the build forgotten) finds it in the cache.
    monkeypatch.setattr(runtime_library._State, "built", {})
    assert runtime_library.ensure_built(toolchain, helpers, "tanh") == path
    assert runtime_library.build_record(toolchain, helpers, "tanh")[0] is True  # reused

    # A changed prelude is another library: a new name, compiled; the old one stays.
    changed = helpers + "\n/* a changed helper */\n"
    new_path = runtime_library.ensure_built(toolchain, changed, "tanh")
    assert new_path != path
    assert runtime_library.build_record(toolchain, changed, "tanh")[0] is False

    # A library whose bytes no longer match its manifest is never loaded: rebuilt.
    with open(path, "r+b") as f:
        f.seek(100)
        f.write(b"\0" * 16)
    monkeypatch.setattr(runtime_library._State, "built", {})
    with pytest.warns(CacheWarning, match="does not match"):
        assert runtime_library.ensure_built(toolchain, helpers, "tanh") == path
    assert runtime_library.build_record(toolchain, helpers, "tanh")[0] is False
    cdll = runtime_library.load(toolchain, helpers, ["tanh"])[0]
    assert cdll.em_rt_tanh_f32 is not None
