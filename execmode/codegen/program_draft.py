"""A whole-graph program drafted: the graph walked node by node into the C of one function
(program_statements.py writes each node's statements) and its translation unit rendered,
not yet compiled. program.py compiles it (or factory.py beside the plan's kernels) and
binds it to the plan's kernels by address."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from execmode import kernel_clock as clock_module
from execmode.dtypes import KERNEL_DTYPES, short_name
from execmode.graph.ir import ASSIGN, INPUT
from execmode.ops import OPS

from . import blas as blas_mod
from .c_runtime import Unit, _Slot, render_unit
from .clock_mode import clock_header
from .lower import arrival_strides, member_comment
from .program_statements import (
    WRITTEN_OUT,
    Refused,
    assign_lines,
    blas_matmul_lines,
    call_line,
    copy_lines,
    flat_operands,
    lower_node,
    param_of,
    reads_in_place,
    written_out_lines,
)
from .render_c import CRenderer, read_header
from .toolchain import NoCompiler, get_toolchain

# The views a program keeps as aliases of their input's buffer. A broadcast_to is an alias
# too, but only where generated loops alone read it (reads_in_place): so the strides of
# the other operands (a BLAS call's) are arrival_strides' without broadcasts.
VIEWS = ("permute_dims", "reshape")


def c_kernels_of(compiled: dict) -> dict:
    """node id -> kernel IR, for the plan's kernels that are compiled C functions."""
    return {node_id: obj.kernel for node_id, obj in compiled.items()
            if getattr(obj, "library", None) is not None and obj.language == "c"}


@dataclass
class Draft:
    """A program rendered, its unit waiting to compile (and the plan's kernels to load):
    everything :class:`Program` needs but the kernels' addresses and the clock."""

    graph: object
    graph_id: str
    unit: Unit                # the program's translation unit (its own kernels, its entry)
    entry: str
    n_buffers: int
    owned: dict               # block index -> an array the program keeps
    fixed: dict               # block index -> a BLAS function's address
    reused_at: dict           # block index -> node id of a plan kernel called by address
    reused: dict              # node id -> the kernel IR that plan kernel must compile
    kernels: list             # the program's own kernels (in its unit)
    program_source: str
    inputs: list
    outputs: list
    assigned: list
    step_of: dict
    clock_slot: int
    failed: int | None = None  # the failure word's block index, when the program checks

    def expects(self, compiled: dict) -> bool:
        """Whether ``compiled`` holds, as C functions, the kernels this program calls."""
        have = c_kernels_of(compiled)
        return all(have.get(node_id) is kernel for node_id, kernel in self.reused.items())


