"""A whole graph as one C function: every step a kernel call, in one ctypes call.

For graphs of small steps (matpow: 100 chained 10x10 matmuls) the per-step Python of a
plan costs more than the arithmetic, and a training step (forward, backward, the
optimizer's updates) is a few dozen steps. When every op node of a lowered graph is
something C can do, the program calls the kernels in order over buffers it owns:

* a fused kernel, or a single elementwise op or reduction (a one-member kernel);
* a matmul: generated loops when small (matmul_policy.py), else the CBLAS routine NumPy's
  own matmul calls, through a function pointer found once in the library NumPy loaded
  (blas.py) and kept in the buffer block, with NumPy's arguments (so eager's bits);
* a view (``permute_dims``, ``reshape``: the consumer reads the producer's buffer with
  the view's strides) or a constant (a creation op without inputs, evaluated once);
* an assign (the write-back of functionalized state, DESIGN.md section 5): after the last
  kernel, the value is copied into the input's own buffer, in graph order, as
  ``Plan.apply_assigns`` writes them (every kernel has read the old values by then).

While the kernel clock runs (a profiler or em.compare measures), the program sums each
step's time into its plan's clock (em_clock.h, execmode/kernel_clock.py): the clock's array
sits in the buffer block like a constant, and each step tests its first item.

    void program_run(void *const *b)
    {
        /* %2 = matmul %0 %1 */
        { const float *A = (const float *)b[0]; ... ((em_sgemm_t)b[9])(101, ...); }
        k3((const float *)b[2], (float *)b[3]);
        ...
        __builtin_memcpy(b[1], b[7], 4096);   /* %12 = assign %1 %11 */
    }

``compile_program(graph, graph_id)`` returns a :class:`Program` (``run(inputs) ->
outputs``, the contract of ``Plan.run``) or None when some node needs Python;
``program_or_reason`` also says why (em.jit keeps it as ``plan.program_reason``). em.jit
attaches it to
the plan (``plan.program``): replays use it when nobody listens, while the debugger and
the profiler keep stepping through the plan's steps.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from execmode import kernel_clock as clock_module
from execmode.dtypes import KERNEL_DTYPES, short_name
from execmode.graph.ir import ASSIGN, FUSED, INPUT, Node, make_attrs
from execmode.kernel_clock import StepClock
from execmode.ops import OPS
from execmode.passes.fuse import fusable_elementwise

from . import blas as blas_mod
from . import gemm_kernel, gemm_orientation, layout, matmul_policy
from .buffers import OutputPool, arranged, data_pointer
from .c_runtime import CompileError, Library, Unit, _Slot, compile_unit, load_unit, render_unit
from .factory import emit_compile, kernel_child
from .kernel_ir import Param
from .lower import REDUCTIONS, Unsupported, arrival_strides, lower_fused, member_comment
from .program_checks import CHECKS, along_axis_lines, check_lines
from .program_indexing import NotInProgram, basic_lines, rows_index, rows_lines
from .program_windows import WINDOW_OPS, window_call, window_lines
from .render_c import CRenderer, read_header
from .toolchain import NoCompiler, get_toolchain

# The views a program keeps as aliases of their input's buffer. A broadcast_to is an alias
# too, but only where generated loops alone read it (_reads_in_place): so the strides of
# the other operands (a BLAS call's) are arrival_strides' without broadcasts.
VIEWS = ("permute_dims", "reshape")


class Program:
    """A compiled graph: ``run(inputs)`` returns the outputs, one ctypes call inside.

    ``calls`` counts the runs (tests and ``execmode explain`` read it)."""

    def __init__(self, library: Library, entry_name: str, n_buffers: int, inputs, owned,
                 outputs, source: str, fixed=None, assigned=(), failed=None):
        self.source = source
        # The word a check sets before it returns (program_checks.py); None: no checks.
        self.failed = failed
        self.library = library  # its compile time and cache hit: what a first call paid
        self.library_path = library.path
        self.calls = 0
        self._entry = library.function(entry_name, 1)
        self._block = (ctypes.c_void_p * n_buffers)()
        self._address = ctypes.addressof(self._block)
        self._owned = owned                       # arrays the program keeps (constants...)
        for index, array in owned.items():
            self._block[index] = data_pointer(array)
        self._fixed = dict(fixed or {})           # block index -> BLAS function address
        for index, address in self._fixed.items():
            self._block[index] = address
        self._inputs = inputs                     # [(buffer index, _Slot)]
        # Input positions the program writes (assign targets): a copy in another layout
        # would take the write, so such an input must arrive in the program's layout.
        self._assigned = tuple(assigned)
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

    def run(self, inputs: list) -> list | None:
        """The outputs, with the assigns written into their inputs; None when an input the
        program writes arrives in another layout (nothing run), or when a check failed
        (nothing written to an input): Plan.run replays, and raises eager's error."""
        block, memo = self._block, self._memo
        for k in self._assigned:
            a = inputs[k]
            if a is not memo[k] and (a.__class__ is not np.ndarray
                                     or not self._inputs[k][1].fits(a)):
                return None
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
        self.calls += 1
        failed = self.failed
        if failed is not None and failed[0]:
            failed[0] = 0
            return None
        for k, first in self._repeats:
            results[k] = results[first]
        return results


