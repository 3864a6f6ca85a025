"""The disk cache across real processes, concurrent compiles, the no-compiler fallback, and
import hygiene (importing execmode compiles nothing and imports no CuPy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from helpers import assert_close

import execmode as em
from execmode.codegen import backend_status, status

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = """
import json
import numpy as np
import execmode as em
from execmode import instrument

class Listener:
    def __init__(self):
        self.events = []
    def on_event(self, event):
        self.events.append(event)

listener = Listener()
instrument.add_listener(listener)
f = em.jit(lambda x: em.tanh(x * 2.0) + em.exp(x) * 0.5)
y = f(em.tensor(np.arange(6, dtype=np.float32)))
hits = [e.cache_hit for e in listener.events if e.kind == "compile"]
print(json.dumps({"hits": hits, "y": y.numpy().tolist()}))
"""


def _env(cache_dir, **extra):
    env = dict(os.environ, EXECMODE_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT)
    env.update(extra)
    return env


def _run(cache_dir, script=SCRIPT, **extra):
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=_env(cache_dir, **extra), timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _expected():
    x = np.arange(6, dtype=np.float32)
    return np.tanh(x * np.float32(2)) + np.exp(x) * np.float32(0.5)


# Slow tier: a second process.
@pytest.mark.slow
def test_second_process_hits_the_disk_cache(tmp_path):
    first = _run(tmp_path)
    second = _run(tmp_path)
    assert first["hits"] == [False]
    assert second["hits"] == [True]
    assert_close(np.array(second["y"], np.float32), _expected())
    libraries = [f for f in os.listdir(tmp_path / "kernels") if f.endswith(".so")]
    assert len(libraries) == 1


# Slow tier: two processes compiling.
@pytest.mark.slow
def test_two_processes_compiling_at_once(tmp_path):
    """Each writes a temporary file and renames it into place: both succeed, one library
    remains, no temporary file is left behind."""
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env(tmp_path), cwd=ROOT)
             for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert_close(np.array(json.loads(out.strip().splitlines()[-1])["y"], np.float32),
                     _expected())
    files = os.listdir(tmp_path / "kernels")
    assert len([f for f in files if f.endswith(".so")]) == 1
    assert not [f for f in files if f.startswith(".tmp-")]


def test_import_compiles_nothing_and_imports_no_cupy(tmp_path):
    script = ("import sys, os, execmode, execmode.codegen; "
              "print(json.dumps({'cupy': 'cupy' in sys.modules, "
              "'files': os.listdir(os.environ['EXECMODE_CACHE_DIR'])}))")
    result = _run(tmp_path, "import json; " + script)
    assert result == {"cupy": False, "files": []}


def test_no_compiler_falls_back_to_the_interpreter(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/bin/cc")
    state = backend_status(check_gpu=False)
    assert state.cpu == "interpreter"
    assert "/nonexistent/bin/cc" in state.cpu_reason
    assert "interpreted over NumPy" in str(state)

    x = np.linspace(-3, 3, 50, dtype=np.float32)
    f = em.jit(lambda x: em.tanh(x * 2.0) + em.exp(x) * 0.5)
    y = f(em.tensor(x))
    plan = f.concrete_functions[0].segments[0].compiled.plan
    assert {s.backend for s in plan.steps if s.kind == "fused"} == {"interpreter"}
    assert_close(y, np.tanh(x * np.float32(2)) + np.exp(x) * np.float32(0.5))

    with pytest.warns(RuntimeWarning, match="no C compiler"):
        g = em.jit(lambda x: em.sqrt(x * x + 1.0) - 1.0, backend="c")
        g(em.tensor(x))


def test_a_failed_compile_falls_back_and_says_so(monkeypatch):
    from execmode.codegen.render_c import CRenderer

    monkeypatch.setattr(status, "_last_fallback", {})
    monkeypatch.setattr(CRenderer, "runtime_globals", lambda self: "#error broken renderer")
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    f = em.jit(lambda x: em.log1p(x * x) * 3.0 + 1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = f(em.tensor(x))
    assert any("C compiler failed" in str(w.message) for w in caught)
    assert_close(y, np.log1p(x * x) * np.float32(3) + 1)
    assert backend_status(check_gpu=False).cpu == "interpreter"


def test_status_when_a_compiler_works(monkeypatch):
    # A fallback another test of this worker's process provoked (a broken renderer, a
    # refused unit) is remembered per CC: this test asks about a compiler that works.
    monkeypatch.setattr(status, "_last_fallback", {})
    state = backend_status(check_gpu=False)
    assert state.cpu == "c", state.reason
    assert "-fno-math-errno" in state.flags
    assert not any("fast-math" in f or "finite-math" in f for f in state.flags)
    assert state.cache_dir.endswith("kernels")
    assert json.dumps(state.to_json())
