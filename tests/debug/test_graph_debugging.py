"""Graph mode under the debugger: kernel stepping, NaN hunting, recompute, differential
check."""

from __future__ import annotations

import os

import numpy as np
import pytest

from execmode.debug.controller import Controller

# Slow tier: the debug agent in a child process under a Controller.
pytestmark = pytest.mark.slow

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")


def test_planted_log_zero_in_a_fused_kernel_is_located_to_its_line():
    with Controller(os.path.join(SCRIPTS, "nan_jit.py"), breakpoints=["inf"],
                    start_paused=False) as c:
        ev = c.wait_until_stopped()
        assert ev["mode"] == "graph"
        kernel = ev["kernel"]
        assert kernel["kind"] == "fused" and "log" in kernel["member_ops"]
        origin = ev["hunt"]["origin"]
        assert origin["op"] == "log"
        assert origin["location"]["lineno"] == 8 and origin["location"]["function"] == "step"
        assert origin["output"]["inf_count"] == 2
        # The intermediate the kernel never materialised can be recomputed.
        node = origin["node"]
        before_log = c.recompute(node - 1)
        assert before_log["min"] == 0.0
        assert c.differential_check()["mismatch"] is False


def test_next_goes_kernel_by_kernel_in_graph_mode(tmp_path):
    # n steps over each kernel (s would step into the fused one: test_graph_stepping.py).
    script = tmp_path / "kern.py"
    script.write_text(
        "import execmode as em\n"
        "w = em.ones(3, 3)\n"
        "@em.jit\n"
        "def f(x):\n"
        "    h = em.relu(x @ w + 1.0)\n"
        "    return (h * h).sum(axis=1)\n"
        "x = em.ones(2, 3)\n"
        "em.breakpoint()\n"
        "y = f(x)\n")
    with Controller(str(script), start_paused=False) as c:
        c.wait_until_stopped()
        kernels = []
        while True:
            c.next()
            ev = c.wait_until_stopped()
            if ev.type == "exited":
                break
            assert ev["mode"] == "graph" and ev.get("member") is None
            kernels.append(ev["kernel"])
        # A small matmul as generated loops, then the epilogue joined to the reduction.
        assert [(k["kind"], tuple(k["member_ops"])) for k in kernels] == [
            ("kernel", ("matmul",)), ("fused", ("add", "relu", "multiply", "sum"))]
        assert [m["location"]["lineno"] for m in kernels[1]["members"]] == [5, 5, 6, 6]


def test_planted_difference_is_attributed_to_the_node_and_the_pass(tmp_path):
    script = tmp_path / "diff.py"
    script.write_text(
        "import execmode as em\n"
        "from execmode.graph.ir import Literal, replace\n"
        "def sloppy(graph):\n"
        "    # A buggy pass: turns multiply by 3.0 into multiply by 3.01.\n"
        "    nodes, touched = [], []\n"
        "    for n in graph.nodes:\n"
        "        if n.op == 'multiply' and Literal(3.0) in n.inputs:\n"
        "            n = replace(n, inputs=(n.inputs[0], Literal(3.01)))\n"
        "            touched.append(n.id)\n"
        "        nodes.append(n)\n"
        "    from execmode.passes.record import Rewrite\n"
        "    return graph.copy(nodes=nodes), [Rewrite(f'sloppy %{i}', (i,), 'x')\n"
        "                                     for i in touched], {}, {}\n"
        "@em.jit\n"
        "def f(x):\n"
        "    a = em.tanh(x) + 1.0\n"
        "    b = a * 3.0\n"
        "    return b.sum()\n"
        "f.passes = ['fold', ('sloppy', sloppy)]\n"
        "x = em.ones(4)\n"
        "em.breakpoint()\n"
        "f(x)\n")
    with Controller(str(script), start_paused=False) as c:
        c.wait_until_stopped()
        c.step()
        ev = c.wait_until_stopped()
        assert ev["mode"] == "graph"
        report = c.differential_check()
        assert report["mismatch"] is True
        first = report["first"]
        assert first["op"] == "multiply" and first["location"]["lineno"] == 17
        assert report["pass"] == "sloppy"
        assert np.isclose(first["max_abs_error"], 0.01 * (np.tanh(1.0) + 1.0), rtol=1e-3)


def test_a_stop_inside_a_jitted_function_shows_its_python_names_with_this_calls_values(
        tmp_path):
    """The Variables pane inside em.jit (graph/py_names.py): at a NaN stop after a kernel,
    the jitted function's names (and a helper's), each its node's value at this call,
    recomputed (a name whose node was fused away too); var:NAME reads them."""
    script = tmp_path / "names.py"
    script.write_text(
        "import execmode as em\n"
        "def scaled(t):\n"
        "    doubled = t * 2.0\n"
        "    return doubled - 1.0\n"
        "@em.jit\n"
        "def step(x):\n"
        "    h = em.exp(x)\n"
        "    centered = scaled(h)\n"
        "    bad = em.log(centered - centered)\n"
        "    return (bad * h).sum()\n"
        "x = em.tensor([[0.0, 1.0], [2.0, 3.0]])\n"
        "for _ in range(2):\n"
        "    step(x)\n")
    with Controller(str(script), breakpoints=["inf"], start_paused=False) as c:
        ev = c.wait_until_stopped()
        assert ev["mode"] == "graph"
        jit = c.jit_variables()
        rows = {(r["function"], r["name"]): r for r in jit["rows"]}
        assert {("step", "x"), ("step", "h"), ("step", "centered"), ("step", "bad"),
                ("scaled", "t"), ("scaled", "doubled")} <= set(rows)
        assert all(r["kind"] == "tensor" for r in rows.values())
        assert rows[("step", "h")]["text"].startswith("%") and "f32[2,2]" in \
            rows[("step", "h")]["text"]
        assert "Inf=4" in rows[("step", "bad")]["text"]  # log(0) everywhere
        h = np.exp(np.array([[0.0, 1.0], [2.0, 3.0]], np.float32))
        assert c.inspect("var:h")["max"] == float(h.max())
        assert c.inspect("var:centered")["min"] == float((h * 2.0 - 1.0).min())
        assert c.inspect("var:doubled")["max"] == float((h * 2.0).max())
