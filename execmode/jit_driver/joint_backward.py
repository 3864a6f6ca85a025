"""A jitted call's backward at run time: the results' shared autograd node.

:class:`JointBackward` is what one traced signature needs to differentiate its results;
``attach`` gives each call's differentiable results one shared :class:`JitCall` (a
``tape.MultiOutputOp``), whose backward runs the compiled backward graph for the results
that got a gradient, with eager's refusals (backward.py says the design).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import dispatch, tape
from .._tensor import Tensor
from ..autograd import SECOND_BACKWARD, last_write_accumulated, overwritten_error
from ..errors import BackwardError
from ..graph.views import replay
from ..tape import GradNode, MultiOutputOp
from .backward_trace import CANNOT, BackwardGraph, trace_backward
from .float_errors import run_plan
from .results import resolve


@dataclass
class JointBackward:
    """What one traced signature needs to differentiate its results."""

    jitted: object             # the JitFunction (compiles the backward graph like a segment)
    rebuild: object            # results.build_results: tensors from a plan's outputs and specs
    graph_id: str              # "f#0:0/backward"
    # Each differentiable output's tensor at a call: ("result", index among the results)
    # or ("ref", the argument or capture the function wrote with a history: results.resolve).
    results: list
    inputs: list               # refs of the tensors gradients flow into (results.resolve)
    # The tensors visible outside the call that its nodes read (eager checks them for
    # overwrites): ("ref", an argument or capture), ("result", a returned value) or
    # ("grad", an argument or capture whose .grad after the call it is).
    checks: list = field(default_factory=list)
    saved_specs: list = field(default_factory=list)
    n_results: int = 0
    backend: object = None
    refusal: str | None = None
    # Outputs whose own backward eager would refuse (an op on their way read a value
    # overwritten later), by index: a backward through the others still runs.
    refusals: dict = field(default_factory=dict)
    graphs: dict = field(default_factory=dict)   # mask -> BackwardGraph
    # mask -> the graph of what eager runs before it refuses (backward_trace.py)
    prefixes: dict = field(default_factory=dict)
    tape: object = None        # BackwardTape, kept to trace the graph of other masks
    # Why each call must re-run the Python (a history that changes per call), or "".
    per_call: str = ""
    saved_tensors: list = field(default_factory=list)    # while tracing: the saved values
    # The Python numbers the forward read (obj.lr): a backward graph reads them as inputs,
    # and must read this call's values, not those at backward time.
    scalars: list = field(default_factory=list)

    # --- at every call ----------------------------------------------------------------
    def attach(self, results: list, leaves, outputs) -> None:
        """Give this call's differentiable results their shared node."""
        saved = self.saved_arrays(results, leaves, outputs)
        inputs = tuple(resolve(ref, leaves) for ref in self.inputs)
        checked = [results[r] if kind == "result" else resolve(r, leaves)._grad
                   if kind == "grad" else resolve(r, leaves) for kind, r in self.checks]
        call = JitCall(self, inputs, saved, checked)
        call.scalar_values = {id(number): number.read() for number in self.scalars}
        for k, (kind, r) in enumerate(self.results):
            t = results[r] if kind == "result" else resolve(r, leaves)
            t.requires_grad = True
            t._grad_fn = GradNode(call, inputs, {"output": k}, None)

    def saved_arrays(self, results, leaves, outputs) -> list:
        saved: list = []
        for spec in self.saved_specs:
            kind = spec[0]
            if kind == "out":
                array = outputs[spec[1]]
                saved.append(replay(spec[2], array) if spec[2] else array)
            elif kind == "same":
                j = spec[1]
                saved.append(results[j]._data if j < self.n_results
                             else saved[j - self.n_results])
            elif kind == "arg":
                saved.append(leaves[spec[1]]._data)
            elif kind == "view":
                saved.append(replay(spec[2], spec[1].read(leaves)))
            elif kind == "grad":
                saved.append(resolve(spec[1], leaves)._grad._data)
            else:  # a capture the function wrote: its array after the call
                saved.append(spec[1]._data)
        return saved

    # --- at backward ------------------------------------------------------------------
    def graph_for(self, mask: tuple) -> BackwardGraph:
        bg = self.graphs.get(mask)
        if bg is None:
            bg = self.graphs[mask] = trace_backward(self, self.tape, mask)
        if bg.compiled is None:
            bg.compiled = self.jitted.compile_segment(bg.segment.graph, bg.backend)
            _fresh_outputs(bg)
        return bg


