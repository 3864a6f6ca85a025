"""Python-aware inspection through the agent protocol: the Variables pane's rows, the
evaluator (pdb's ``p expr``) and breakpoint conditions on Python values of the frame."""

from __future__ import annotations

import os

import pytest

from execmode.debug.controller import Controller, ControllerError

# Slow tier: the debug agent in a child process under a Controller.
pytestmark = pytest.mark.slow

STATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts",
                     "python_state.py")


@pytest.fixture
def paused():
    """Paused before the first multiply of train() (step 0)."""
    with Controller(STATE, breakpoints=["op:multiply"], start_paused=False) as c:
        assert c.wait_for("paused")["op"] == "multiply"
        yield c


def rows(c, *args, **kw):
    return {r["name"]: r for r in c.variables(*args, **kw)}


def test_locals_of_the_paused_frame(paused):
    local = rows(paused, 0, "locals")
    assert set(local) == {"steps", "step", "w"}
    assert local["step"]["text"] == "0" and local["step"]["kind"] == "number"
    w = local["w"]
    assert w["kind"] == "tensor" and w["expandable"]
    assert w["text"].startswith("f32[3]") and "min=1" in w["text"] and "max=3" in w["text"]
    attrs = rows(paused, 0, "locals", ["w"])
    assert attrs["shape"]["text"] == "(3,)" and attrs["dtype"]["text"] == "'float32'"


def test_globals_objects_and_containers_expand(paused):
    g = rows(paused, 0, "globals")
    names = list(g)
    # Data first, then classes, functions and modules; no dunder names.
    assert names.index("opt") < names.index("Opt") and names.index("config") < names.index("em")
    assert not any(n.startswith("__") for n in names)
    assert g["em"]["kind"] == "module" and g["train"]["kind"] == "function"
    assert g["opt"]["text"] == "Opt(lr=0.5, momentum=0.9)"  # slots, no property runs
    assert rows(paused, 0, "globals", ["opt"])["lr"]["text"] == "0.5"
    config = rows(paused, 0, "globals", ["config"])
    assert set(config) == {"epochs", "name"}  # attributes, not the raising property
    history = rows(paused, 0, "globals", ["history"])
    assert set(history) == {"['loss']", "['tag']"}
    assert len(history["['tag']"]["text"]) <= 200  # truncated
    assert history["['tag']"]["length"] == 5000
    assert rows(paused, 0, "globals", ["history", "['loss']"]) == {}
    with pytest.raises(ControllerError, match="no 'nope' under opt"):
        paused.variables(0, "globals", ["opt", "nope"])


def test_a_frame_of_the_stack_is_selectable(paused):
    stack = paused.stack()
    assert [s["function"] for s in stack] == ["train", "<module>"]
    module = rows(paused, 1, "locals")
    assert "train" in module and "opt" in module and "step" not in module
    with pytest.raises(ControllerError, match="frame 5: the paused stack has 2 frames"):
        paused.variables(5, "locals")
    assert paused.evaluate("steps", frame=0)["text"] == "3"
    assert not paused.evaluate("steps", frame=1)["ok"]


def test_evaluate_like_pdbs_p(paused):
    assert paused.evaluate("opt.lr * 2") == {"expr": "opt.lr * 2", "ok": True,
                                               "kind": "number", "type": "float",
                                               "text": "1.0"}
    result = paused.evaluate("w + 1")
    assert result["ok"] and result["kind"] == "tensor" and "min=2" in result["text"]
    assert paused.evaluate("list(range(3))")["text"] == "[0, 1, 2]"
    assert len(paused.evaluate("'y' * 10**6")["text"]) <= 2000  # truncated


@pytest.mark.parametrize("expr, error", [
    ("undefined_name", "NameError: name 'undefined_name' is not defined"),
    ("1/0", "ZeroDivisionError"),
    ("(", "SyntaxError"),
    ("x = 1", "SyntaxError"),            # an expression, not a statement
    ("config.explodes", "RuntimeError: a property that raises"),
    ("a" * 1001, "at most 1000"),
])
def test_an_error_is_the_result_and_the_script_goes_on(paused, expr, error):
    result = paused.evaluate(expr)
    assert result["ok"] is False and error in result["text"]
    paused.cont()  # the script is unharmed: it pauses at the next multiply
    assert paused.wait_for("paused")["op"] == "multiply"


