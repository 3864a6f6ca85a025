"""A whole graph as one C function: every step a kernel call, in one ctypes call.

For graphs of small steps (matpow: 100 chained 10x10 matmuls) the per-step Python of a
plan costs more than the arithmetic. When every op node of a lowered graph is something C
can do - a fused kernel, a small matmul (generated loops, see matmul_policy.py), a view
(``permute_dims``, ``reshape``: the consumer reads the producer's buffer with the view's
strides) or a constant (a creation op without inputs, evaluated once) - the program calls
the kernels in order over buffers it owns:

    void program_run(void *const *b)
    {
        /* %2 = matmul %0 %1 */
        mm2((const float *)b[0], (const float *)b[1], (float *)b[2]);
        ...
    }

``compile_program(graph, graph_id)`` returns a :class:`Program` (``run(inputs) ->
outputs``, the contract of ``Plan.run`` for graphs without assigns) or None when some node
needs Python. em.jit attaches it to the plan (``plan.program``): replays use it when nobody
listens, while the debugger and the profiler keep stepping through the plan's steps.
"""

from __future__ import annotations

import ctypes

import numpy as np

from execmode.graph.ir import ASSIGN, FUSED, INPUT, Node, make_attrs
from execmode.ops import OPS

from . import matmul_policy
from .buffers import OutputPool, arranged, data_pointer
from .c_runtime import Library, _Slot, build_library
from .kernel_ir import Param
from .lower import Unsupported, arrival_strides, lower_fused, member_comment
from .render_c import CRenderer
from .toolchain import NoCompiler, get_toolchain

VIEWS = ("permute_dims", "reshape")


class Program:
    """A compiled graph: ``run(inputs)`` returns the outputs, one ctypes call inside."""

    def __init__(self, library: Library, entry_name: str, n_buffers: int, inputs, owned,
                 outputs, source: str):
        self.source = source
        self.library_path = library.path
        self._entry = library.function(entry_name, 1)
        self._block = (ctypes.c_void_p * n_buffers)()
        self._address = ctypes.addressof(self._block)
        self._owned = owned                       # arrays the program keeps (constants...)
        for index, array in owned.items():
            self._block[index] = data_pointer(array)
        self._inputs = inputs                     # [(buffer index, _Slot)]
        self._memo = [None] * len(inputs)
        self._keepalive = [None] * len(inputs)
        # One pool per output buffer. A graph may list one value at two output positions
        # (Plan.run hands out the same array twice): the repeat gets no pool of its own,
        # whose array the program would never write.
        self._outputs, self._repeats, first = [], [], {}
        for k, (index, shape, dtype) in enumerate(outputs):
            if index in first:
                self._outputs.append((index, None))
                self._repeats.append((k, first[index]))
            else:
                first[index] = k
                self._outputs.append((index, OutputPool(shape, dtype)))

    def run(self, inputs: list) -> list:
        block, memo = self._block, self._memo
        for k, (index, slot) in enumerate(self._inputs):
            a = inputs[k]
            if a is memo[k]:
                continue
            if a.__class__ is not np.ndarray:
                a = np.asarray(a)
            if slot.fits(a):
                block[index] = data_pointer(a)
                memo[k] = a
            else:
                copy = arranged(np, a.reshape(slot.shape), slot.dtype, slot.strides)
                self._keepalive[k] = copy
                block[index] = data_pointer(copy)
                memo[k] = None
        results = []
        for index, pool in self._outputs:
            if pool is None:
                results.append(None)
                continue
            array, ptr = pool.take()
            block[index] = ptr
            results.append(array)
        self._entry(self._address)
        for k, first in self._repeats:
            results[k] = results[first]
        return results


