"""Translation units of bounded size compiled in parallel (codegen/units.py), and long
fused chains split into bounded kernels (passes/fuse.py): the same libraries whatever
the thread count, and the same bits as one unit and one kernel."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from kernel_helpers import call_args, fused_case

import execmode as em
from execmode.codegen import units
from execmode.codegen.c_runtime import make_kernel
from execmode.codegen.lower import lower_fused
from execmode.codegen.render_c import CRenderer
from execmode.codegen.toolchain import NoCompiler, get_toolchain
from execmode.passes import fuse


@pytest.fixture(scope="module")
def toolchain():
    try:
        return get_toolchain()
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")


def _small_kernels(count):
    """``count`` different 3-op kernels (constants differ, so none is another's alias)."""
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    cases = [fused_case(lambda x, k=k: em.tanh(x * (1.0 + k / 8.0)) + float(k), x,
                        label=f"k{k}") for k in range(count)]
    kernels = [lower_fused(f, g.node_map(), graph_id="units") for g, f in cases]
    return x, cases, kernels


def test_partition_keeps_order_and_bounds_every_unit():
    _, _, kernels = _small_kernels(3)
    many = kernels * 200
    groups = units.partition(many)
    assert [k for g in groups for k in g] == many
    total = sum(units.weight(k) for k in many)
    # As few units as the bound allows, give or take the one a balanced cut may add.
    assert -(-total // units.UNIT_WEIGHT) <= len(groups) <= -(-total // units.UNIT_WEIGHT) + 1
    assert all(sum(units.weight(k) for k in g) <= units.UNIT_WEIGHT for g in groups)
    assert units.partition(kernels) == [kernels]


def test_parallel_compile_gives_the_sequential_libraries(toolchain, tmp_path, monkeypatch):
    x, cases, kernels = _small_kernels(6)
    monkeypatch.setattr(units, "UNIT_WEIGHT", 2 * units.weight(kernels[0]))
    results = {}
    for threads in (1, 2):
        # An empty cache each: both compile every unit, neither reads the other's.
        monkeypatch.setenv("EXECMODE_CACHE_DIR", str(tmp_path / f"threads-{threads}"))
        built = units.build_libraries(kernels, toolchain, CRenderer(), threads=threads)
        assert [len(group) for group, _ in built] == [2, 2, 2]
        assert not any(library.cache_hit for _, library in built)
        outputs = []
        for group, library in built:
            for kernel in group:
                graph, fused = cases[kernels.index(kernel)]
                outputs.append(make_kernel(kernel, library)(*call_args(fused, graph, [x])))
        results[threads] = ([os.path.basename(lib.path) for _, lib in built],
                            [lib.source for _, lib in built], outputs)
    (names1, sources1, out1), (names2, sources2, out2) = results[1], results[2]
    assert names1 == names2 and sources1 == sources2  # the same units, the same cache keys
    for a, b in zip(out1, out2):
        np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))


def _compile_threads() -> set:
    return {t.ident for t in threading.enumerate() if t.name.startswith("execmode-compile")}


def test_parallel_compiles_reuse_their_threads_and_a_forked_child_starts_its_own(
        toolchain, tmp_path, monkeypatch):
    _, _, kernels = _small_kernels(4)
    monkeypatch.setattr(units, "UNIT_WEIGHT", units.weight(kernels[0]))
    monkeypatch.setenv("EXECMODE_CACHE_DIR", str(tmp_path))
    units.build_libraries(kernels[:2], toolchain, CRenderer(), threads=2)
    first = _compile_threads()
    assert first  # one thread beside the caller
    units.build_libraries(kernels[2:], toolchain, CRenderer(), threads=2)
    assert _compile_threads() == first  # no new thread for the second build
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's pool threads are not here
        try:
            built = units.build_libraries(kernels, toolchain, CRenderer(), threads=2)
            os.write(write, str(len(built)).encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        assert f.read() == "4" and status == 0


def _chain(n_ops, tanh=True):
    def chain(x):
        for k in range(n_ops):
            if k % 4 == 0 and tanh:
                x = em.tanh(x)
            else:
                x = x * 1.0001 if k % 4 == 1 else (x + 0.001 if k % 4 == 2 else x - 0.0005)
        return x
    return chain


@pytest.mark.parametrize("tanh", [True, False], ids=["with-tanh", "plain"])
def test_split_chain_gives_the_unsplit_kernels_bits(tanh, monkeypatch):
    x = em.tensor(np.random.default_rng(3).standard_normal(1000).astype(np.float32))
    chain = _chain(600, tanh)
    split = em.jit(chain)
    low = split.lower(x)
    sizes = [len(n.body) for n in low.graph.nodes if n.op == "fused"]
    assert len(sizes) == 3 and max(sizes) <= fuse.MAX_GROUP_OPS and sum(sizes) == 600
    got = split(x).numpy()

    monkeypatch.setattr(fuse, "MAX_GROUP_OPS", 10 ** 6)
    whole = em.jit(chain)
    assert [n.op for n in whole.lower(x).graph.op_nodes] == ["fused"]
    want = whole(x).numpy()
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    if not tanh:  # + - * only: eager's bits exactly (tanh's are within its stated bound)
        eager = chain(x).numpy()
        np.testing.assert_array_equal(got.view(np.int32), eager.view(np.int32))
