"""The plan executor: a compiled graph as an ordered list of steps over numbered slots.

A step is one fused kernel, one library call (matmul) or one single op. Values are freed
after their last use. Every step runs through :meth:`Plan.run_step` or, when someone
listens, :meth:`Plan._run_instrumented`: the one place that profilers time kernels and the
debugger stops between them (torch.fx's ``Interpreter.run_node`` is the model).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from . import instrument
from .backend import as_device, xp_for
from .graph.ir import ASSIGN, FUSED, INPUT, Graph, Literal, Node
from .ops import OPS


@dataclass
class Step:
    """One unit of execution. ``args`` are slot numbers or Literals."""

    name: str
    kind: str                  # "op" | "library" | "fused"
    node: Node
    args: tuple
    out: int
    fn: object                 # fn(*arrays) -> array
    free: tuple = ()           # slots whose last use is this step
    member_ids: tuple = ()
    member_ops: tuple = ()
    backend: str = "numpy"     # numpy | c | cuda | interpreter

    def describe(self) -> str:
        return f"{self.name} ({self.kind}: {' '.join(self.member_ops)})"


@dataclass
class Plan:
    graph: Graph
    steps: list[Step]
    n_slots: int
    input_slots: list[int]
    output_slots: list[int]
    assigns: list[tuple[int, int]] = field(default_factory=list)  # (input position, slot)
    graph_id: str = ""

    @property
    def kernel_count(self) -> int:
        return len(self.steps)

    def run(self, inputs: list) -> list:
        """Run on input arrays; apply assigns into the input arrays; return the outputs."""
        values = [None] * self.n_slots
        for slot, arr in zip(self.input_slots, inputs):
            values[slot] = arr
        if instrument._on_event or instrument._before_kernel or instrument._after_kernel:
            self._run_instrumented(values)
        else:
            for step in self.steps:
                values[step.out] = step.fn(*[values[a] if a.__class__ is int else a.value
                                             for a in step.args])
                for s in step.free:
                    values[s] = None
        outputs = [values[s] for s in self.output_slots]
        for position, slot in self.assigns:
            target = inputs[position]
            target[...] = values[slot]
        return outputs

    def run_step(self, step: Step, values: list):
        return step.fn(*[values[a] if a.__class__ is int else a.value for a in step.args])

    def _run_instrumented(self, values: list) -> None:
        for index, step in enumerate(self.steps):
            for fn in instrument._before_kernel:
                fn(self, index, values)
            t0 = time.perf_counter_ns()
            out = self.run_step(step, values)
            _synchronize(step)
            t1 = time.perf_counter_ns()
            values[step.out] = out
            instrument.emit(instrument.Event("kernel", {
                "graph_id": self.graph_id, "kernel": step.name, "step_kind": step.kind,
                "member_nodes": step.member_ids, "member_ops": step.member_ops,
                "bytes": getattr(out, "nbytes", 0), "output_shape": tuple(out.shape),
                "output_dtype": str(out.dtype), "device": step.node.device,
                "location": step.node.loc, "scope": step.node.scope,
                "backend": step.backend, "step_index": index,
            }, t0, t1))
            for fn in instrument._after_kernel:
                fn(self, index, out)
            for s in step.free:
                values[s] = None


def _synchronize(step: Step) -> None:
    # Host timing of a GPU step means nothing until the device has finished it.
    if step.node.device != "cpu":
        xp_for(as_device(step.node.device)).cuda.get_current_stream().synchronize()


def build_plan(graph: Graph, graph_id: str = "", kernel_factory=None) -> Plan:
    """Turn a (lowered) graph into a plan. ``kernel_factory(node)`` returns (fn, backend)
    for fused nodes; without one, fused nodes run their members op by op."""
    slot_of: dict[int, int] = {}
    input_slots = []
    for i in graph.inputs:
        slot_of[i] = len(slot_of)
        input_slots.append(slot_of[i])
    positions = {node_id: k for k, node_id in enumerate(graph.inputs)}
    steps: list[Step] = []
    assigns: list[tuple[int, int]] = []
    for n in graph.nodes:
        if n.op == INPUT:
            continue
        if n.op == ASSIGN:
            target, value = n.inputs
            if isinstance(value, Literal):
                raise ValueError("assign of a literal must be broadcast by the tracer")
            assigns.append((positions[target], slot_of[value]))
            continue
        slot_of[n.id] = len(slot_of)
        args = tuple(slot_of[i] if isinstance(i, int) else i for i in n.inputs)
        if n.op == FUSED:
            fn, backend = (kernel_factory(n) if kernel_factory else (None, "numpy"))
            if fn is None:
                fn, backend = _members_op_by_op(n), "numpy"
            steps.append(Step(n.label or f"fused%{n.id}", "fused", n, args, slot_of[n.id], fn,
                              member_ids=n.member_ids, member_ops=tuple(m.op for m in n.body),
                              backend=backend))
        else:
            kind = "library" if n.op == "matmul" else "op"
            steps.append(Step(n.op, kind, n, args, slot_of[n.id], _single_op(n),
                              member_ids=(n.id,), member_ops=(n.op,)))
    _assign_frees(steps, graph, slot_of, input_slots, assigns)
    return Plan(graph, steps, len(slot_of), input_slots,
                [slot_of[i] for i in graph.outputs], assigns, graph_id)


def _single_op(n: Node):
    op = OPS[n.op]
    attrs = n.attr
    device = as_device(n.device)
    xp = xp_for(device)
    impl = op.impl
    if attrs:
        return lambda *args: impl(xp, *args, **attrs)
    return lambda *args: impl(xp, *args)


def _members_op_by_op(fused: Node):
    """Run a fused node's members one by one (used before kernels are generated)."""
    members = [(m, _single_op(m)) for m in fused.body]
    input_ids = fused.node_inputs

    def run(*arrays):
        env = dict(zip(input_ids, arrays))
        out = None
        for m, fn in members:
            out = fn(*[env[i] if isinstance(i, int) else i.value for i in m.inputs])
            env[m.id] = out
        return out

    return run


def _assign_frees(steps, graph, slot_of, input_slots, assigns) -> None:
    keep = set(slot_of[i] for i in graph.outputs) | set(input_slots) | {s for _, s in assigns}
    last_use: dict[int, int] = {}
    for k, step in enumerate(steps):
        for a in step.args:
            if isinstance(a, int):
                last_use[a] = k
    frees: dict[int, list[int]] = {}
    for slot, k in last_use.items():
        if slot not in keep:
            frees.setdefault(k, []).append(slot)
    for k, step in enumerate(steps):
        # A value nobody reads (its last use is its own definition) is freed at once.
        if step.out not in last_use and step.out not in keep:
            frees.setdefault(k, []).append(step.out)
    for k, step in enumerate(steps):
        step.free = tuple(frees.get(k, ()))