class _Refused(Exception):
    """The graph cannot be one C function; the message says why."""


def compile_program(graph, graph_id: str = "program", compiled=None,
                    clock=None) -> Program | None:
    """The whole ``graph`` as one C function, or None when a node needs Python (see
    :func:`program_or_reason`)."""
    return program_or_reason(graph, graph_id, compiled, clock)[0]


def program_or_reason(graph, graph_id: str = "program", compiled=None, clock=None,
                      draft=None) -> tuple:
    """``(Program, "")``, or ``(None, why)`` when some node needs Python.

    ``compiled``: node id -> the kernel objects the plan already compiled for this graph
    (``kernel_factory_for(...).kernels``); the program calls those C functions by address
    instead of compiling them again, so a first call pays one more compile only for what
    the plan runs as NumPy steps. ``clock``: the plan's kernel_clock.StepClock, whose
    steps are the graph's nodes other than inputs and assigns, in order (build_plan's);
    the program gets one of its own when none is given. ``draft``: what
    :func:`draft_or_reason` made of this graph before its kernels compiled, its unit
    compiled beside them; used when those kernels are the ones it expected."""
    compiled = compiled or {}
    if draft is not None and draft.expects(compiled):
        if isinstance(draft, _NoProgram):
            return None, draft.reason
    else:
        draft = None
    try:
        if draft is not None:
            return _finish(draft, compiled, clock), ""
        return _compile(graph, graph_id, compiled, clock), ""
    except _Refused as exc:
        return None, str(exc)
    except (CompileError, OSError) as exc:  # the plan's own kernels still run
        return None, f"the C compiler failed: {exc}"


def draft_or_reason(graph, graph_id: str, c_kernels: dict):
    """The program's C, rendered into a translation unit not yet compiled (``.unit``, None
    when there is no program: ``.reason`` says why), for a graph whose kernels are about to
    compile: ``c_kernels`` maps node id -> the kernel IR the plan compiles as C, which the
    program will call by address. factory.py compiles the unit with the kernels' own
    units, on the same compiler slots; program_or_reason uses it (or the reason) when the
    kernels compiled as expected."""
    try:
        return _draft(graph, graph_id, c_kernels)
    except _Refused as exc:
        return _NoProgram(str(exc), c_kernels)
    except (CompileError, OSError) as exc:
        return _NoProgram(f"the C compiler failed: {exc}", c_kernels)


@dataclass
class _NoProgram:
    """Why a graph has no program, given the kernels it expected (draft_or_reason)."""

    reason: str
    c_kernels: dict
    unit = None

    def expects(self, compiled: dict) -> bool:
        have = _c_kernels_of(compiled)
        return have.keys() == self.c_kernels.keys() and \
            all(have[i] is kernel for i, kernel in self.c_kernels.items())