def test_an_expression_that_runs_too_long_is_stopped(paused):
    # 10**12 steps would outlast the test's timeout: a result at all means it was stopped.
    result = paused.evaluate("sum(i for i in range(10**12))")
    assert result["ok"] is False and "TimeoutError" in result["text"]
    assert "(stopped)" in result["text"]
    assert paused.evaluate("step")["text"] == "0"  # and the agent still answers


def test_ops_an_expression_runs_are_neither_paused_at_nor_counted(paused):
    op_index = paused.paused["op_index"]
    paused.step()  # step mode: an op in an evaluation would pause inside it
    p = paused.wait_for("paused")
    assert paused.evaluate("(w * 3).sum()")["ok"]
    assert paused.evaluate("note(1)")["text"] == "1"
    paused.step()
    assert paused.wait_for("paused")["op_index"] == p["op_index"] + 1 > op_index


def test_values_change_between_stops(paused):
    before = paused.evaluate("(step, opt.lr)")["text"]
    paused.cont()
    paused.wait_for("paused")
    assert (before, paused.evaluate("(step, opt.lr)")["text"]) == ("(0, 0.5)", "(1, 0.25)")


def test_requests_are_validated():
    with Controller(STATE) as c:
        c.wait_for("paused")
        with pytest.raises(ControllerError, match="missing field 'path'"):
            c.request({"type": "variables", "frame": 0, "scope": "locals"})
        with pytest.raises(ControllerError, match="path: a list of labels"):
            c.request({"type": "variables", "frame": 0, "scope": "locals", "path": [1]})
        with pytest.raises(ControllerError, match="unknown scope"):
            c.variables(0, "builtins")
        with pytest.raises(ControllerError, match="field 'expr' must be str"):
            c.request({"type": "evaluate", "expr": 3})


@pytest.mark.parametrize("spec, step, when", [
    ("step > 1", 2, "before"),                           # decided before the op
    ("line:python_state.py:37 if opt.lr < 0.2", 2, "before"),
    ("op:multiply if step == 1 and max > 4", 1, "after"),  # needs the output: after
    ("history['loss'][-1] == 1", 2, "before"),           # appended after step 1's multiply
    ("not opt.lr > 0.3", 1, "before"),
])
def test_a_condition_names_python_values_of_the_ops_frame(spec, step, when):
    with Controller(STATE, breakpoints=[spec], start_paused=False) as c:
        event = c.wait_for("paused")
        assert event["when"] == when and event["location"]["lineno"] == 37
        assert c.evaluate("step")["text"] == str(step)


def test_a_condition_on_a_name_the_frame_lacks_never_holds():
    with Controller(STATE, breakpoints=["no_such_variable > 0", "no_such.attr != 1"],
                    start_paused=False) as c:
        assert c.wait_for("paused", "exited").type == "exited"
        assert c.exit.status == "ok"


def test_a_property_that_raises_in_a_condition_disables_it_and_the_script_goes_on():
    with Controller(STATE, breakpoints=["config.explodes == 1"], start_paused=False) as c:
        error = c.wait_for("error")
        assert "disabled" in error["message"] and "a property that raises" in \
            error["message"]
        assert c.wait_for("exited")["status"] == "ok"
    assert ("stdout", "result [8.0, 16.0, 24.0] 0") in c.output


def test_evaluating_at_a_graph_break_adds_nothing_to_the_trace():
    """Paused inside em.jit at a graph break: expressions run eagerly (no tracer, no
    listener), and the jitted function's result is what it is without the debugger."""
    script = os.path.join(os.path.dirname(STATE), "break_eval.py")
    with Controller(script, breakpoints=["graph_break"], start_paused=False) as c:
        assert c.wait_for("paused")["reason"].startswith("graph break")
        assert "max=4" in c.evaluate("w + 1")["text"]
        assert c.evaluate("(y * 0).sum()")["ok"]
        c.cont()
        assert c.wait_for("exited")["status"] == "ok"
    assert ("stdout", "result [2.0, -1.0, 4.0]") in c.output
