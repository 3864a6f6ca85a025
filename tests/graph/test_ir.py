"""The IR: golden text, JSON round trip, structural hash, verifier."""

from __future__ import annotations

import pytest

import execmode as em
from execmode.graph.ir import Graph, Node, format_graph
from execmode.graph.verify import GraphVerificationError, verify

W = em.ones(3, 3)


def mlp_layer(x):
    return em.relu(x @ W) * 0.5


def softmax_sum(x):
    return em.softmax(x, axis=-1).sum(axis=0)


def _ir(fn, *args) -> str:
    # Source comments hold absolute paths and line numbers; golden strings pin the rest.
    text = format_graph(em.jit(fn).trace(*args).graph)
    lines = (line.split("  #")[0].rstrip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def test_golden_mlp_layer():
    assert _ir(mlp_layer, em.ones(2, 3)) == """\
{ lambda %1:f32[3,3] ; %0:f32[2,3] .
  let %2:f32[2,3] = matmul %0 %1
      %3:f32[2,3] = relu %2
      %4:f32[2,3] = multiply %3 0.5
  in ( %4 ) }"""


def test_golden_softmax_sum():
    assert _ir(softmax_sum, em.ones(2, 4)) == """\
{ lambda %0:f32[2,4] .
  let %1:f32[2,1] = max[axis=(1,), keepdims=True] %0
      %2:bool[2,1] = isfinite %1
      %3:f32[2,1] = where %2 %1 0.0
      %4:f32[2,4] = subtract %0 %3
      %5:f32[2,4] = exp %4
      %6:f32[2,1] = sum[axis=(1,), keepdims=True] %5
      %7:f32[2,4] = divide %5 %6
      %8:f32[4] = sum[axis=(0,), keepdims=False] %7
  in ( %8 ) }"""


def test_text_form_carries_source_and_scope():
    graph = em.jit(mlp_layer).trace(em.ones(2, 3)).graph
    text = str(graph)
    assert "test_ir.py:" in text and "in mlp_layer" in text
    assert "[relu]" in text
    relu = [n for n in graph.nodes if n.op == "relu"][0]
    assert relu.scope == "relu" and relu.loc.function == "mlp_layer"


def test_json_round_trip_is_exact():
    lowered = em.jit(softmax_sum).lower(em.ones(2, 4))
    for graph in (lowered.traced.graph, lowered.graph):  # with and without fused nodes
        data = graph.to_json()
        again = Graph.from_json(data)
        assert again.to_json() == data
        assert format_graph(again) == format_graph(graph)
        assert again.structural_hash() == graph.structural_hash()


def test_structural_hash_ignores_values_and_lines_but_not_structure():
    h1 = em.jit(mlp_layer).trace(em.ones(2, 3)).graph.structural_hash()
    h2 = em.jit(lambda x: em.relu(x @ W) * 0.5).trace(em.full((2, 3), 7.0)).graph
    assert h1 == h2.structural_hash()
    h3 = em.jit(lambda x: em.relu(x @ W) * 0.25).trace(em.ones(2, 3)).graph
    h4 = em.jit(mlp_layer).trace(em.ones(5, 3)).graph
    assert h1 != h3.structural_hash() and h1 != h4.structural_hash()


def test_verifier_rejects_broken_graphs():
    graph = em.jit(mlp_layer).trace(em.ones(2, 3)).graph
    verify(graph)
    bad_order = graph.copy(nodes=[graph.nodes[0], graph.nodes[3], graph.nodes[2],
                                  graph.nodes[1], graph.nodes[4]])
    with pytest.raises(GraphVerificationError, match="before it is defined"):
        verify(bad_order)
    wrong_type = graph.copy(nodes=graph.nodes[:-1] + [
        Node(4, "multiply", (3,) + graph.nodes[-1].inputs[1:], (), (2, 4),
             graph.nodes[-1].dtype)])
    with pytest.raises(GraphVerificationError, match="typed"):
        verify(wrong_type)
    missing = graph.copy(outputs=[99])
    with pytest.raises(GraphVerificationError, match="output %99"):
        verify(missing)
