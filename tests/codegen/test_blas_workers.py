"""OpenBLAS's jobs on the kernels' team (codegen/blas_workers.py): the same bits as
OpenBLAS's own threads, on the team, on the fallback's fresh threads and switched off;
reading the thread settings changes nothing."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_helpers import blas_thread_control_or_skip, openmp_toolchain_or_skip

import execmode as em
from execmode.codegen import blas_workers, threads


def _team_or_skip():
    """The team is opt-in (EXECMODE_BLAS_CALLBACK=1, or use_team(True) in a process)."""
    blas_thread_control_or_skip()
    threads.set_num_threads(None)  # the BLAS gets its count
    blas_workers.use_team(True)
    status = blas_workers.status()
    if status != blas_workers.TEAM:
        pytest.skip(f"OpenBLAS's jobs do not run on execmode's team here: {status}")


@pytest.fixture
def team_back():
    """Whoever ran OpenBLAS's jobs before the test runs them after it."""
    was = blas_workers.using_team()
    yield
    blas_workers.force_new_threads(False)
    blas_workers.use_team(was)
    threads.set_num_threads(None)


def _products() -> dict:
    """Products OpenBLAS splits into jobs at 2+ threads: gemm in both precisions and
    orientations, syrk (a matrix times its transpose), gemv."""
    rng = np.random.default_rng(42)
    a = rng.standard_normal((64, 512), dtype=np.float32)
    b = rng.standard_normal((512, 256), dtype=np.float32)
    c = rng.standard_normal((600, 700))
    d = rng.standard_normal((700, 500))
    g = rng.standard_normal((1000, 1000))  # 600x700 is below OpenBLAS's gemv threshold
    v = rng.standard_normal(1000)
    # syrk's output large enough that every kernel splits it (SkylakeX's kept a 64x64 one
    # on one thread, where Haswell's split it)
    s = rng.standard_normal((256, 512), dtype=np.float32)
    return {"sgemm": lambda: a @ b, "sgemm of transposes": lambda: b.T @ a.T,
            "dgemm": lambda: c @ d, "ssyrk": lambda: s @ s.T, "dgemv": lambda: g @ v}


def _bits(products: dict) -> dict:
    return {name: fn().tobytes() for name, fn in products.items()}


@pytest.mark.parametrize("count", [2, 3])
def test_openblas_jobs_on_the_team_give_openblas_own_bits(team_back, count):
    """The same jobs on other threads: the bits of OpenBLAS's own threads at the same
    count, on the team and on the fallback's fresh threads alike."""
    _team_or_skip()
    em.set_num_threads(count)
    products = _products()
    before = blas_workers.calls()
    team = _bits(products)
    on_team = blas_workers.calls()
    assert on_team[0] >= before[0] + len(products)  # every product went through the team
    blas_workers.force_new_threads(True)
    fresh = _bits(products)
    blas_workers.force_new_threads(False)
    assert blas_workers.calls()[1] >= on_team[1] + len(products)
    blas_workers.use_team(False)
    em.set_num_threads(count)  # a later count does not switch it back on
    assert blas_workers.status().startswith("OpenBLAS's own threads (switched off")
    assert threads.thread_settings()["blas_workers"] == blas_workers.status()
    off = blas_workers.calls()
    own = _bits(products)
    assert blas_workers.calls() == off  # OpenBLAS's own threads ran them
    assert team == own
    assert fresh == own
    blas_workers.use_team(True)
    assert threads.thread_settings()["blas_workers"] == blas_workers.TEAM


def test_reading_the_settings_changes_nothing(team_back):
    """thread_settings() and its text say what runs; they never give the BLAS a count nor
    hand its jobs to the team (a profiled or compared script runs as it runs unmeasured).
    Fresh processes, where nothing synced the BLAS yet: test_thread_environment.py."""
    control = blas_thread_control_or_skip()
    blas_workers.use_team(False)
    control.set(1)  # not execmode's count: a sync would change it
    before = (blas_workers.status(), control.get(), threads._State.blas_synced)
    from execmode.profilers.machine import machine_info
    from execmode.profilers.measure import context, context_line

    threads.thread_settings(), threads.thread_settings_text(), context(), context_line()
    machine_info(threads=True)
    assert (blas_workers.status(), control.get(), threads._State.blas_synced) == before
    assert threads.thread_settings()["blas_threads"] == 1


@pytest.mark.slow  # compiles a training step, run on and off the team
def test_a_jitted_training_step_gives_the_same_bits_on_the_team_and_off_it(team_back):
    """A program's matmuls call OpenBLAS from C, and its kernels run on the team between
    them: the step's losses and weights are the bits of OpenBLAS's own threads."""
    openmp_toolchain_or_skip()
    _team_or_skip()
    from helpers import mse_train_step

    em.set_num_threads(2)
    rng = np.random.default_rng(31)
    x = em.tensor(rng.standard_normal((2048, 256), dtype=np.float32))
    y = em.tensor(rng.standard_normal((2048, 8), dtype=np.float32))
    results, calls = {}, {}
    for on in (True, False):
        blas_workers.use_team(on)
        em.random.seed(0)
        model = em.nn.Sequential(em.nn.Linear(256, 128), em.nn.ReLU(), em.nn.Linear(128, 8))
        step = em.jit(mse_train_step(model, em.optim.SGD(model.parameters(), lr=0.01)))
        before = blas_workers.calls()[0]
        losses = [step(x, y).numpy().tobytes() for _ in range(3)]
        calls[on] = blas_workers.calls()[0] - before
        results[on] = (losses, [p.numpy().tobytes() for p in model.parameters()])
    assert calls[True] > 0 and calls[False] == 0
    assert results[True] == results[False]
