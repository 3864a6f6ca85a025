"""`n` and `s` in graph mode, as pdb/pudb users expect: `n` steps over a fused kernel (to
the next kernel), `s` steps into it (its member ops, one at a time, each with its inputs);
inside, `n` goes to the next member (the same level)."""

from __future__ import annotations

import os

import pytest

from execmode.debug.controller import Controller

# Slow tier: the debug agent in a child process under a Controller.
pytestmark = pytest.mark.slow

GRAPH_MODE = os.path.join(os.path.dirname(__file__), "..", "tui", "scripts", "graph_mode.py")


def until_kernel(c: Controller, name: str):
    """Step (s) until paused before kernel ``name`` itself (not one of its members)."""
    p = c.wait_for("paused")
    for _ in range(50):
        kernel = p.get("kernel") or {}
        if kernel.get("name") == name and p.get("member") is None:
            return p
        c.step()
        p = c.wait_until_stopped()
        assert p.type == "paused", p.data
    raise AssertionError(f"no kernel {name}")


def test_s_steps_into_a_fused_kernel_and_n_steps_over_it():
    with Controller(GRAPH_MODE) as c:
        p = until_kernel(c, "k0")
        assert p["kernel"]["member_ops"] == ["relu", "multiply", "add"]
        c.step()                                          # s: into k0
        p = c.wait_for("paused")
        assert p["member"]["index"] == 0 and p["op"] == "relu"
        assert p["reason"] == "step: %3 relu (1/3 in kernel k0)"
        assert p["location"]["lineno"] == 7               # the member's own line
        relu_in = p["inputs"][0]                        # x @ w, recomputed: all 0.8
        assert relu_in["type"] == "f32[16,4]" and relu_in["min"] == relu_in["max"]
        assert abs(relu_in["max"] - 0.8) < 1e-6
        assert c.inspect("input:0")["max"] == relu_in["max"]
        c.next()                                          # n inside: the next member
        p = c.wait_for("paused")
        assert (p["member"]["index"], p["op"]) == (1, "multiply")
        c.next()
        c.wait_for("paused")
        c.next()                                          # after the last member: k1
        p = c.wait_for("paused")
        assert p["kernel"]["name"] == "k1" and p.get("member") is None
        c.next()                                          # n at a kernel: over it
        p = c.wait_for("paused")
        assert p["kernel"]["name"] == "copy" and p.get("member") is None
        c.cont()
        assert c.wait_for("exited")["status"] == "ok"
    assert ("stdout", "loss 3.9") in c.output            # the script computed as usual


def test_continue_from_inside_a_kernel_lets_the_script_run_on():
    with Controller(GRAPH_MODE) as c:
        until_kernel(c, "k1")
        c.step()
        p = c.wait_for("paused")
        assert p["member"] == {**p["member"], "index": 0, "count": 2, "kernel": "k1"}
        c.cont()
        assert c.wait_for("exited")["status"] == "ok"
    assert ("stdout", "loss 3.9") in c.output
