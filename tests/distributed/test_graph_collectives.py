"""Collectives as graph nodes, without MPI: graphs built directly hold collective nodes, and
every pass, the plan and the interpreter treat them as effects (execmode/distributed/
graph_ops.py). Their values on real ranks are checked by ranks_worker.py."""

from __future__ import annotations

import numpy as np
import pytest

from execmode.debug.hunt import hunt
from execmode.distributed import graph_ops  # registers the collective ops
from execmode.errors import ExecmodeError
from execmode.graph.interpret import Interpreter
from execmode.graph.ir import Graph, Literal, Node, format_graph, make_attrs
from execmode.graph.verify import GraphVerificationError
from execmode.jit_driver.compiled_segment import compile_graph
from execmode.ops import OPS
from execmode.passes.cse import eliminate_common_subexpressions
from execmode.passes.dce import eliminate_dead_code
from execmode.passes.fold import fold_constants
from execmode.passes.fuse import fuse
from execmode.passes.manager import run_passes
from execmode.plan import build_plan

F32 = np.dtype(np.float32)


def _node(i, op, inputs=(), shape=(4,), **attrs):
    return Node(i, op, tuple(inputs), make_attrs(attrs), shape, F32)


def _graph(nodes, outputs) -> Graph:
    return Graph("g", [_node(0, "input", kind="arg")] + nodes, [0], outputs)


def _reduce(i, x):
    return _node(i, "all_reduce", (x,), reduce_op="sum")


def _ops(graph):
    return [n.op for n in graph.nodes if n.op != "input"]


def test_the_collective_ops_are_flagged_impure_and_collective():
    for name in ("all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
                 "reduce_scatter", "reduce_scatter_tensor", "barrier"):
        assert OPS[name].impure and OPS[name].collective, name


def test_cse_never_merges_two_identical_collectives():
    g = _graph([_reduce(1, 0), _reduce(2, 0), _node(3, "add", (1, 2))], [3])
    out, rewrites, merged, _ = eliminate_common_subexpressions(g)
    assert _ops(out) == ["all_reduce", "all_reduce", "add"] and not merged, rewrites


def test_dce_keeps_a_collective_whose_result_nothing_reads():
    g = _graph([_reduce(1, 0), _node(2, "exp", (0,))], [2])
    out, _, _, _ = eliminate_dead_code(g)
    assert _ops(out) == ["all_reduce", "exp"]


def test_fold_never_runs_a_collective_of_constants(monkeypatch):
    ran = []
    monkeypatch.setattr(graph_ops, "default_group", lambda caller: ran.append(caller))
    attrs = {"shape": (4,), "value": 1.0, "dtype": F32, "device": "cpu"}
    full = Node(1, "full", (), make_attrs(attrs), (4,), F32)
    g = _graph([full, _reduce(2, 1)], [2])
    out, _, _, _ = fold_constants(g)
    assert "all_reduce" in _ops(out) and ran == []  # folding would run it at compile time


def test_fusion_leaves_a_collective_between_two_kernels():
    # (fusion takes elementwise ops and reductions only: an opaque op is never a member)
    g = _graph([_node(1, "exp", (0,)), _node(2, "multiply", (1, Literal(2.0))),
                _reduce(3, 2), _node(4, "exp", (3,)), _node(5, "multiply", (4, Literal(2.0)))],
               [5])
    out, _, _, _ = fuse(g)
    assert _ops(out) == ["fused", "all_reduce", "fused"]
    assert all(m.op != "all_reduce" for n in out.nodes for m in n.body)


def test_the_pipeline_keeps_every_collective_in_order_and_prints_it():
    g = _graph([_reduce(1, 0), _node(2, "broadcast", (0,), src=0), _reduce(3, 0),
                _node(4, "exp", (1,))], [4])
    lowered, _ = run_passes(g)
    assert [op for op in _ops(lowered) if OPS[op].collective] == [
        "all_reduce", "broadcast", "all_reduce"]
    text = format_graph(lowered)
    assert "all_reduce[reduce_op='sum'] %0" in text and "broadcast[src=0] %0" in text


