"""The engine's import structure: its layers, no import cycles, and a light ``import``.

The layers are an import-linter contract in pyproject.toml ([tool.importlinter]); a module
that imports a layer above its own (even inside a function) breaks it. The hygiene checks
run ``import`` in a fresh interpreter and list what it loaded: Textual, CuPy and the
profilers load only when something asks for them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_imports_only_layers_below_its_own():
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            for j in range(i, len(edges[node])):
                nxt = edges[node][j]
                if nxt not in index:
                    work.append((node, j + 1))
                    work.append((nxt, 0))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
    return found


def test_no_import_cycles():
    # Within a layer too (functional's families, nn's modules): a cycle makes the order
    # in which modules are first imported matter, which a lazy import would then break.
    graph = grimp.build_graph("execmode", include_external_packages=False, cache_dir=None)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    class Graph:
        modules = {"a", "b", "c", "d"}
        imports = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return self.imports[m]

    assert _cycles(Graph()) == [["a", "b", "c"]]


HEAVY = ("textual", "cupy", "cupyx")


@pytest.mark.parametrize("code, forbidden", [
    # The engine and the CLI: no Textual, CuPy, profilers or SQLite.
    ("import execmode, execmode.cli", (*HEAVY, "execmode.profilers", "sqlite3")),
    # Eager work on the CPU, autograd included.
    ("import execmode as em\n"
     "w = em.randn(4, 3, requires_grad=True)\n"
     "em.nn.functional.cross_entropy(em.ones((2, 4)) @ w, em.tensor([0, 2])).backward()",
     HEAVY),
    # The profilers and their exporters: no Textual, no CuPy.
    ("import execmode.profilers.recorder, execmode.profilers.exporters.html, "
     "execmode.profilers.cli, execmode.profilers.api", HEAVY),
    # The TUI's command line and its store reader load Textual only when the app starts.
    ("import execmode, execmode.tui.cli, execmode.tui.data", ("textual",)),
])
def test_imports_stay_light(code, forbidden):
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "execmode" in loaded  # the check looks at the right process
    heavy = sorted(m for m in loaded if any(m == f or m.startswith(f + ".") for f in forbidden))
    assert heavy == []


def test_no_module_of_the_package_is_over_600_lines():
    # A module a reader can hold in mind: split by concept, not by line count.
    # The package's three source trees (execmode/, profilers/, tui/), not the tests.
    long = {str(path.relative_to(ROOT)): n
            for folder in ("execmode", "profilers", "tui")
            for path in (ROOT / folder).rglob("*.py")
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600}
    assert not long, f"modules over 600 lines: {long}"