def draft_program(graph, graph_id: str, c_kernels: dict) -> Draft:
    if any(producers_op == INPUT for producers_op in
           (graph.node(o).op for o in graph.outputs)):
        # an input returned as is: the output pool would take its buffer slot
        raise Refused("an input is returned as an output")
    try:
        toolchain = get_toolchain()
    except NoCompiler as exc:
        raise Refused(f"no C compiler ({exc})") from None
    producers = graph.node_map()
    buffer_of: dict[int, int] = {}
    kernels, statements, owned, shapes = [], [], {}, {}
    fixed: dict[tuple, int] = {}               # (dtype letter, routine) -> block index
    renderer = CRenderer()
    outputs = set(graph.outputs)
    positions = {node_id: k for k, node_id in enumerate(graph.inputs)}
    assigns, assigned = [], []
    views, constants = set(), set()
    failed = None                              # the failure word's block index (checks)
    output_buffer: dict[int, int] = {}         # a view's copy the caller receives
    window_fixed: dict[int, int] = {}          # block index -> a windows function's address
    uses_blas = False
    features: set = set()                      # "em_gemm": the program calls em_gemm.h
    step_of = {n.id: k for k, n in enumerate(
        n for n in graph.nodes if n.op not in (INPUT, ASSIGN))}
    reused_at: dict[int, int] = {}             # block index -> the node of a plan kernel
    users = graph.users()
    memory = graph.meta.get("memory_plan")     # passes/memplan.py: which values share memory
    shared: dict[int, np.ndarray] = {}         # its buffer id -> the program's array

    def value_array(node) -> np.ndarray:
        """The memory a kernel's or a matmul's value lives in: its buffer in the memory
        plan, shared with values whose last reader ran before it (or with the operand an
        in-place kernel reads at each point before writing it), so that a step writes
        where the steps before it wrote, still in the CPU's cache; else memory of its
        own."""
        buffer = memory.assignment.get(node.id) if memory is not None else None
        if buffer is None:
            return np.empty(node.shape, node.dtype)
        array = shared.get(buffer)
        if array is None:
            array = shared[buffer] = np.empty(memory.buffers[buffer].nbytes, np.uint8)
        return array

    def new_buffer(node) -> int:
        index = len(shapes)
        shapes[index] = node
        return index

    def failure_word() -> int:
        """The block index of the word a failing loop sets (one per program)."""
        nonlocal failed
        if failed is None:
            failed = new_buffer(None)
            owned[failed] = np.zeros(1, np.int32)
        return failed

    def called_at(address: int, dims: np.ndarray) -> tuple:
        """Block indices of a C function's address and of the dims array it reads."""
        function, dims_at = new_buffer(None), new_buffer(None)
        window_fixed[function] = address
        owned[dims_at] = dims
        return function, dims_at

    for node in graph.nodes:
        if str(node.device) != "cpu":
            raise Refused(f"%{node.id} ({node.op}) is on {node.device}: programs are C")
        if node.dtype not in KERNEL_DTYPES:
            raise Refused(f"%{node.id} ({node.op}) is {short_name(node.dtype)}: the C "
                           "kernels have no such type")
        if node.op == INPUT:
            buffer_of[node.id] = new_buffer(node)
            continue
        if node.op == ASSIGN:
            # Written after every kernel, in graph order (below).
            if node.inputs[0] not in positions:
                raise Refused(f"%{node.id}: assign into a value that is not an input")
            assigns.append(node)
            assigned.append(positions[node.inputs[0]])
            continue
        if node.op == "broadcast_to" and isinstance(node.inputs[0], int):
            # An alias read with zero strides, as the plan's kernels read it; only the
            # generated loops can (a BLAS operand, a check, a view or an output of it
            # would need the copy the plan's runtime makes: buffers.arranged).
            if node.id in outputs:
                raise Refused(f"%{node.id} ({node.op}): a view is an output")
            reader = next((u for u in users.get(node.id, ())
                           if not reads_in_place(producers[u], producers)), None)
            if reader is not None:
                raise Refused(f"%{node.id} ({node.op}) is read by %{reader} "
                               f"({producers[reader].op}), which needs it copied")
            buffer_of[node.id] = buffer_of[node.inputs[0]]
            views.add(node.id)
            continue
        if node.op in VIEWS and isinstance(node.inputs[0], int):
            source = node.inputs[0]
            buffer_of[node.id] = buffer_of[source]
            # A reshape of a permuted view is a copy in C order (as NumPy's reshape makes
            # it, and the plan's kernels then read it): made here, into a buffer of its
            # own. So is a view the caller receives (its own array at every call).
            copied = source if node.op == "reshape" and arrival_strides(
                source, producers, broadcasts=True) else None
            if copied is None and node.id in outputs:
                copied = node.id
            if copied is None:
                views.add(node.id)
                continue
            index = new_buffer(node)
            if node.id not in outputs:
                owned[index] = np.empty(node.shape, node.dtype)
            statements.append(("lines", node, copy_lines(
                node, copied, producers, buffer_of, index, kernels, renderer), node.id))
            if copied == source:  # consumers read the copy; a permute's read the alias
                buffer_of[node.id] = index
            else:
                output_buffer[node.id] = index
            continue
        index = new_buffer(node)
        buffer_of[node.id] = index
        op = OPS.get(node.op)
        if op is not None and op.kind == "creation" and not node.inputs:
            if op.impure:
                raise Refused(f"%{node.id} ({node.op}): a random draw differs at every call")
            value = np.ascontiguousarray(op.impl(np, **node.attr), dtype=node.dtype)
            if node.id not in outputs:
                owned[index] = value
                constants.add(node.id)
                continue
            # A constant the caller receives (a forward's positions saved for its
            # backward): each call's output is a new array, so the constant, kept once, is
            # copied into it.
            kept = new_buffer(None)
            owned[kept] = value
            statements.append(("lines", node, [
                f"__builtin_memcpy(b[{index}], b[{kept}], {value.nbytes});"], node.id))
            continue
        if node.op in WRITTEN_OUT:
            # Loops written out here, over C-contiguous operands (program_checks.py,
            # program_indexing.py, program_windows.py).
            operands = flat_operands(node, producers)
            if node.id not in outputs:
                owned[index] = np.empty(node.shape, node.dtype)
            statements.append(("lines", node, written_out_lines(
                node, operands, [buffer_of[i] for i in node.inputs], index, renderer,
                failure_word, called_at), node.id))
            continue
        reused = c_kernels.get(node.id)
        if reused is not None:  # (lowered with the memory plan's in-place input)
            kernel, kernel_inputs = reused, node.inputs
        else:
            kernel, kernel_inputs = lower_node(
                node, producers, graph_id,
                memory.inplace.get(node.id) if memory is not None else None)
        if node.id not in outputs:
            owned[index] = value_array(node)
        library_mm = kernel is not None and kernel.matmul is not None and kernel.matmul.library
        if kernel is None or library_mm:
            if node.op != "matmul" and not library_mm:
                raise Refused(f"%{node.id} ({node.op}) has no C lowering")
            mm = node if node.op == "matmul" else node.body[0]
            if library_mm and kernel.body:
                scratch = new_buffer(mm)
                owned[scratch] = np.empty(mm.shape, mm.dtype)
                target = scratch
            else:
                target = index
                kernel = None
            statements.append(("lines", mm, blas_matmul_lines(mm, producers, buffer_of, target,
                                                        fixed, shapes, owned, features),
                               node.id))
            uses_blas = True
            if kernel is None:
                continue
            scratch_of = {p.name: scratch for p in kernel.scratch}
        else:
            scratch_of = {}
        params = renderer.signature_params(kernel)
        if reused is not None:
            # The plan's compiled function, called through its address in the block.
            slot = new_buffer(None)
            reused_at[slot] = node.id
        else:
            kernels.append(kernel)
            slot = None
        args = []
        for p in params:
            if p is kernel.output:
                args.append(index)
            elif p.name in scratch_of:
                args.append(scratch_of[p.name])
            else:
                args.append(buffer_of[kernel_inputs[p.position]])
        statements.append(("kernel", node, (kernel, params, args, slot), node.id))
    if not statements:
        raise Refused("nothing to compute")
    write_backs = [assign_lines(node, producers, buffer_of, views, constants, kernels, renderer)
                   for node in assigns]
    blas = blas_mod.find() if uses_blas else None
    fixed_addresses = {index: blas.pointer(*key) for key, index in fixed.items()} \
        if blas is not None else {}
    fixed_addresses.update(window_fixed)
    clock_slot = len(shapes)
    shapes[clock_slot] = None
    entry = f"program_{graph.structural_hash()}"
    lines = [f"/* {graph_id}: {len(statements)} steps and {len(assigns)} write-backs "
             "in one call */", f"void {entry}(void *const *b)", "{",
             f"    long long *const em_clock = (long long *)b[{clock_slot}];",
             "    const int em_timed = em_clock[0] != 0;",
             "    const long long em_start = em_timed ? em_clock_ticks() : 0;",
             "    long long em_t = em_start;"]
    for position, (kind, node, detail, step_node) in enumerate(statements):
        lines.append(f"    /* {member_comment(node)} */")
        if kind == "lines":  # C written out here: a BLAS call, a copy, a loop (program_*.py)
            lines.extend("    " + line for line in detail)
        else:
            lines.append("    " + call_line(*detail, renderer))
        # A matmul with an epilogue is two statements and one step: timed after both.
        if position + 1 == len(statements) or statements[position + 1][3] != step_node:
            offset = clock_module.HEADER + clock_module.FIELDS * step_of[step_node]
            lines.append(f"    if (em_timed) em_t = em_clock_step(em_clock + {offset}, em_t);")
    for write_back in write_backs:
        lines.extend("    " + line for line in write_back)
    lines.append("    if (em_timed) em_clock_step(em_clock + 1, em_start);")
    lines.append("}")
    program_source = clock_header() + "\n" + "\n".join(lines)
    if uses_blas:
        program_source = blas_mod.c_typedefs(blas) + "\n\n" + program_source
    if "em_gemm" in features:
        program_source = read_header("em_gemm.h") + "\n" + program_source

    class _Renderer(CRenderer):
        def translation_unit(self, ks, runtime: bool = False) -> str:
            return super().translation_unit(ks, runtime) + "\n" + program_source + "\n"

    return Draft(
        graph, graph_id, render_unit(kernels, toolchain, _Renderer()), entry, len(shapes),
        owned, fixed_addresses, reused_at, {i: c_kernels[i] for i in reused_at.values()},
        kernels, program_source,
        [(buffer_of[i], _Slot(param_of(producers[i]))) for i in graph.inputs],
        [(output_buffer.get(o, buffer_of[o]), tuple(producers[o].shape), producers[o].dtype)
         for o in graph.outputs], assigned, step_of, clock_slot, failed)