def _swap_first_two_collectives(graph):
    nodes = list(graph.nodes)
    a, b = [k for k, n in enumerate(nodes) if n.op in ("all_reduce", "broadcast")][:2]
    nodes[a], nodes[b] = nodes[b], nodes[a]
    return graph.copy(nodes=nodes), [], {}, {}


def _drop_unused_collectives(graph):
    used = {i for n in graph.nodes for i in n.node_inputs} | set(graph.outputs)
    kept = [n for n in graph.nodes if n.id in used or n.op == "input"]
    return graph.copy(nodes=kept), [], {}, {}


@pytest.mark.parametrize("bad_pass", [_swap_first_two_collectives, _drop_unused_collectives])
def test_a_pass_that_moves_or_drops_a_collective_is_refused(bad_pass):
    g = _graph([_reduce(1, 0), _node(2, "broadcast", (0,), src=0), _node(3, "exp", (0,))],
               [3])
    with pytest.raises(GraphVerificationError, match="impure nodes must stay as traced"):
        run_passes(g, passes=[("bad", bad_pass)])


def test_the_plan_names_collective_steps_and_runs_them_from_python():
    g = _graph([_node(1, "exp", (0,)), _reduce(2, 1), _node(3, "exp", (2,)),
                _node(4, "exp", (3,))], [4])
    lowered, _ = run_passes(g)
    plan = compile_graph(lowered, "g")
    assert [s.kind for s in plan.steps if s.node.op == "all_reduce"] == ["collective"]
    assert plan.collectives == ("%2 all_reduce",)
    assert plan.program is None and "collectives run from Python" in plan.program_reason
    assert build_plan(lowered).collectives == ("%2 all_reduce",)


def test_the_interpreter_never_reruns_a_collective_on_one_rank():
    g = _graph([_reduce(1, 0), _node(2, "exp", (1,))], [2])
    with pytest.raises(ExecmodeError, match="cannot be re-run op by op on one rank"):
        Interpreter(g).run(np.ones(4, np.float32))


def test_the_debuggers_reruns_leave_collectives_alone():
    g = _graph([_reduce(1, 0), _node(2, "exp", (1,))], [2])
    plan = compile_graph(run_passes(g)[0], "g")
    x = np.full(4, np.nan, np.float32)
    report = hunt(plan, [x], 0)  # a NaN breakpoint's hunt: no op-by-op re-run
    assert "not re-run op by op" in report["text"] and "%1 all_reduce" in report["text"]
    with pytest.raises(ExecmodeError, match="a plan with collectives runs once per call"):
        plan.run_collect([x])


def test_a_ddp_buckets_node_names_its_parameters_in_the_ir_and_explain():
    from execmode.jit_driver.explain_cli import _collective_text

    bucket = ("2.bias", "2.weight", "0.bias")
    g = _graph([_node(1, "all_reduce", (0,), reduce_op="avg", bucket=bucket)], [1])
    lowered, record = run_passes(g)
    assert "all_reduce[bucket=('2.bias', '2.weight', '0.bias'), reduce_op='avg'] %0" \
        in format_graph(lowered)
    # every snapshot of the pass record shows it (the TUI's Passes view prints them)
    assert record.results and all("bucket=('2.bias'" in format_graph(r.graph)
                                  for r in record.results)
    (node,) = [n for n in lowered.nodes if n.op == "all_reduce"]
    assert _collective_text(node) == "%1 all_reduce (bucket: 2.bias, 2.weight, 0.bias)"
    assert _collective_text(_reduce(2, 0)) == "%2 all_reduce"


def test_a_process_group_is_guarded_by_identity_only():
    """Its count of collectives moves at every collective, a graph's too: guarded by
    value, a jitted DDP step would retrace or re-run its Python at every call."""
    from execmode.distributed.process_group import ProcessGroup
    from execmode.graph.guards import collect

    class Holder:
        pg = None

    holder = Holder()
    holder.pg = ProcessGroup(comm=None, rank=0, size=2, backend="mpi")
    guards = collect(lambda: holder.pg.rank)
    assert [g.label for g in guards if "pg" in g.label] == ["holder.pg"]  # not .sequence
