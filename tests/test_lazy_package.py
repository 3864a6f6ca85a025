"""``import execmode`` is lazy (PEP 562): what loads the engine, and what must not.

The command line and the TUI's process run no tensor code; they start without NumPy and
the engine (launch latency, issue 15). A script gets the whole engine on its first
``em.<name>``, or on the first method of a tensor made by a part imported on its own.
Each case runs in a fresh interpreter: the test process has the engine loaded already.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import execmode
import execmode.api as api

# Slow tier: import execmode and its front ends, each in a fresh interpreter.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ("numpy", "execmode._tensor", "execmode.api", "execmode.dispatch")


def _run(code: str) -> dict:
    script = (f"import sys, json\n{code}\n"
              "print(json.dumps({'modules': sorted(sys.modules), 'out': out}))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _loaded(modules, prefixes):
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("code", [
    "import execmode",
    # `execmode tui`'s own process: the CLI, the app, the controller, the store.
    "import execmode.cli, execmode.tui.cli, execmode.tui.app, execmode.tui.data",
    # `execmode run` / `profile`: the parent only parses and spawns the script's child.
    "import execmode.cli\nexecmode.cli.build_parser()",
])
def test_the_front_end_starts_without_numpy_or_the_engine(code):
    result = _run(code + "\nout = None")
    assert "execmode" in result["modules"]
    assert _loaded(result["modules"], ENGINE) == []


def test_the_first_public_name_loads_the_engine():
    result = _run("import execmode as em\nx = em.randn(3)\n"
                  "out = [type(x).__name__, (x + x).shape[0], callable(em.tensor)]")
    assert result["out"] == ["Tensor", 3, True]
    assert "execmode.api" in result["modules"]


def test_a_part_imported_on_its_own_gives_tensors_their_methods():
    # No em.<name> at all: the first + reads _tensor.py's placeholder, which loads the rest.
    result = _run(
        "from execmode.nn import Linear\nfrom execmode.functional import randn\n"
        "x = randn(2, 4)\nx.grad = None\ny = Linear(4, 3)(x)\nz = y + 1.0\nz += z\n"
        "out = [list(z.shape), float((z - z).sum().item()), type(x).__add__.__name__]")
    assert result["out"] == [[2, 3], 0.0, "__add__"]
    assert "execmode.api" in result["modules"]


def test_em_tensor_is_the_function_even_after_the_class_module_was_imported():
    result = _run("from execmode._tensor import Tensor\nimport execmode as em\n"
                  "out = [callable(em.tensor), em.tensor([1, 2]).shape[0]]")
    assert result["out"] == [True, 2]


def test_star_import_and_dir_list_the_public_names():
    result = _run("from execmode import *\nimport execmode\n"
                  "out = [callable(randn), callable(jit), Tensor.__name__, "
                  "'no_grad' in dir(execmode)]")
    assert result["out"] == [True, True, "Tensor", True]


def test_threads_that_touch_the_package_first_all_get_the_names():
    result = _run(
        "import threading\nimport execmode as em\nout = []\n"
        "def work():\n    out.append(float(em.ones(2).sum().item()))\n"
        "ts = [threading.Thread(target=work) for _ in range(8)]\n"
        "[t.start() for t in ts]\n[t.join() for t in ts]")
    assert result["out"] == [2.0] * 8


def test_no_public_name_is_also_a_submodule_name():
    # Importing such a submodule would bind it on the package over the public object (the
    # reason tensor.py is _tensor.py).
    submodules = {m.name for m in pkgutil.iter_modules(execmode.__path__)}
    clashes = {name for name in submodules & set(vars(api))
               if not isinstance(getattr(api, name), types.ModuleType)}
    assert clashes == set()


def test_every_placeholder_is_replaced_once_the_engine_is_loaded():
    from execmode._tensor import Tensor, UntilTheEngineLoads
    from execmode.tensor_method_tables import installed_names

    assert not any(isinstance(v, UntilTheEngineLoads) for v in vars(Tensor).values())
    assert all(name in vars(Tensor) for name in installed_names())