class JitCall(MultiOutputOp):
    """One call's results' shared autograd node: its backward runs the backward graph."""

    __slots__ = ("joint", "inputs", "saved", "checked", "made_at", "freed_nodes", "_running",
                 "scalar_values")

    def __init__(self, joint: JointBackward, inputs: tuple, saved: list, checked: list):
        self.joint, self.inputs, self.saved, self.checked = joint, inputs, saved, checked
        self.made_at = tape._tick
        self.freed_nodes: frozenset = frozenset()  # the tape nodes whose values are freed
        self._running: frozenset = frozenset()     # the last backward's saving nodes
        self.scalar_values: dict = {}  # id(SymbolicScalar) -> its value at this call

    @property
    def freed(self) -> bool:
        return bool(self.freed_nodes)

    @freed.setter
    def freed(self, value: bool) -> None:
        # autograd marks the call freed after a backward without retain_graph: what that
        # backward's graph saved is gone, the rest of the call's ops keep theirs.
        if value:
            self.freed_nodes |= self._running

    @property
    def name(self) -> str:
        return f"em.jit({self.joint.jitted.name})"

    def backward(self, gradients: dict) -> list:
        joint = self.joint
        mask = walk_order(gradients)
        refusal = joint.refusal or next(
            (joint.refusals[k] for k in mask if k in joint.refusals), None)
        if refusal is not None:
            self._run_prefix(mask, gradients)
            raise BackwardError(refusal)
        if dispatch.current_tracer() is not None:
            raise BackwardError(CANNOT.format(
                why="the ops that made it ran in a compiled graph, whose backward cannot be "
                    "traced into another jitted function's graph"))
        bg = joint.graph_for(mask)
        if bg.freed_at is not None:
            raise BackwardError(f"backward through {bg.freed_at}: {SECOND_BACKWARD}")
        self.saves_for_backward = bg.saves  # whether autograd frees this node afterwards
        self._running = bg.saving_nodes
        self._check_writes(gradients, bg)
        self._check_accumulations(bg)
        for hook in bg.at_each_backward:
            hook()
        leaves, outputs = self._run(bg, mask, gradients)
        grads = joint.rebuild(bg.specs, leaves, outputs)
        return [(self.inputs[i], g) for i, g in zip(bg.receivers, grads)]

    def _run(self, bg: BackwardGraph, mask: tuple, gradients: dict) -> tuple:
        """Run a backward graph: its leaves (the gradients, then the saved values) and
        its plan's outputs."""
        leaves = [gradients[k][1] for k in mask]
        for array in self.saved:
            t = object.__new__(Tensor)
            t._data, t.requires_grad = array, False
            leaves.append(t)
        arrays = [self._read(src, leaves) for src in bg.segment.sources]
        return leaves, run_plan(bg.compiled.plan, arrays)

    def _run_prefix(self, mask: tuple, gradients: dict) -> None:
        """Before raising eager's refusal: run what eager's walk runs before it refuses,
        so that an op there that fails (an SVD of an inf) raises first, as eagerly."""
        pg = self.joint.prefixes.get(tuple(sorted(mask)))
        if pg is None or dispatch.current_tracer() is not None:
            return
        if pg.compiled is None:
            pg.compiled = self.joint.jitted.compile_segment(pg.segment.graph, pg.backend)
        self._run(pg, mask, gradients)

    def _read(self, src, leaves):
        """A backward graph input: a number the forward read, as it was at this call."""
        if src.kind == "scalar" and id(src.scalar) in self.scalar_values:
            return np.asarray(self.scalar_values[id(src.scalar)], dtype=src.dtype)
        return src.read(leaves)

    def reads_saved(self, positions) -> bool:
        joint = self.joint
        mask = walk_order(positions)
        if joint.refusal is not None or any(k in joint.refusals for k in mask):
            return False  # backward() raises the refusal eager raises
        if mask not in joint.graphs and dispatch.current_tracer() is not None:
            # A backward met while tracing another call (its graph reads this call's
            # results): tracing this call's backward graph now would record it into that
            # trace; backward() refuses with the reason, a BackwardError as eager's.
            return False
        return bool(joint.graph_for(mask).saving_nodes & self.freed_nodes)

    def _check_writes(self, gradients: dict, bg: BackwardGraph) -> None:
        """Eager refuses a backward through values overwritten in place after an op used
        them; so does the call, for what its nodes on the way read from outside and what
        it returns."""
        stale = [self.checked[i] for i in bg.checked
                 if getattr(self.checked[i], "_written_at", 0) > self.made_at and
                 (i in bg.values_read or not last_write_accumulated(self.checked[i]))]
        for result, _ in gradients.values():
            if getattr(result, "_written_at", 0) > self.made_at and any(
                    np.may_share_memory(result._data, s) for s in self.saved
                    if isinstance(s, np.ndarray) and isinstance(result._data, np.ndarray)):
                stale.append(result)
        if stale:
            raise overwritten_error(self.name, stale[0], "the call")

    def _check_accumulations(self, bg: BackwardGraph) -> None:
        """Eager's walk adds a leaf's gradient into its ``.grad`` in place before a later
        node reads that ``.grad``'s values, and refuses there: so does the call, where the
        leaf's ``.grad`` is still the one the call's ops read (a ``.grad`` set to None
        since takes a new tensor, as eagerly)."""
        for receiver, index, op in bg.accumulated_reads:
            read = self.checked[index]
            if read is not None and self.inputs[receiver]._grad is read:
                raise overwritten_error(op, read)

    def output_overwritten(self, target: Tensor) -> None:
        """``target`` (a result of this call) is about to be overwritten with autograd
        recording (``y += 1``): keep the values the backward reads from its memory, as
        eager keeps an op's saved output (functional/state.py)."""
        data = target._data
        for i, s in enumerate(self.saved):
            if isinstance(s, np.ndarray) and isinstance(data, np.ndarray) and \
                    np.may_share_memory(s, data):
                self.saved[i] = s.copy()


