"""Finding where a NaN/Inf or a numeric difference came from, in graph mode.

When a fused kernel's output trips a NaN/Inf condition, the segment is re-run op by op
from its saved inputs (the graph as traced, before any pass) and the first op that turned
finite inputs into non-finite output is named, with its line and its inputs' summaries. If
the op-by-op re-run stays finite, each pass's snapshot is re-run in turn to say which pass
introduced it, and failing that, the kernel (codegen) is blamed: the case where JAX's
debug_nans gives up.
"""

from __future__ import annotations

import numpy as np

from ..backend import to_numpy
from ..graph.interpret import Interpreter, interpret
from ..graph.ir import FUSED, INPUT, Graph
from .summary import summarize


def _nonfinite(a) -> bool:
    return getattr(a, "dtype", None) is not None and a.dtype.kind == "f" and \
        not bool(np.isfinite(to_numpy(a)).all())


def _loc(n) -> dict | None:
    return n.loc.to_json() if n.loc is not None else None


def first_nonfinite(graph: Graph, values: dict) -> dict | None:
    """The first node (in program order) whose inputs are finite but output is not."""
    for n in graph.nodes:
        v = values.get(n.id)
        if v is None or not _nonfinite(v):
            continue
        if n.op == INPUT:
            return {"node": n.id, "op": "input", "label": n.label, "location": None,
                    "inputs": [], "output": summarize(v),
                    "text": f"the NaN/Inf came in through input %{n.id} ({n.label})"}
        bad_inputs = [i for i in n.node_inputs if _nonfinite(values[i])]
        if not bad_inputs:
            where = f" at {n.loc.short}" if n.loc else ""
            return {"node": n.id, "op": n.op, "location": _loc(n), "scope": n.scope,
                    "inputs": [summarize(values[i]) for i in n.node_inputs],
                    "output": summarize(v),
                    "text": f"%{n.id} = {n.op} produced the first NaN/Inf{where}"}
    return None


def hunt(plan, inputs: list, kernel_index: int | None = None) -> dict:
    """Locate the origin of a NaN/Inf in the segment ``plan`` runs, from its inputs."""
    report = {"kernel": None, "found_op_by_op": False, "origin": None}
    if kernel_index is not None:
        step = plan.steps[kernel_index]
        report["kernel"] = {"name": step.name, "members": list(step.member_ids),
                            "ops": list(step.member_ops), "backend": step.backend}
    if plan.collectives:  # a re-run would run them again on this rank alone
        report["text"] = (f"not re-run op by op: the segment's collectives "
                          f"({', '.join(plan.collectives)}) run once per call")
        return report
    traced = plan.source_graph or plan.graph
    values = interpret(traced, inputs)
    origin = first_nonfinite(traced, values)
    report["found_op_by_op"], report["origin"] = origin is not None, origin
    if origin is not None:
        report["text"] = origin["text"]
        return report
    # Op by op everything is finite. Is anything non-finite at all, in the compiled run?
    if not any(_nonfinite(out) for out in plan.run_collect(inputs)):
        report["text"] = "no NaN or Inf in this segment, op by op or compiled"
        return report
    # Only the compiled run is non-finite: did a pass or the kernel introduce it?
    record = plan.record
    for result in getattr(record, "results", []):
        snap_values = interpret(result.graph, inputs, keep_members=True)
        culprit = first_nonfinite(result.graph, snap_values)
        if culprit is not None:
            report["introduced_by_pass"] = result.name
            report["text"] = (f"op by op the segment stays finite; the graph after pass "
                              f"{result.name} produces a NaN/Inf at %{culprit['node']}")
            return report
    name = report["kernel"]["name"] if report["kernel"] else "a kernel"
    backend = report["kernel"]["backend"] if report["kernel"] else "?"
    report["introduced_by_kernel"] = name
    report["text"] = (f"op by op the segment stays finite, and so does every pass snapshot: "
                      f"the generated kernel {name} ({backend}) introduced the NaN/Inf")
    return report


def differential_check(plan, inputs: list, rtol: float = 1e-4, atol: float = 1e-5) -> dict:
    """Compare the compiled plan with the op-by-op run of the traced graph, node by node
    (intermediates inside fused kernels are recomputed from the kernel's real inputs), and
    report the first node that differs beyond tolerance and the pass that rewrote it."""
    traced = plan.source_graph or plan.graph
    reference = interpret(traced, inputs)
    members = Interpreter(keep_members=True)
    order = {n.id: k for k, n in enumerate(traced.nodes)}
    outputs = plan.run_collect(inputs)
    actual: dict = dict(zip(plan.graph.inputs, inputs))
    kernel_of: dict = {}
    for step, out in zip(plan.steps, outputs):
        node = step.node
        if node.op == FUSED:
            # Every member from the kernel's real inputs (the last one too: cheap, and
            # replaced below by what the kernel itself computed).
            members.run_members(node, [actual[i] for i in node.node_inputs])
            for m in node.body[:-1]:
                actual[m.id] = members.env[m.id]
                kernel_of[m.id] = step
            actual[node.body[-1].id] = out  # the kernel's own result for its last member
            kernel_of[node.body[-1].id] = step
        kernel_of[node.id] = step
        actual[node.id] = out
    worst = None
    for node_id, value in actual.items():
        ref = reference.get(node_id)
        if node_id not in order or ref is None or getattr(ref, "shape", None) != value.shape:
            continue
        err = _mismatch(to_numpy(value), to_numpy(ref), rtol, atol)
        if err is not None and (worst is None or order[node_id] < order[worst["node"]]):
            step = kernel_of.get(node_id)
            worst = {"node": node_id, "op": traced.node(node_id).op, "max_abs_error": err,
                     "kernel": step.name if step else None,
                     "backend": step.backend if step else None,
                     "location": _loc(traced.node(node_id))}
    report = {"mismatch": worst is not None, "first": worst}
    if worst is None:
        report["text"] = "every node matches the op-by-op run within tolerance"
        return report
    rewrites = []
    for result in getattr(plan.record, "results", []):
        for r in result.rewrites:
            if worst["node"] in r.nodes:
                rewrites.append({"pass": result.name, "sentence": r.sentence})
    report["rewrites"] = rewrites
    culprit = next((r["pass"] for r in reversed(rewrites) if r["pass"] != "fuse"), None)
    where = f" (rewritten by {culprit})" if culprit else f" (kernel {worst['kernel']})"
    report["text"] = (f"first difference at %{worst['node']} = {worst['op']}{where}: "
                      f"max abs error {worst['max_abs_error']:.3g}")
    report["pass"] = culprit
    return report


def _mismatch(a, b, rtol, atol):
    """The max abs error if a and b differ beyond tolerance (NaN == NaN), else None."""
    if a.dtype.kind == "b" or b.dtype.kind == "b":
        return 1.0 if bool((a != b).any()) else None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if bool(np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True).all()):
        return None
    diff = np.abs(a64 - b64)
    return float(np.nanmax(diff)) if np.isfinite(diff).any() else float("inf")
