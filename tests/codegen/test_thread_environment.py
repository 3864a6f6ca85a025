"""The thread count's environment, read by fresh processes as a user's script reads it:
EXECMODE_NUM_THREADS, OMP_NUM_THREADS and OpenBLAS's own variables (OpenBLAS reads them
when NumPy loads it, so only a new process shows what they do), and kernel libraries
loaded before and after a set_num_threads (threads.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from execmode.codegen import blas, threads
from execmode.codegen.toolchain import NoCompiler, get_toolchain

THREAD_VARIABLES = (threads.ENV, threads.OPENMP_ENV, *threads.BLAS_ENVS)

# Prints thread_settings() after each action named on the command line: "settings",
# "set:N", "set:none".
_SETTINGS_SCRIPT = textwrap.dedent("""
    import json, sys
    from execmode.codegen import threads
    for action in sys.argv[1:]:
        if action.startswith("set:"):
            value = action[4:]
            threads.set_num_threads(None if value == "none" else int(value))
        print(json.dumps(threads.thread_settings()))
""")


def _child(script: str, args=(), tmp_path=None, **variables) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env.update(variables)
    if tmp_path is not None:
        env["EXECMODE_CACHE_DIR"] = str(tmp_path)
    return subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True,
                          text=True, timeout=180)


def _settings(*actions, **variables) -> list[dict]:
    done = _child(_SETTINGS_SCRIPT, actions or ("settings",), **variables)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def openblas():
    if blas.thread_control() is None:
        pytest.skip(f"NumPy's BLAS has no thread control here: {blas.thread_control_reason()}")


def _cpus() -> int:
    return threads.usable_cpus()


def test_nothing_set_gives_the_default_to_kernels_and_blas(openblas):
    (s,) = _settings()
    default = min(_cpus(), threads.physical_cores())
    assert (s["threads"], s["blas_threads"]) == (default, default)
    assert s["source"] == f"default: {_cpus()} usable CPUs, {threads.physical_cores()} " \
                          "physical cores"
    assert s["blas_source"] == "execmode's count"


def test_execmode_num_threads_sets_kernels_and_blas(openblas):
    (s,) = _settings(EXECMODE_NUM_THREADS="1")
    assert (s["threads"], s["source"], s["blas_threads"]) == (1, "EXECMODE_NUM_THREADS", 1)


def test_omp_num_threads_sets_kernels_and_openblas_reads_it_itself(openblas):
    (s,) = _settings(OMP_NUM_THREADS="1")
    assert (s["threads"], s["source"], s["blas_threads"]) == (1, "OMP_NUM_THREADS", 1)
    assert s["blas_source"].startswith("from OMP_NUM_THREADS=1 as OpenBLAS read it")
    # A nested list: the first number (OpenBLAS takes it too, at most its CPU count).
    (s,) = _settings(OMP_NUM_THREADS="3,2")
    assert (s["threads"], s["source"]) == (3, "OMP_NUM_THREADS")
    assert 1 <= s["blas_threads"] <= 3
    assert s["blas_source"].startswith("from OMP_NUM_THREADS=3,2 as OpenBLAS read it")


def test_execmode_num_threads_wins_over_omp_num_threads(openblas):
    (s,) = _settings(EXECMODE_NUM_THREADS="2", OMP_NUM_THREADS="1")
    assert (s["threads"], s["source"]) == (2, "EXECMODE_NUM_THREADS")
    assert s["blas_threads"] == 1  # the user's OMP_NUM_THREADS, as OpenBLAS read it
    (s,) = _settings(EXECMODE_NUM_THREADS="1", OMP_NUM_THREADS="not a number")
    assert s["threads"] == 1  # a source below the one that answers is not read


def test_openblas_num_threads_is_left_as_the_user_set_it(openblas):
    settings = _settings("settings", "set:2", "set:none", OPENBLAS_NUM_THREADS="1")
    first, called, back = settings
    assert first["blas_threads"] == 1
    assert first["threads"] == min(_cpus(), threads.physical_cores())
    assert first["blas_source"] == ("from OPENBLAS_NUM_THREADS=1 as OpenBLAS read it; "
                                    "execmode leaves it")
    assert threads.thread_settings_text(first).endswith(f", BLAS 1 ({first['blas_source']})")
    # An explicit call sets both; None gives the BLAS back its user's count.
    assert (called["threads"], called["blas_threads"], called["blas_source"]) == \
        (2, 2, "set_num_threads()")
    assert (back["blas_threads"], back["blas_source"]) == (1, first["blas_source"])


@pytest.mark.parametrize("variable, value", [("EXECMODE_NUM_THREADS", "2 threads"),
                                             ("OMP_NUM_THREADS", "0"),
                                             ("OMP_NUM_THREADS", "x,2")])
def test_an_invalid_variable_stops_with_its_name(variable, value):
    done = _child(_SETTINGS_SCRIPT, ("settings",), **{variable: value})
    assert done.returncode != 0
    assert f"ValueError: {variable}={value!r}: expected a positive integer" in done.stderr


_LIBRARIES_SCRIPT = textwrap.dedent("""
    import numpy as np
    import execmode as em
    from execmode.codegen import threads

    def used(libraries):
        return [lib.em_threads_used() for lib in libraries]

    x = em.tensor(np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32))
    em.set_num_threads(1)
    f = em.jit(lambda x: em.tanh(x * 2.0 + 1.0))
    f(x)
    old = list(threads._State.libraries)
    print("compiled at 1", used(old))
    em.set_num_threads(2)
    f(x)
    print("loaded, then 2", used(old))
    g = em.jit(lambda x: em.sum(em.exp(x * 0.5)))
    g(x)
    print("compiled at 2", used(threads._State.libraries[len(old):]))
""")


def test_set_num_threads_reaches_loaded_and_future_libraries(tmp_path):
    """Each library says whether it ever ran a team of more than one thread."""
    try:
        if not get_toolchain().openmp:
            pytest.skip("the compiler has no OpenMP: kernels are single-threaded")
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")
    done = _child(_LIBRARIES_SCRIPT, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" [", 1) for line in done.stdout.splitlines())
    at_one, then_two, new = (json.loads("[" + lines[k]) for k in
                             ("compiled at 1", "loaded, then 2", "compiled at 2"))
    assert at_one and not any(at_one)
    assert any(then_two)
    assert new and any(new)
