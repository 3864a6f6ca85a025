"""Eager vs fused for the graphs a session recorded, measured on request.

``em.compare`` runs the user's function both ways, so it needs the function and its
arguments: only the script can call it. A session still holds every compiled graph as
traced (the ``graph`` events' IR); from that alone this module rebuilds each graph, runs
it op by op (eager: one NumPy call per node, as the eager engine does) and compiled (the
same passes and kernels as jit), and lines every compiled step up with the nodes it
replaced, as ``em.compare`` does, with the same protocol (interleaved rounds, medians,
a ratio only when the spreads separate). What it cannot have is the script's own values: the
inputs are random, of the recorded shapes and dtypes (integers are 0, so indices stay in
range). Times depend on shapes, not values, for every op but a few data-dependent ones.
Graphs on a CUDA device are skipped without a GPU here; a graph whose IR does not
rebuild is skipped with the reason.

Run as ``python -m execmode.profilers.graph_compare SESSION [--repeat N]``: one JSON
line per graph on stdout (``{"progress": ...}`` before each, then its rows or the
reason it was skipped), so a caller (the TUI's Profile view) can show progress while it
waits. A child process, because the eager loop holds the GIL for seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from execmode.profilers import measure
from execmode.profilers.compare import ComparisonRow, _assigns_and_removed, _sum_spreads
from execmode.profilers.measure import Spread

from execmode import instrument
from execmode.graph.interpret import Interpreter
from execmode.graph.ir import ASSIGN, INPUT, Graph

REPEAT = 5


class GraphSkipped(Exception):
    """This graph cannot be measured here; the message says why."""


def recorded_graphs(session_path: str) -> list[dict]:
    """The ``graph`` events of a session (function, graph_id, ir_json), in order."""
    from execmode.profilers.session import open_session

    with open_session(session_path) as session:
        events = [e.data for e in session.events("graph")]
    seen, out = set(), []
    for data in events:
        key = data.get("graph_id")
        if key in seen or not isinstance(data.get("ir_json"), dict):
            continue
        seen.add(key)
        out.append(data)
    return out


def measure_graph(ir_json: dict, repeat: int = REPEAT,
                  rounds: int = measure.MIN_ROUNDS) -> list[ComparisonRow]:
    """Rows of eager-vs-compiled time for one recorded graph (random inputs): medians of
    ``rounds`` interleaved rounds of ``repeat`` runs each (measure.py's protocol)."""
    from execmode.jit_driver.compiled_segment import compile_graph, lower_graph

    try:
        graph = Graph.from_json(ir_json)
    except (KeyError, TypeError, ValueError) as exc:
        raise GraphSkipped(f"its IR does not rebuild ({exc})") from None
    devices = {n.device for n in graph.nodes}
    if any(str(d).startswith("cuda") for d in devices) and not _gpu_here():
        raise GraphSkipped("it ran on a CUDA device and there is no GPU here")
    lowered, _record = lower_graph(graph)
    plan = compile_graph(lowered, graph.name)
    eager, compiled = _interleaved_times(graph, plan, repeat, rounds)
    rows, used = [], set()
    for index, step in enumerate(plan.steps):
        members = [m for m in step.member_ids if m in eager]
        used.update(members)
        rows.append(ComparisonRow(
            graph.name, step.name, step.kind, [eager[m][0] for m in members],
            _sum_spreads([eager[m][1] for m in members]), compiled.get(index),
            sum(eager[m][2] for m in members),
            step.node.nbytes if step.buffer is None else 0, list(step.member_ids)))
    for node_id, kind in _assigns_and_removed(graph, lowered, used):
        if node_id in eager:
            op, spread, nbytes = eager[node_id]
            rows.append(ComparisonRow(graph.name, f"(%{node_id} {kind})", "removed", [op],
                                      spread, None, nbytes, 0, [node_id]))
    return rows


class _ClockOn:
    wants_kernel_times = True


def _interleaved_times(graph: Graph, plan, repeat: int, rounds: int):
    """(node id -> (op, Spread of its eager ns, output bytes), step index -> Spread of its
    compiled ns), from interleaved rounds: each node run as one eager op would (one at a
    time, each timed), and the plan with its kernel clock. Fresh random inputs per run
    (assigns write into them)."""
    nodes = [n for n in graph.nodes if n.op not in (INPUT, ASSIGN)]
    interpreter = Interpreter(graph)
    node_rounds: list[dict] = []
    step_rounds: list[dict] = []
    clock = plan.clock
    timer = _ClockOn()

    def eager_round():
        totals: dict[int, float] = {}
        for _ in range(repeat):
            env = dict(zip(graph.inputs, _random_inputs(graph)))
            for n in nodes:
                t0 = time.perf_counter_ns()
                env[n.id] = interpreter.run_node(n, env)
                totals[n.id] = totals.get(n.id, 0) + time.perf_counter_ns() - t0
        node_rounds.append({k: v / repeat for k, v in totals.items()})

    def graph_round():
        before = [clock.step_totals(i)[:2] for i in range(clock.n_steps)]
        with instrument.listening(timer):
            for _ in range(repeat):
                plan.run(_random_inputs(graph))
        after = [clock.step_totals(i)[:2] for i in range(clock.n_steps)]
        step_rounds.append({i: (a[1] - b[1]) / (a[0] - b[0])
                            for i, (a, b) in enumerate(zip(after, before)) if a[0] > b[0]})

    eager_round()  # warm-up: first calls, page faults, buffers, kernel loads
    graph_round()
    node_rounds.clear()
    step_rounds.clear()
    measure.run_interleaved({"eager": eager_round, "graph": graph_round}, rounds=rounds)
    eager = {n.id: (n.op, Spread.of([r[n.id] for r in node_rounds], repeat), n.nbytes)
             for n in nodes}
    steps = {i for r in step_rounds for i in r}
    compiled = {i: Spread.of([r.get(i, 0.0) for r in step_rounds], repeat) for i in steps}
    return eager, compiled


def _gpu_here() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.is_available())
    except Exception:  # noqa: BLE001 - no CuPy, no driver: no GPU
        return False


def _random_inputs(graph: Graph) -> list:
    rng = np.random.default_rng(0)
    by_id = {n.id: n for n in graph.nodes}
    arrays = []
    for node_id in graph.inputs:
        n = by_id[node_id]
        if n.dtype.kind == "f":
            arrays.append(rng.standard_normal(n.shape).astype(n.dtype))
        else:  # indices, labels, masks: 0 is always in range
            arrays.append(np.zeros(n.shape, dtype=n.dtype))
    return arrays


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m execmode.profilers.graph_compare",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("session")
    p.add_argument("--repeat", type=int, default=REPEAT)
    args = p.parse_args(argv)
    graphs = recorded_graphs(args.session)
    _say({"graphs": len(graphs)})
    for i, data in enumerate(graphs):
        graph_id, function = data.get("graph_id", "?"), data.get("function", "?")
        _say({"progress": i, "total": len(graphs), "graph": graph_id})
        try:
            rows = measure_graph(data["ir_json"], args.repeat)
        except GraphSkipped as exc:
            _say({"graph": graph_id, "function": function, "skipped": str(exc)})
            continue
        except Exception as exc:  # noqa: BLE001 - one graph's failure is its row, not the end
            _say({"graph": graph_id, "function": function,
                  "skipped": f"measuring failed: {type(exc).__name__}: {exc}"})
            continue
        _say({"graph": graph_id, "function": function, "repeat": args.repeat,
              "rounds": measure.MIN_ROUNDS, "rows": [r.to_json() for r in rows]})
    return 0


def _say(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, default=float) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
