"""``import execmode`` stays light: no Textual and no CuPy until something asks for them."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("textual", "cupy", "cupyx")


def _modules_after(code: str) -> set:
    script = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_execmode_loads_neither_textual_nor_cupy():
    loaded = _modules_after("import execmode")
    assert "execmode" in loaded  # the check looks at the right process
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}


def test_eager_work_on_the_cpu_loads_neither():
    code = ("import execmode as em\n"
            "w = em.randn(4, 3, requires_grad=True)\n"
            "em.nn.functional.cross_entropy(em.ones((2, 4)) @ w, em.tensor([0, 2])).backward()")
    loaded = _modules_after(code)
    assert not {m for m in loaded if m.split(".")[0] in HEAVY}