def compile_program(graph, graph_id: str = "program") -> Program | None:
    """The whole ``graph`` as one C function, or None when a node needs Python."""
    if any(n.op == ASSIGN for n in graph.nodes):
        return None
    if any(producers_op == INPUT for producers_op in
           (graph.node(o).op for o in graph.outputs)):
        return None  # an input returned as is: the output pool would take its buffer slot
    try:
        toolchain = get_toolchain()
    except NoCompiler:
        return None
    producers = graph.node_map()
    buffer_of: dict[int, int] = {}
    kernels, calls, owned, shapes = [], [], {}, {}
    renderer = CRenderer()
    outputs = set(graph.outputs)
    for node in graph.nodes:
        if node.op == INPUT:
            buffer_of[node.id] = len(shapes)
            shapes[buffer_of[node.id]] = node
            continue
        if node.op in VIEWS and isinstance(node.inputs[0], int):
            if node.id in outputs:
                return None
            if node.op == "reshape" and arrival_strides(node.inputs[0], producers):
                return None  # a reshape of a permuted view would copy
            buffer_of[node.id] = buffer_of[node.inputs[0]]
            continue
        index = len(shapes)
        buffer_of[node.id] = index
        shapes[index] = node
        op = OPS.get(node.op)
        if op is not None and op.kind == "creation" and not node.inputs:
            if node.id in outputs or op.impure:  # random draws differ at every call
                return None
            if node.id in outputs:
                return None
            owned[index] = np.ascontiguousarray(op.impl(np, **node.attr), dtype=node.dtype)
            continue
        kernel = _lower(node, producers, graph_id)
        if kernel is None:
            return None
        kernels.append(kernel)
        params = renderer.signature_params(kernel)
        args = []
        for p in params:
            if p is kernel.output:
                args.append(index)
            else:
                args.append(buffer_of[node.inputs[p.position]])
        calls.append((node, kernel, params, args))
        if node.id not in outputs:
            owned[index] = np.empty(node.shape, node.dtype)
    if not kernels:
        return None
    entry = f"program_{graph.structural_hash()}"
    lines = [f"/* {graph_id}: {len(calls)} kernels in one call */",
             f"void {entry}(void *const *b)", "{"]
    for node, kernel, params, args in calls:
        casts = ", ".join(
            f"({'' if p is kernel.output else 'const '}{renderer.type_names[p.dtype]} *)b[{i}]"
            for p, i in zip(params, args))
        lines.append(f"    /* {member_comment(node)} */")
        lines.append(f"    {kernel.name}({casts});")
    lines.append("}")
    program_source = "\n".join(lines)

    class _Renderer(CRenderer):
        def translation_unit(self, ks) -> str:
            return super().translation_unit(ks) + "\n" + program_source + "\n"

    library = build_library(kernels, toolchain, _Renderer())
    inputs = [(buffer_of[i], _Slot(_param_of(producers[i]))) for i in graph.inputs]
    outs = [(buffer_of[o], tuple(producers[o].shape), producers[o].dtype)
            for o in graph.outputs]
    return Program(library, entry, len(shapes), inputs, owned, outs,
                   "\n\n".join(renderer.kernel(k) for k in kernels) + "\n\n" + program_source)


def _param_of(node: Node) -> Param:
    return Param(node.label or f"v{node.id}", np.dtype(node.dtype), tuple(node.shape), 0)


def _lower(node: Node, producers, graph_id):
    if node.op == FUSED:
        wrapper = node
    elif node.op == "copy":
        # A copy that keeps two outputs apart (passes/outputs.py) is one loop like any
        # other elementwise kernel.
        wrapper = Node(node.id, FUSED, node.inputs, make_attrs({"kind": "elementwise"}),
                       node.shape, node.dtype, node.device, node.scope, node.loc, (node,),
                       f"copy{node.id}")
    elif node.op == "matmul" and len(node.shape) == 2:
        a = producers.get(node.inputs[0])
        if a is None or len(a.shape) != 2 or not matmul_policy.inline_on_cpu(
                node.shape[0], node.shape[1], a.shape[1], node.dtype):
            return None
        wrapper = Node(node.id, FUSED, node.inputs, make_attrs({"kind": "matmul_epilogue"}),
                       node.shape, node.dtype, node.device, node.scope, node.loc, (node,),
                       f"mm{node.id}")
    else:
        return None
    try:
        kernel = lower_fused(wrapper, producers, graph_id=graph_id,
                             matmul_inline=matmul_policy.inline_on_cpu)
    except Unsupported:
        return None
    if kernel.matmul is not None and kernel.matmul.library:
        return None  # BLAS is a Python call
    return kernel
