"""Graph mode under the debugger: kernel stepping, NaN hunting, recompute, differential
check."""

from __future__ import annotations

import os

import numpy as np

from execmode.debug.controller import Controller

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
