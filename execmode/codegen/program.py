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
attaches it to the plan (``plan.program``): replays use it when nobody listens, while the
debugger and the profiler keep stepping through the plan's steps.

This module runs and binds a program; program_draft.py walks the graph into its C and
program_statements.py writes each node's statements.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from execmode import kernel_clock as clock_module
from execmode.kernel_clock import StepClock

from .buffers import OutputPool, arranged, data_pointer
from .c_runtime import CompileError, Library, compile_unit, load_unit
from .factory import emit_compile, kernel_child
from .program_draft import Draft, c_kernels_of, draft_program
from .program_statements import Refused
from .render_c import CRenderer


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
    except Refused as exc:
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
        return draft_program(graph, graph_id, c_kernels)
    except Refused as exc:
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
        have = c_kernels_of(compiled)
        return have.keys() == self.c_kernels.keys() and \
            all(have[i] is kernel for i, kernel in self.c_kernels.items())


def _compile(graph, graph_id: str, compiled: dict, clock) -> Program:
    draft = draft_program(graph, graph_id, c_kernels_of(compiled))
    compile_unit(draft.unit)
    return _finish(draft, compiled, clock)


def _finish(draft: Draft, compiled: dict, clock) -> Program:
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