def _compile(graph, graph_id: str, compiled: dict, clock) -> Program:
    draft = _draft(graph, graph_id, _c_kernels_of(compiled))
    compile_unit(draft.unit)
    return _finish(draft, compiled, clock)


def _c_kernels_of(compiled: dict) -> dict:
    """node id -> kernel IR, for the plan's kernels that are compiled C functions."""
    return {node_id: obj.kernel for node_id, obj in compiled.items()
            if getattr(obj, "library", None) is not None and obj.language == "c"}


@dataclass
class _Draft:
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
        have = _c_kernels_of(compiled)
        return all(have.get(node_id) is kernel for node_id, kernel in self.reused.items())


def _draft(graph, graph_id: str, c_kernels: dict) -> _Draft:
    if any(producers_op == INPUT for producers_op in
           (graph.node(o).op for o in graph.outputs)):
        # an input returned as is: the output pool would take its buffer slot
        raise _Refused("an input is returned as an output")
    try:
        toolchain = get_toolchain()
    except NoCompiler as exc:
        raise _Refused(f"no C compiler ({exc})") from None
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
            raise _Refused(f"%{node.id} ({node.op}) is on {node.device}: programs are C")
        if node.dtype not in KERNEL_DTYPES:
            raise _Refused(f"%{node.id} ({node.op}) is {short_name(node.dtype)}: the C "
                           "kernels have no such type")
        if node.op == INPUT:
            buffer_of[node.id] = new_buffer(node)
            continue
        if node.op == ASSIGN:
            # Written after every kernel, in graph order (below).
            if node.inputs[0] not in positions:
                raise _Refused(f"%{node.id}: assign into a value that is not an input")
            assigns.append(node)
            assigned.append(positions[node.inputs[0]])
            continue
        if node.op == "broadcast_to" and isinstance(node.inputs[0], int):
            # An alias read with zero strides, as the plan's kernels read it; only the
            # generated loops can (a BLAS operand, a check, a view or an output of it
            # would need the copy the plan's runtime makes: buffers.arranged).
            if node.id in outputs:
                raise _Refused(f"%{node.id} ({node.op}): a view is an output")
            reader = next((u for u in users.get(node.id, ())
                           if not _reads_in_place(producers[u], producers)), None)
            if reader is not None:
                raise _Refused(f"%{node.id} ({node.op}) is read by %{reader} "
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
            statements.append(("lines", node, _copy_lines(
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
                raise _Refused(f"%{node.id} ({node.op}): a random draw differs at every call")
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
            operands = _flat_operands(node, producers)
            if node.id not in outputs:
                owned[index] = np.empty(node.shape, node.dtype)
            statements.append(("lines", node, _written_out(
                node, operands, [buffer_of[i] for i in node.inputs], index, renderer,
                failure_word, called_at), node.id))
            continue
        reused = c_kernels.get(node.id)
        if reused is not None:
            kernel, kernel_inputs = reused, node.inputs
        else:
            kernel, kernel_inputs = _lower(node, producers, graph_id)
        if node.id not in outputs:
            owned[index] = np.empty(node.shape, node.dtype)
        library_mm = kernel is not None and kernel.matmul is not None and kernel.matmul.library
        if kernel is None or library_mm:
            if node.op != "matmul" and not library_mm:
                raise _Refused(f"%{node.id} ({node.op}) has no C lowering")
            mm = node if node.op == "matmul" else node.body[0]
            if library_mm and kernel.body:
                scratch = new_buffer(mm)
                owned[scratch] = np.empty(mm.shape, mm.dtype)
                target = scratch
            else:
                target = index
                kernel = None
            statements.append(("lines", mm, _blas_matmul(mm, producers, buffer_of, target,
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
        raise _Refused("nothing to compute")
    write_backs = [_assign(node, producers, buffer_of, views, constants, kernels, renderer)
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
             "    const long long em_start = em_timed ? em_clock_ns() : 0;",
             "    long long em_t = em_start;"]
    for position, (kind, node, detail, step_node) in enumerate(statements):
        lines.append(f"    /* {member_comment(node)} */")
        if kind == "lines":  # C written out here: a BLAS call, a copy, a loop (program_*.py)
            lines.extend("    " + line for line in detail)
        else:
            lines.append("    " + _call_line(*detail, renderer))
        # A matmul with an epilogue is two statements and one step: timed after both.
        if position + 1 == len(statements) or statements[position + 1][3] != step_node:
            offset = clock_module.HEADER + clock_module.FIELDS * step_of[step_node]
            lines.append(f"    if (em_timed) em_t = em_clock_step(em_clock + {offset}, em_t);")
    for write_back in write_backs:
        lines.extend("    " + line for line in write_back)
    lines.append("    if (em_timed) em_clock_step(em_clock + 1, em_start);")
    lines.append("}")
    program_source = read_header("em_clock.h") + "\n" + "\n".join(lines)
    if uses_blas:
        program_source = blas_mod.c_typedefs(blas) + "\n\n" + program_source
    if "em_gemm" in features:
        program_source = read_header("em_gemm.h") + "\n" + program_source

    class _Renderer(CRenderer):
        def translation_unit(self, ks, runtime: bool = False) -> str:
            return super().translation_unit(ks, runtime) + "\n" + program_source + "\n"

    return _Draft(
        graph, graph_id, render_unit(kernels, toolchain, _Renderer()), entry, len(shapes),
        owned, fixed_addresses, reused_at, {i: c_kernels[i] for i in reused_at.values()},
        kernels, program_source,
        [(buffer_of[i], _Slot(_param_of(producers[i]))) for i in graph.inputs],
        [(output_buffer.get(o, buffer_of[o]), tuple(producers[o].shape), producers[o].dtype)
         for o in graph.outputs], assigned, step_of, clock_slot, failed)


def _finish(draft: _Draft, compiled: dict, clock) -> Program:
    """The Program of ``draft``, whose unit has compiled: loaded, bound to the plan's
    kernels (``compiled``) by address and to ``clock`` (a clock of its own when None)."""
    if draft.unit.error is not None:
        raise draft.unit.error
    if not draft.unit.compiled:  # the kernels' units failed first: it was never started
        compile_unit(draft.unit)
    library = load_unit(draft.unit)
    renderer = CRenderer()
    children = [kernel_child(k, renderer.kernel(k)) for k in draft.kernels]
    children.append({"kernel": draft.entry, "source": draft.program_source,
                     "member_nodes": [], "member_ops": []})
    emit_compile(draft.graph_id, [], library.started_ns, library.compile_ns,
                 library.cache_hit, "c", "c", what="program", children=children)
    if clock is None:
        clock = StepClock(draft.graph_id, len(draft.step_of))
    owned = dict(draft.owned)
    owned[draft.clock_slot] = clock.array
    fixed = dict(draft.fixed)
    keep = [compiled[node_id] for node_id in draft.reused_at.values()]
    for slot, reused in zip(draft.reused_at, keep):
        fixed[slot] = ctypes.cast(getattr(reused.library.cdll, reused.kernel.name),
                                  ctypes.c_void_p).value
    source = "\n\n".join([reused.source for reused in keep] +
                         [renderer.kernel(k) for k in draft.kernels])
    program = Program(library, draft.entry, draft.n_buffers, draft.inputs, owned,
                      draft.outputs, source + "\n\n" + draft.program_source, fixed,
                      draft.assigned, owned.get(draft.failed))
    program.kernels = keep  # the plan's kernels whose functions it calls: keep them loaded
    program.clock = clock
    for (_, pool), node_id in zip(program._outputs, draft.graph.outputs):
        if pool is not None:  # an output array made anew is its step's new memory
            pool.count_into(clock.array, clock_module.HEADER +
                            clock_module.FIELDS * draft.step_of[node_id] + 4)
    return program


def _assign(node, producers, buffer_of, views, constants, kernels, renderer) -> list[str]:
    """The C of a write-back: the value's buffer copied into the assigned input's own.

    A value that is a permuted view of a computed one is copied by a one-member kernel
    that reads it with the view's strides. A value that is (a view of) an input or a
    constant is refused: Plan.apply_assigns copies the former before any write (an
    assigned input may be what it reads), and the program keeps no such copies.
    """
    target, value = node.inputs
    if not isinstance(value, int):
        raise _Refused(f"%{node.id}: assign of a literal")
    root = value
    while root in views:
        root = producers[root].inputs[0]
    if producers[root].op == INPUT or root in constants:
        raise _Refused(f"%{node.id}: the assigned value %{value} is (a view of) an input "
                       "or a constant")
    source, target_node = producers[value], producers[target]
    if target_node.op != INPUT:
        raise _Refused(f"%{node.id}: assign into a value that is not an input")
    if np.dtype(source.dtype) != np.dtype(target_node.dtype) or \
            tuple(source.shape) != tuple(target_node.shape):
        raise _Refused(f"%{node.id}: the value's type differs from the input's")
    return [f"/* {member_comment(node)} */"] + _copy_lines(
        node, value, producers, buffer_of, buffer_of[target], kernels, renderer)


def _blas_matmul(mm: Node, producers, buffer_of, target: int, fixed: dict, shapes,
                 owned: dict, features: set) -> list:
    """C statements computing matmul ``mm`` into buffer ``target`` through NumPy's BLAS, or
    the program's own kernel where that gives the same bits faster (gemm_kernel.py; it
    adds "em_gemm" to ``features``)."""
    blas = blas_mod.find()
    if blas is None:
        raise _Refused(f"%{mm.id} matmul: no BLAS to call from C ({blas_mod.reason()})")
    a_id, b_id = mm.inputs
    if not (isinstance(a_id, int) and isinstance(b_id, int)):
        raise _Refused(f"%{mm.id} matmul of a literal")
    a, b = producers[a_id], producers[b_id]
    dtype = np.dtype(mm.dtype)
    if np.dtype(a.dtype) != dtype or np.dtype(b.dtype) != dtype:
        raise _Refused(f"%{mm.id} matmul of mixed dtypes (NumPy casts first)")
    if dtype not in (np.float32, np.float64):
        raise _Refused(f"%{mm.id} matmul of {short_name(dtype)}: BLAS multiplies float32 "
                       "and float64")
    letter = "s" if dtype == np.float32 else "d"
    fn = {}
    for routine in blas_mod.ROUTINES:
        key = (letter, routine)
        if key not in fixed:
            fixed[key] = len(shapes)
            shapes[fixed[key]] = None
        fn[routine] = f"b[{fixed[key]}]"
    t = "float" if letter == "s" else "double"

    def turn(m, n, p, a_trans, b_trans):
        # A p x m scratch buffer when the product is faster turned round (same bits).
        if not gemm_orientation.transposed(dtype, m, n, p, a_trans, b_trans):
            return None
        index = len(shapes)
        shapes[index] = None
        owned[index] = np.empty((p, m), dtype)
        return f"b[{index}]"

    def own(m, n, p, a_trans, b_trans, lda, ldb, ldc):
        chosen = gemm_kernel.choice(dtype, m, n, p, a_trans, b_trans)
        if chosen is None:
            return None
        form, q = chosen
        scratch = None
        if form == "nt":  # A transposed into an n x m buffer the program owns
            scratch = len(shapes)
            shapes[scratch] = None
            owned[scratch] = np.empty((n, m), dtype)
            scratch = f"b[{scratch}]"
        features.add("em_gemm")
        return gemm_kernel.call_lines(form, q, m, n, p, lda, ldb, ldc, scratch)

    try:
        return blas_mod.matmul_call(
            blas, dtype, tuple(a.shape), _strides(a_id, producers), tuple(b.shape),
            _strides(b_id, producers), tuple(mm.shape),
            f"(const {t} *)b[{buffer_of[a_id]}]", f"(const {t} *)b[{buffer_of[b_id]}]",
            f"({t} *)b[{target}]", fn, turn, own)
    except blas_mod.NoBlas as exc:
        raise _Refused(f"%{mm.id} matmul: {exc}") from None


# The ops whose C program.py writes out itself, as loops or calls.
WRITTEN_OUT = CHECKS | WINDOW_OPS | {"pad", "getitem", "index_add"}


def _flat_operands(node, producers) -> list:
    """``node``'s operand nodes, each a C-contiguous buffer of a kernel dtype (not a
    literal, a permuted or a broadcast view)."""
    operands = [producers.get(i) if isinstance(i, int) else None for i in node.inputs]
    if any(o is None or o.dtype not in KERNEL_DTYPES
           or arrival_strides(i, producers, broadcasts=True)
           for i, o in zip(node.inputs, operands)):
        raise _Refused(f"%{node.id} ({node.op}) reads a view or a literal")
    return operands


def _written_out(node, operands: list, inputs: list, out: int, renderer, failure_word,
                 called_at) -> list[str]:
    """The C lines of a WRITTEN_OUT op reading block indices ``inputs`` into ``out``;
    ``failure_word()`` and ``called_at(address, dims)`` give the block indices of the
    program's failure word and of a called function and its dims."""
    t = renderer.type_names[np.dtype(node.dtype)]
    try:
        if node.op in WINDOW_OPS or node.op == "pad":
            if node.dtype.kind != "f":
                raise _Refused(f"%{node.id} ({node.op}) is not float")
            if node.op == "pad":
                inside = tuple(("slice", b, b + d, None)
                               for (b, _), d in zip(node.attr["widths"], operands[0].shape))
                fill = float(np.array(node.attr["value"], node.dtype)).hex()
                return basic_lines(node, tuple(node.shape), t, inputs[0], out, True,
                                   index=inside, fill=None if fill == "0x0.0p+0" else fill)
            address, dims, pointers, status = window_call(node, operands, node.dtype)
            function, dims_at = called_at(address, dims)
            return window_lines(node, pointers, status, function, dims_at, inputs, out,
                                failure_word() if status else None)
        if node.op in ("getitem", "index_add"):
            scatter = node.op == "index_add"
            base = tuple(node.attr["shape"]) if scatter else tuple(operands[0].shape)
            if len(inputs) == 1:
                return basic_lines(node, base, t, inputs[0], out, scatter)
            if len(inputs) == 2 and rows_index(node.attr["index"]) and \
                    np.dtype(operands[1].dtype).kind in "iu":
                return rows_lines(node, base, t,
                                  renderer.type_names[np.dtype(operands[1].dtype)],
                                  int(np.prod(operands[1].shape)), inputs[0], inputs[1],
                                  out, failure_word(), scatter)
            raise NotInProgram("several index tensors, or one after other items")
    except NotInProgram as exc:
        raise _Refused(f"%{node.id} ({node.op}): {exc}") from None
    if node.op == "scatter_add" and not \
            np.dtype(operands[0].dtype) == np.dtype(operands[2].dtype) == node.dtype:
        raise _Refused(f"%{node.id} ({node.op}) adds across dtypes")
    if node.op == "check_labels":
        return check_lines(node, renderer.type_names[np.dtype(operands[0].dtype)],
                           int(np.prod(node.shape)), inputs[0], out, failure_word())
    names = ("x", "index", "src")
    types = {name: renderer.type_names[np.dtype(o.dtype)]
             for name, o in zip(names, operands)}
    types["out"] = t
    buffers = dict(zip(names, inputs), out=out)
    return along_axis_lines(node, operands[0], operands[1], types, buffers, failure_word())


def _copy_lines(node, value: int, producers, buffer_of, target: int, kernels,
                renderer) -> list[str]:
    """C copying ``value`` into ``b[target]`` in C order, for ``node``: its bytes as they
    are, or, where it is a permuted view, a one-member kernel that reads it with the
    view's strides (added to ``kernels``)."""
    src = producers[value]
    if not arrival_strides(value, producers, broadcasts=True):
        nbytes = int(np.prod(src.shape)) * np.dtype(src.dtype).itemsize
        return [f"__builtin_memcpy(b[{target}], b[{buffer_of[value]}], {nbytes});"]
    copy = Node(node.id, "copy", (value,), make_attrs({}), src.shape, src.dtype,
                src.device, node.scope, node.loc)
    kernel, _ = _lower(copy, producers, "copy")
    kernels.append(kernel)
    params = renderer.signature_params(kernel)
    args = [target if p is kernel.output else buffer_of[value] for p in params]
    return [_call_line(kernel, params, args, None, renderer)]


def _call_line(kernel, params, args, slot, renderer) -> str:
    """The call of ``kernel`` on block indices ``args`` (one per param): by its name, or
    through the address in ``b[slot]`` (a plan's kernel)."""
    types = [f"{'' if p is kernel.output else 'const '}{renderer.type_names[p.dtype]} *"
             for p in params]
    casts = ", ".join(f"({t})b[{i}]" for t, i in zip(types, args))
    function = kernel.name if slot is None else f"((void (*)({', '.join(types)}))b[{slot}])"
    return f"{function}({casts});"


def _reads_in_place(node, producers) -> bool:
    """Whether ``node`` is a generated loop that reads a broadcast operand in place (zero
    strides: lower.arrival_strides with broadcasts), as elementwise kernels and
    reductions do."""
    if node.op == FUSED:
        return node.attr.get("kind", "elementwise") in ("elementwise", "reduction")
    return OPS.get(node.op) is not None and (
        fusable_elementwise(node, producers) or node.op in REDUCTIONS)


def _strides(node_id: int, producers) -> tuple:
    """Element strides of ``node_id``'s value as the program holds it."""
    node = producers[node_id]
    return arrival_strides(node_id, producers) or layout.contiguous_strides(tuple(node.shape))


def _param_of(node: Node) -> Param:
    return Param(node.label or f"v{node.id}", np.dtype(node.dtype), tuple(node.shape), 0)


def _lower(node: Node, producers, graph_id):
    """(the kernel computing ``node``, the node ids its parameters' positions index); the
    kernel's matmul is left to BLAS when ``kernel.matmul.library``, and a matmul that is a
    BLAS call alone has no kernel (None)."""
    op = OPS.get(node.op)
    kind = "elementwise"
    if node.op == FUSED:
        wrapper = node
    elif node.op == "matmul":
        a = producers.get(node.inputs[0])
        if len(node.shape) != 2 or a is None or len(a.shape) != 2 or \
                not matmul_policy.inline_on_cpu(node.shape[0], node.shape[1], a.shape[1],
                                                node.dtype):
            return None, ()
        wrapper = Node(node.id, FUSED, node.inputs, make_attrs({"kind": "matmul_epilogue"}),
                       node.shape, node.dtype, node.device, node.scope, node.loc, (node,),
                       f"mm{node.id}")
    elif op is not None and (fusable_elementwise(node, producers) or node.op in REDUCTIONS):
        # A single op the fusion passes left alone (a copy that keeps two outputs apart,
        # a relu between two matmuls, a bias gradient's sum) is a one-member kernel.
        if node.op in REDUCTIONS:
            kind = "reduction"
        # One parameter per distinct value (``add %1 %1`` reads one array).
        inputs = tuple(dict.fromkeys(i for i in node.inputs if isinstance(i, int)))
        wrapper = Node(node.id, FUSED, inputs, make_attrs({"kind": kind}),
                       node.shape, node.dtype, node.device, node.scope, node.loc, (node,),
                       f"s{node.id}_{node.op}")  # not f"{op}{id}": exp10, log2 are libm's
    else:
        raise _Refused(f"%{node.id} ({node.op}) has no C lowering")
    try:
        return lower_fused(wrapper, producers, graph_id=graph_id,
                           matmul_inline=matmul_policy.inline_on_cpu), wrapper.inputs
    except Unsupported as exc:
        raise _Refused(f"%{node.id} ({node.op}): {exc}") from None
