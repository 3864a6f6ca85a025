"""The Graph and Passes views list a jitted call's backward graph beside its forward
(jit_driver/backward.py records it like a segment: graph id ``f#0:0/backward``). Their
loaders read the recorded session; no Pilot, no child process."""

from __future__ import annotations

from execmode.tui.data import SessionReader
from execmode.tui.screens.graph import load_graphs
from execmode.tui.screens.passes import load_passes

import execmode as em
from execmode import nn


def test_graph_and_passes_views_list_the_backward_graph(tmp_path):
    em.random.seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    with em.profile(tmp_path / "run.db", calibrate=False):
        out = em.jit(model, backend="numpy")(em.ones((3, 4)))
        out.sum().backward()
    reader = SessionReader(tmp_path / "run.db")
    graphs = load_graphs(reader)
    ids = [g.graph_id for g in graphs.graphs]
    assert ids == ["Sequential#0:0", "Sequential#0:0/backward"]
    assert {g.function for g in graphs.graphs} == {"Sequential"}
    assert "Sequential#0:0/backward" in graphs.traces
    backward = graphs.graphs[1]
    assert "[backward]" in backward.ir_text and "saved %" in backward.ir_text
    passes = load_passes(reader)
    assert passes.graph_ids == ids
    assert [p.name for p in passes.passes["Sequential#0:0/backward"]][-1] == "plan_memory"
