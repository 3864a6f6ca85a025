"""The graph interpreter (graph/interpret.py): values as eager's, a failing node named in
a note ("while executing %N = ..."), eager's error class and message kept."""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import execmode as em
from execmode.graph.interpret import Interpreter, node_failure

W = em.ones(3, 3)


def gather(t, i):
    return t[i] * 2  # the line every error below names


def mlp_layer(x):
    return em.relu(x @ W) * 0.5


def _error_of(fn, *args) -> Exception:
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.value


def test_run_computes_what_eager_computes():
    x = em.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
    graph = em.jit(mlp_layer).trace(x).graph
    interpreter = Interpreter(graph)
    (out,) = interpreter.run(x.numpy(), W.numpy())  # in graph.inputs order
    want = mlp_layer(x).numpy()
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(out, want)
    assert set(interpreter.env) >= {n.id for n in graph.nodes if n.op != "assign"}


def test_a_failing_node_raises_eagers_error_with_the_node_named_in_a_note():
    x = em.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    graph = em.jit(gather).trace(x, em.tensor([0])).graph
    eager = _error_of(gather, x, em.tensor([5]))
    err = _error_of(Interpreter(graph).run, x.numpy(), np.array([5]))
    assert type(err) is type(eager) is em.IndexingError  # the class eager raises
    assert str(err) == str(eager)  # and its message, at the user's line
    node = next(n for n in graph.nodes if n.op == "getitem")
    line = gather.__code__.co_firstlineno + 1
    (note,) = err.__notes__
    assert note.startswith(f"while executing %{node.id}:f32[1,4] = getitem")
    assert f"# test_interpreter.py:{line} in gather" in note
    assert note in "".join(traceback.format_exception(err))  # shown under the traceback


def test_an_error_from_numpy_keeps_the_original_reachable():
    graph = em.jit(mlp_layer).trace(em.ones(2, 3)).graph
    err = _error_of(Interpreter(graph).run, np.ones((2, 5), np.float32),
                    np.ones((3, 3), np.float32))  # matmul's shapes no longer agree
    assert isinstance(err, em.ExecmodeError)
    assert str(err).startswith("matmul(f32[2,5]@cpu, f32[3,3]@cpu): ValueError: ")
    assert isinstance(err.__context__, ValueError)  # NumPy's own error, chained
    assert err.__notes__[0].startswith("while executing %")
    assert " = matmul %" in err.__notes__[0]


def test_a_replayed_plan_names_the_failing_node_too():
    x = em.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    jitted = em.jit(gather)
    jitted(x, em.tensor([0]))
    err = _error_of(jitted, x, em.tensor([5]))
    assert type(err) is em.IndexingError
    assert any(" = getitem[" in note for note in err.__notes__)


def test_run_node_is_the_one_place_to_override():
    seen = []

    class Recording(Interpreter):
        def run_node(self, node, env):
            seen.append(node.op)
            return super().run_node(node, env)

    graph = em.jit(mlp_layer).trace(em.ones(2, 3)).graph
    Recording(graph).run(np.ones((2, 3), np.float32), W.numpy())
    assert seen == [n.op for n in graph.nodes if n.op not in ("input", "assign")]


def test_stop_at_leaves_the_rest_unevaluated():
    graph = em.jit(mlp_layer).trace(em.ones(2, 3)).graph
    first = next(n for n in graph.nodes if n.op == "matmul")
    interpreter = Interpreter(graph)
    assert interpreter.run(np.ones((2, 3), np.float32), W.numpy(), stop_at=first.id) == [None]
    assert max(interpreter.env) == first.id


def test_the_innermost_node_is_named_once():
    graph = em.jit(mlp_layer).trace(em.ones(2, 3)).graph
    node = next(n for n in graph.nodes if n.op == "matmul")
    err = node_failure(node, [np.ones((2, 5)), np.ones((3, 3))], ValueError("no"))
    again = node_failure(node, [], err)  # an enclosing node sees it pass by
    assert again is err and len(err.__notes__) == 1
