"""The plan executor: a compiled graph as an ordered list of steps over numbered slots.

A step is one fused kernel, one library call (matmul) or one single op. Steps whose value
the memory plan pooled write into a preallocated buffer; the rest allocate. Values are
dropped after their last use. Every step runs through :meth:`Plan.run`'s loop or, when
someone listens, :meth:`Plan._run_instrumented`: the one place that the debugger stops
between kernels and kernel events are made. While the kernel clock runs (a profiler or
em.compare wants kernel times, :mod:`execmode.kernel_clock`), the plain loop times each
step into the plan's ``clock`` instead (``_run_timed``), and a whole-graph program times
its own steps in C.

This loop is deliberately not graph/interpret.py's ``Interpreter``: a replay's cost is
per call and measured (benchmarks/bench_single_op.py), so each step is a closure over slot
numbers (``_runner``) around the same per-node function the interpreter calls
(``op_function``), and a failing step is worded by the interpreter's ``node_failure``.
Fused nodes without a kernel (``_members_op_by_op``) are compiled the same way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import instrument, kernel_clock
from .backend import as_device, xp_for
from .errors import ExecmodeError
from .graph.interpret import node_failure
from .graph.ir import ASSIGN, FUSED, INPUT, Graph, Literal, Node
from .graph.op_call import op_function
from .ops import OPS
from .passes.memplan import REDUCTIONS_WITH_OUT, alias_roots


@dataclass
class Step:
    """One unit of execution. ``args`` are slot numbers or Literals."""

    name: str
    kind: str                  # "op" | "library" | "fused" | "kernel" | "collective"
    node: Node
    args: tuple
    out: int
    fn: object                 # fn(*arrays) -> array
    into: object = None        # into(out_array, *arrays): writes the result into out_array
    buffer: int | None = None  # the memory plan's buffer id, when pooled
    free: tuple = ()           # slots whose last use is this step
    member_ids: tuple = ()
    member_ops: tuple = ()
    backend: str = "numpy"     # numpy | c | cuda | interpreter
    out_array: object = None   # the typed view of the buffer, made on the first run
    run: object = None         # run(values): the compiled form of this step

    def describe(self) -> str:
        where = f" -> b{self.buffer}" if self.buffer is not None else ""
        return f"{self.name} ({self.kind}, {self.backend}: {' '.join(self.member_ops)}){where}"

    def failure(self, values: list, exc: Exception) -> Exception:
        """The error to raise when this step failed with ``exc``: eager's error for the op
        (an index tensor's value out of range is only seen here), naming the operands and
        the user's line it was traced from."""
        operands = [values[a] if a.__class__ is int else a.value for a in self.args]
        return node_failure(self.node, operands, exc)

    def call(self, values: list):
        """Compute this step from ``values`` and return the result (no side effects on
        ``values``): used by the instrumented loop and the debugger."""
        args = [values[a] if a.__class__ is int else a.value for a in self.args]
        if self.out_array is not None:
            self.into(self.out_array, *args)
            return self.out_array
        return self.fn(*args)


@dataclass
class Plan:
    graph: Graph
    steps: list[Step]
    n_slots: int
    input_slots: list[int]
    output_slots: list[int]
    assigns: list[tuple[int, int]] = field(default_factory=list)  # (input position, slot)
    graph_id: str = ""
    # Outputs are fresh, distinct arrays, as eager's results are: an output that is (a view
    # of) an input or of an earlier output (after simplify turned x + 0 into x, or CSE
    # merged two results) is copied. Assign values that are (views of) an input an assign
    # overwrites are copied before the assigns run, as eager would have read them.
    copy_outputs: tuple = ()
    copy_assigns: tuple = ()
    memory_plan: object = None
    # Set by jit: the graph as traced and the per-pass record (for the debugger's re-runs).
    source_graph: Graph | None = None
    record: object = None
    # The whole graph as one compiled C function (codegen/program.py), used by run() when
    # nobody listens; the steps stay for the instrumented loop and the debugger. Without
    # one, ``program_reason`` says why.
    program: object = None
    program_reason: str = ""
    # The run sums of each step while the kernel clock runs (kernel_clock.StepClock),
    # shared with the program, which writes its array from C.
    clock: object = None
    # Steps that talk to the other ranks ("%5 all_reduce"): they must run once per call,
    # so such a plan runs its steps from Python, never retried (fastcall, float_errors).
    collectives: tuple = ()
    _buffers_ready: bool = False
    _timed_steps: list | None = None   # _run_timed's table, made at its first run

    @property
    def kernel_count(self) -> int:
        return len(self.steps)

    def run(self, inputs: list) -> list:
        """Run on input arrays; apply assigns into the input arrays; return the outputs."""
        instrumented = (instrument._on_kernel or instrument._before_kernel
                        or instrument._after_kernel)
        if self.program is not None and not instrumented:
            # One C call: kernels, BLAS matmuls and the assigns' write-backs (None: an
            # input it writes came in another layout, and the steps below run instead).
            outputs = self.program.run(inputs)
            if outputs is not None:
                for k in self.copy_outputs:
                    outputs[k] = outputs[k].copy()
                return outputs
        if not self._buffers_ready:
            self._allocate_buffers()
        values = [None] * self.n_slots
        for slot, arr in zip(self.input_slots, inputs):
            values[slot] = arr
        if instrumented:
            self._run_instrumented(values)
        elif kernel_clock.demand:
            self._run_timed(values)
        else:
            try:
                for step in self.steps:
                    step.run(values)
            except Exception as exc:
                raise step.failure(values, exc) from None
        outputs = [values[s] for s in self.output_slots]
        for k in self.copy_outputs:
            outputs[k] = outputs[k].copy()
        if self.assigns:
            self.apply_assigns(inputs, values, outputs)
        return outputs

    def apply_assigns(self, inputs: list, values: list, outputs: list) -> None:
        """Write assign values into their inputs, after saving what the writes would
        clobber (values that alias an assigned input; outputs are fresh already)."""
        new = [values[slot] for _, slot in self.assigns]
        for k in self.copy_assigns:
            new[k] = new[k].copy()
        for (position, _), value in zip(self.assigns, new):
            inputs[position][...] = value

    def _run_timed(self, values: list) -> None:
        """The plain loop with each step's time (and new buffers) summed into the clock.
        What it does between two steps is the profiler's cost for such runs (stated as
        measured: store_queries.cost_counts), so it is a few operations: the sums added in
        place (kernel_clock.StepClock.add_step's arithmetic, inline), a GPU step's wait
        and the new-buffer check only for the steps they apply to."""
        perf_ns = time.perf_counter_ns
        timed = self._timed_steps or self._timing_table()
        start = t0 = perf_ns()
        for step, sums, on_gpu, pooled in timed:
            try:
                step.run(values)
            except Exception as exc:
                raise step.failure(values, exc) from None
            if on_gpu:
                _synchronize(step)
            t1 = perf_ns()
            ns = t1 - t0
            sums[0] += 1
            sums[1] += ns
            if ns < sums[2]:
                sums[2] = ns
            if ns > sums[3]:
                sums[3] = ns
            if not pooled:  # a kernel's pool counts the arrays it makes itself
                sums[4] += allocated_bytes(step, values[step.out])
            t0 = perf_ns()  # the bookkeeping is nobody's step
        self.clock.add_run(t0 - start)

    def _timing_table(self) -> list:
        """Per step: the step, its clock sums, whether it runs on a GPU, whether its
        kernel's output pool counts its new arrays."""
        sums = self.clock.py
        self._timed_steps = [(step, sums[i + 1], step.node.device != "cpu",
                              getattr(step.fn, "_pool", None) is not None)
                             for i, step in enumerate(self.steps)]
        return self._timed_steps

    def _run_instrumented(self, values: list) -> None:
        timed = kernel_clock.demand and self.clock is not None
        start = time.perf_counter_ns()
        for index, step in enumerate(self.steps):
            for fn in instrument._before_kernel:
                fn(self, index, values)
            pool = getattr(step.fn, "_pool", None)
            made = pool.made if pool is not None else 0
            t0 = time.perf_counter_ns()
            try:
                out = step.call(values)
            except Exception as exc:
                raise step.failure(values, exc) from None
            _synchronize(step)
            t1 = time.perf_counter_ns()
            values[step.out] = out
            nbytes = allocated_bytes(step, out)
            if timed:  # a pool's new arrays reach the clock from the pool itself
                self.clock.add_step(index, t1 - t0, nbytes)
            if pool is not None:
                nbytes += pool.made - made
            if instrument._on_kernel:
                instrument.emit_kernel(instrument.Event("kernel", {
                    "graph_id": self.graph_id, "kernel": step.name, "step_kind": step.kind,
                    "member_nodes": step.member_ids, "member_ops": step.member_ops,
                    "bytes": nbytes, "output_shape": tuple(out.shape),
                    "output_dtype": str(out.dtype), "device": step.node.device,
                    "location": step.node.loc, "scope": step.node.scope,
                    "backend": step.backend, "step_index": index,
                    "buffer": step.buffer,
                }, t0, t1))
            for fn in instrument._after_kernel:
                fn(self, index, out)
            for s in step.free:
                values[s] = None
        if timed:
            self.clock.add_run(time.perf_counter_ns() - start)

    def _allocate_buffers(self) -> None:
        mp = self.memory_plan
        if mp is not None and mp.buffers:
            raw = {}
            for b in mp.buffers:
                xp = xp_for(as_device(b.device))
                raw[b.id] = xp.empty(max(b.nbytes, 1), dtype=np.uint8)
            for step in self.steps:
                if step.buffer is not None:
                    n = step.node
                    step.out_array = raw[step.buffer][:n.nbytes].view(n.dtype).reshape(n.shape)
                    step.run = _runner(step)
        self._buffers_ready = True

    def describe(self) -> str:
        return "\n".join(f"{k:3d}  {s.describe()}" for k, s in enumerate(self.steps))

    def run_collect(self, inputs: list) -> list:
        """Run every step and return a copy of each step's output (assigns not applied):
        for comparing a compiled plan with the op-by-op meaning of its graph."""
        if self.collectives:
            raise ExecmodeError(f"{', '.join(self.collectives)}: a plan with collectives "
                                "runs once per call; running it again on one rank would "
                                "leave the other ranks out")
        if not self._buffers_ready:
            self._allocate_buffers()
        values = [None] * self.n_slots
        for slot, arr in zip(self.input_slots, inputs):
            values[slot] = arr
        outs = []
        for step in self.steps:
            # Fresh arrays, never the pooled buffers: this may run while the same plan is
            # paused mid-run in the debugger, whose live values sit in those buffers.
            out = step.fn(*[values[a] if a.__class__ is int else a.value for a in step.args])
            values[step.out] = out
            outs.append(out.copy())
        return outs


def allocated_bytes(step: Step, out) -> int:
    """The bytes of new memory a step's run took for its result: none for a view of
    another array or a buffer of the memory plan; a compiled kernel's results come from
    its output pool, which counts the arrays it makes anew itself (buffers.OutputPool)."""
    if step.out_array is not None or getattr(out, "base", None) is not None:
        return 0
    if getattr(step.fn, "_pool", None) is not None:
        return 0
    return getattr(out, "nbytes", 0)


def _synchronize(step: Step) -> None:
    # Host timing of a GPU step means nothing until the device has finished it.
    if step.node.device != "cpu":
        xp_for(as_device(step.node.device)).cuda.get_current_stream().synchronize()


def _runner(step: Step):
    """A closure that computes the step into ``values`` with as little Python as possible."""
    out, free = step.out, step.free
    args = step.args
    slots_only = all(a.__class__ is int for a in args)
    if step.out_array is not None:
        into, buf = step.into, step.out_array
        if slots_only and len(args) == 1:
            a0 = args[0]

            def run(v):
                into(buf, v[a0])
                v[out] = buf
                for s in free:
                    v[s] = None
        elif slots_only and len(args) == 2:
            a0, a1 = args

            def run(v):
                into(buf, v[a0], v[a1])
                v[out] = buf
                for s in free:
                    v[s] = None
        else:
            def run(v):
                into(buf, *[v[a] if a.__class__ is int else a.value for a in args])
                v[out] = buf
                for s in free:
                    v[s] = None
        return run
    fn = step.fn
    if slots_only and len(args) == 1:
        a0 = args[0]

        def run(v):
            v[out] = fn(v[a0])
            for s in free:
                v[s] = None
    elif slots_only and len(args) == 2:
        a0, a1 = args

        def run(v):
            v[out] = fn(v[a0], v[a1])
            for s in free:
                v[s] = None
    else:
        def run(v):
            v[out] = fn(*[v[a] if a.__class__ is int else a.value for a in args])
            for s in free:
                v[s] = None
    return run


def build_plan(graph: Graph, graph_id: str = "", kernel_factory=None) -> Plan:
    """Turn a (lowered) graph into a plan. ``kernel_factory(node)`` returns (kernel,
    backend) for fused nodes, a kernel being callable with a ``run_into(out, *arrays)``;
    without one, fused nodes run their members op by op."""
    memory_plan = graph.meta.get("memory_plan")
    assignment = memory_plan.assignment if memory_plan is not None else {}
    slot_of: dict[int, int] = {}
    input_slots = []
    for i in graph.inputs:
        slot_of[i] = len(slot_of)
        input_slots.append(slot_of[i])
    positions = {node_id: k for k, node_id in enumerate(graph.inputs)}
    dtype_of = {n.id: np.dtype(n.dtype) for n in graph.nodes}
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
            kernel, backend = kernel_factory(n) if kernel_factory else (None, "numpy")
            if kernel is None:
                fn, backend = _members_op_by_op(n), "numpy"
                into = _copy_into(fn)
            else:
                fn, into = kernel, getattr(kernel, "run_into", None) or _copy_into(kernel)
            step = Step(n.label or f"fused%{n.id}", "fused", n, args, slot_of[n.id], fn, into,
                        member_ids=n.member_ids, member_ops=tuple(m.op for m in n.body),
                        backend=backend)
        elif n.op == "matmul" and kernel_factory is not None and kernel_factory(n)[0] is not None:
            # A small matmul as generated loops beats the BLAS call's overhead.
            kernel, backend = kernel_factory(n)
            step = Step("matmul", "kernel", n, args, slot_of[n.id], kernel,
                        getattr(kernel, "run_into", None) or _copy_into(kernel),
                        member_ids=(n.id,), member_ops=(n.op,), backend=backend)
        else:
            kind = "library" if n.op == "matmul" else "collective" if OPS[n.op].collective \
                else "op"
            operand_dtypes = tuple(dtype_of[i] for i in n.inputs if isinstance(i, int))
            step = Step(n.op, kind, n, args, slot_of[n.id], op_function(n, None, operand_dtypes),
                        _single_op_into(n),
                        member_ids=(n.id,), member_ops=(n.op,))
        if n.id in assignment and step.into is not None:
            step.buffer = assignment[n.id]
        steps.append(step)
    _assign_frees(steps, graph, slot_of, input_slots, assigns)
    for step in steps:
        step.run = _runner(step)
    copy_outputs, copy_assigns = _aliases_of_assigned_inputs(graph)
    plan = Plan(graph, steps, len(slot_of), input_slots,
                [slot_of[i] for i in graph.outputs], assigns, graph_id, copy_outputs,
                copy_assigns, memory_plan)
    plan.collectives = tuple(f"%{s.node.id} {s.node.op}" for s in steps
                             if s.kind == "collective")
    plan.clock = kernel_clock.StepClock(graph_id, len(steps),
                                        tuple(StepDescription.of(s) for s in steps))
    for index, step in enumerate(steps):
        pool = getattr(step.fn, "_pool", None)
        if pool is not None:  # a compiled kernel's outputs: counted when made anew
            pool.count_into(plan.clock.array, kernel_clock.HEADER +
                            kernel_clock.FIELDS * index + 4)
    return plan


@dataclass(frozen=True)
class StepDescription:
    """What a reader of kernel times says of a step (no arrays, no functions)."""

    name: str
    kind: str
    member_ids: tuple
    member_ops: tuple
    shape: tuple
    dtype: str
    device: str
    scope: str
    location: object
    backend: str

    @classmethod
    def of(cls, step: Step) -> StepDescription:
        n = step.node
        return cls(step.name, step.kind, tuple(step.member_ids), tuple(step.member_ops),
                   tuple(n.shape), str(n.dtype), str(n.device), n.scope or "", n.loc,
                   step.backend)


def _aliases_of_assigned_inputs(graph: Graph) -> tuple[tuple, tuple]:
    """Positions of outputs that share memory with an input, an earlier output or a
    constant the graph keeps, and of assign values that are (views of) an input which an
    assign overwrites."""
    root = alias_roots(graph)
    inputs = set(graph.inputs)
    claimed: set[int] = set()
    outs = []
    constants = {n.id for n in graph.nodes if n.op == "constant"}
    for k, o in enumerate(graph.outputs):
        r = root.get(o, o)
        # A constant is one array the graph keeps across calls (a whole-graph program
        # hands it back as it is): each call's result must be its own.
        if r in inputs or r in claimed or r in constants:
            outs.append(k)
        claimed.add(r)
    targets = {n.inputs[0] for n in graph.nodes if n.op == ASSIGN}
    values = tuple(k for k, n in enumerate(a for a in graph.nodes if a.op == ASSIGN)
                   if root.get(n.inputs[1], n.inputs[1]) in targets)
    return tuple(outs), values


def _single_op_into(n: Node):
    """``into(out, *args)`` for ops NumPy/CuPy can compute into a given array, else None."""
    op = OPS[n.op]
    xp = xp_for(as_device(n.device))
    if n.op == "matmul":
        matmul = xp.matmul
        return lambda out, a, b: matmul(a, b, out=out)
    if n.op in REDUCTIONS_WITH_OUT:
        reduce = getattr(xp, n.op)
        axis, keepdims = n.attr["axis"], n.attr["keepdims"]
        if n.op == "min" and xp is not np:
            # CuPy 14's min with out= raises TypeError inside its CUB check (it compares
            # the out array with a dtype); max, sum and prod take out= fine.
            copyto = xp.copyto
            return lambda out, a: copyto(out, reduce(a, axis=axis, keepdims=keepdims))
        return lambda out, a: reduce(a, axis=axis, keepdims=keepdims, out=out)
    if isinstance(op.ufunc, np.ufunc) and not n.attrs:
        ufunc = op.ufunc if xp is np else getattr(xp, op.ufunc.__name__)
        return lambda out, *args: ufunc(*args, out=out)
    return None


def _copy_into(fn):
    def into(out, *args):
        out[...] = fn(*args)
    return into


def _members_op_by_op(fused: Node):
    """Run a fused node's members one by one (when no kernel is generated: dynamic sizes,
    no C compiler). A per-call replay path, so not ``Interpreter.run_members``: through the
    interpreter's run_node/call_node dispatch it cost 23% more (5 small members: 9.0 us
    against 7.3 us a call). The same pieces, though: each member's ``op_function`` and, when
    one fails, the interpreter's ``node_failure`` (eager's error, the member named).

    The members run as one generated function of straight-line calls (``v1 = f1(a0, c)``),
    as the generated replay runs a plan's steps (jit_driver/fastcall.py): looking each
    operand up in a dict of values by node id cost ~0.5 us a member. Where a member raises,
    the members run again one at a time, so the one that fails is named."""
    members = [(m, op_function(m)) for m in fused.body]
    input_ids = fused.node_inputs
    stepwise = _members_one_at_a_time(members, input_ids)
    params = [f"a{k}" for k in range(len(input_ids))]
    name_of: dict = {}
    for param, i in zip(params, input_ids):  # (an id given twice: the last, as dict(zip))
        name_of[i] = param
    namespace: dict = {"_stepwise": stepwise}
    lines = [f"def run({', '.join(params)}):", "    try:"]
    for j, (m, fn) in enumerate(members):
        namespace[f"f{j}"] = fn
        operands = []
        for k, i in enumerate(m.inputs):
            if isinstance(i, int):
                operands.append(name_of[i])
            else:
                namespace[f"c{j}_{k}"] = i.value
                operands.append(f"c{j}_{k}")
        name_of[m.id] = f"v{j}"
        lines.append(f"        v{j} = f{j}({', '.join(operands)})")
    lines += [f"        return v{len(members) - 1}" if members else "        return None",
              "    except Exception:",
              f"        return _stepwise({', '.join(params)})"]
    exec("\n".join(lines), namespace)  # noqa: S102 - our own text, from the graph's ids
    return namespace["run"]


def _members_one_at_a_time(members, input_ids):
    """The members run one at a time, a failing one raising as the interpreter words it."""
    def run(*arrays):
        env = dict(zip(input_ids, arrays))
        out = None
        for m, fn in members:
            operands = [env[i] if isinstance(i, int) else i.value for i in m.inputs]
            try:
                out = fn(*operands)
            except Exception as exc:
                raise node_failure(m, operands, exc) from None
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
        # A value nobody reads is dropped at once.
        if step.out not in last_use and step.out not in keep:
            frees.setdefault(k, []).append(step.out)
    for k, step in enumerate(steps):
        step.free = tuple(frees.get(k, ()))