def walk_order(gradients: dict) -> tuple:
    """The results that got a gradient as roots of the backward graph's walk
    (backward_trace.autograd_order), in the order that makes that walk go through the
    call's ops as eager's walk would have, had they run eagerly: which gradients a leaf's
    ``.grad`` takes first, and the order of sums, follow from it. Eager's order is a
    depth-first search from its root, reversed (autograd._topological_order): the search
    reaches the results in some order, and from each result it would have gone on into the
    call's ops. Each result is done right after the search reached it (its one input is
    the call's node), so the walk, which reads that order reversed, met them in reverse:
    ``gradients`` is filled in the walk's order."""
    return tuple(reversed(gradients))


def _fresh_outputs(bg: BackwardGraph) -> None:
    """A backward program's gradients in new arrays at every call, not from output pools:
    a pool keeps a reference to each array it hands out (to write it again once nobody
    holds it), so autograd saw every gradient as shared and copied each into its leaf's
    ``.grad`` (grad_accumulation.held_alone): the GPT's 29 copies cost ~80 us a step. A
    new array costs an allocation, from memory the allocator keeps warm (host_memory.py).
    A gradient that is a reshape of its output (a bias's: its sum kept the summed axes)
    gets the new array in its final shape, the same bytes in the same order: the reshape
    of it is then a view of the whole array as it lies, which autograd takes as the array
    itself, where a view of another shape would be copied into ``.grad`` all the same.
    (The spec keeps its reshape: a plan run step by step, as under a listener, hands
    out the output in the graph's shape.)"""
    program = bg.compiled.plan.program
    if program is None:
        return
    uses: dict = {}
    for spec in bg.specs:
        if spec[0] == "out":
            uses[spec[1]] = uses.get(spec[1], 0) + 1
    for spec in bg.specs:
        if spec[0] == "out" and spec[2] and uses[spec[1]] == 1:
            pool = program._outputs[spec[1]][1]
            shape = _reshaped_to(spec[2], pool)
            if shape is not None:
                pool.shape = shape
    for _, pool in program._outputs:
        if pool is not None:
            pool.capacity = 0  # OutputPool.take: nothing kept, a new array at every call


def _reshaped_to(steps, pool):
    """The shape that ``steps`` (view steps, all reshapes of static sizes) give the C-ordered
    output ``pool`` makes, where it keeps the order of its elements; else None."""
    if pool is None or any(step.op != "reshape" or step.replay_kwargs[2] for step in steps):
        return None
    shaped = replay(steps, np.empty(pool.shape, pool.dtype))
    return tuple(shaped.shape) if shaped.flags.c_contiguous else None
