"""The C fast entry of jitted replays: a jitted call with no Python between the caller
and the kernel.

The generated Python replay (execmode/jit_driver/fastcall.py) still costs ~150-250 ns per
argument check and ~0.2 us to wrap an output: for tiny graphs (three adds on 1-element
tensors) that is most of the call. For a concrete function whose plan is one compiled C
function - a whole-graph program (program.py) or a single fused C kernel - this module
builds a ``FastEntry``: a small CPython extension type (``fast_entry.c``) that does the
same checks, gathers the data pointers, takes outputs from the kernel's own OutputPool
(same reuse rule: only an array nobody else references), calls the compiled entry point
by address and wraps the outputs in Tensors, all in C. A plan of one NumPy ufunc step (a
jitted single op) gets the same entry in call mode: the checks in C, then the ufunc called
on the arguments (NumPy's results, bit for bit).

* **Same answers, same misses.** The global conditions (a tracer, ``em.disable_jit``, a
  listener wanting kernel events, the grad mode) are read from the modules' dicts at
  every call; a different argument class, shape, dtype, requires_grad or static value
  returns MISS, as the Python replay does. What only C checks (an argument's strides, a
  captured tensor's array) hands the call to the Python replay, which copies into the
  kernel's layout.
* **Timed while the kernel clock runs** (a profiler or em.compare measures:
  execmode/kernel_clock.py): a program times its own steps; for a one-step plan the entry
  reads the clock around the kernel or ufunc call and adds to the plan's sums.
* **Built on first use, cached on disk like kernels.** The C source lives next to this
  file; the first jitted function that qualifies compiles it with the project's compiler
  (~0.3 s) into the cache directory's ``extensions`` folder, keyed by the source,
  compiler, flags, CPU and Python/NumPy ABI; temporary file + ``os.replace``. No compiler, no Python or NumPy
  headers, a failed build: ``load_extension()`` returns None and jit keeps the Python
  replay (``extension_status()`` says why). Nothing compiles at import. Where a second
  compiler slot exists, a segment that starts compiling starts the build in the
  background (:func:`start_build`, compiler_slots.py), beside the graph's own kernels.
* ``EXECMODE_FAST_ENTRY=0`` turns the C entry off (for comparisons).
"""

from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import Future

import numpy as np

from ..native import source_path
from .buffers import data_pointer
from .compiler_slots import in_background
from .extension_build import build_extension
from .factory import _note, debug_level
from .ufunc_loop import direct_loop

EXTENSION = "_em_fast_entry"
SOURCE = source_path("fast_entry.c")
# Kernels writing at least this many output bytes run with the GIL released (ctypes
# always releases it; for smaller ones the release costs more than it could give back).
RELEASE_GIL_BYTES = 1 << 16

# CC value -> (module or None, status dict), or the Future of a build started early
# (start_build): one build attempt per compiler and process.
_loaded: dict = {}
_loading = threading.Lock()


def _after_fork_in_child() -> None:
    global _loading
    # A build started early in the parent has no thread in the child: forget it (a
    # finished one is found again in the disk cache).
    _loading = threading.Lock()
    for cc, hit in list(_loaded.items()):
        if isinstance(hit, Future):
            del _loaded[cc]


os.register_at_fork(after_in_child=_after_fork_in_child)


def enabled() -> bool:
    return os.environ.get("EXECMODE_FAST_ENTRY", "1").strip() not in ("0", "off", "no")


def load_extension():
    """The compiled ``_em_fast_entry`` module, or None (then ``extension_status()``).
    Waits for a build started early; an exception it raised is raised here."""
    cc = os.environ.get("CC", "").strip()
    with _loading:
        hit = _loaded.get(cc)
        if hit is None:
            hit = _loaded[cc] = _load()
    if isinstance(hit, Future):
        try:
            result = hit.result()
        except BaseException:
            with _loading:  # the next ask tries again, as after a failed call
                if _loaded.get(cc) is hit:
                    del _loaded[cc]
            raise
        with _loading:
            _loaded[cc] = hit = result
    return hit[0]


def start_build() -> None:
    """Build (or find in the cache) and load the extension on a background thread, unless
    that happened or is happening for the current CC (em.jit asks as a segment starts
    compiling: jit_driver/compiled_segment.py)."""
    cc = os.environ.get("CC", "").strip()
    with _loading:
        if not enabled() or cc in _loaded:
            return
        _loaded[cc] = in_background(_load, "fast-entry-build")


def extension_status() -> dict:
    """How the extension was obtained for the current CC: extension_build's status (``ok``
    False with the reason, and ``machine_lacks``, when it is unavailable)."""
    load_extension()
    return dict(_loaded[os.environ.get("CC", "").strip()][1])


def _load() -> tuple:
    module, status = _build()
    if module is None:
        _note(f"fast entry unavailable, jitted calls use the Python replay: {status['reason']}")
    elif debug_level() >= 2:
        state = "cache hit" if status["cache_hit"] else f"{status['compile_ns'] / 1e6:.0f} ms"
        _note(f"fast entry extension, {state}: {status['path']}")
    return module, status


def _build() -> tuple:
    return build_extension(EXTENSION, SOURCE, "fast_entry")


# --- building an entry ------------------------------------------------------------------

def make_fast_entry(cf, items, python_replay, modules):
    """A ``FastEntry`` replaying ``cf`` (a concrete function without breaks or tensor guards
    whose arguments are ``items``: pytree.LEAF or ("static", (type name, value)) per
    position), or None when its plan is not one C function or the extension is
    unavailable. The C checks no tensor guard (jit_driver/tensor_guards.py): a function
    with any keeps the generated Python replay, which compiles them.

    ``python_replay`` is the generated Python replay (misses of layout go there);
    ``modules`` is (dispatch, jit, instrument, pytree, Tensor, MISS).
    """
    if not enabled() or cf.grad_writes or cf.guards or cf.has_breaks or cf.flag_writes \
            or not cf.signature.grad_enabled:  # grad mode off is per thread: Python checks it
        return None
    if cf.out_spec is None or any(kind not in ("out", "const") for kind, _ in cf.out_spec):
        return None  # an argument object itself, a view, a history: Python does that
    segment = cf.segments[0]
    plan = segment.compiled.plan
    if plan.assigns or plan.copy_outputs:
        return None
    sources = segment.sources
    if len(sources) != len(plan.input_slots):
        return None
    if plan.program is not None:
        target = _program_target(plan, sources)
    else:
        target = _kernel_target(plan, sources) or _call_target(plan, sources)
    if target is None:
        return None
    ext = load_extension()
    if ext is None:
        return None
    dispatch, jit_module, instrument, pytree, tensor_type, miss = modules
    install_call(jit_module.JitFunction, ext, miss)
    # address: a C entry point's address, or (a callable step) the callable itself.
    address, n_block, fixed, inputs, outputs, release_gil, keep = target

    positions, leaf_layouts, position_of_leaf = [], [], {}
    for item in items:
        if item != pytree.LEAF:
            value = item[1][1]
            positions.append((True, type(value), value))
            continue
        leaf = len(leaf_layouts)
        shape, dtype, device, requires_grad, alias = cf.signature.leaves[leaf]
        if str(device) != "cpu" or not isinstance(dtype, np.dtype):
            return None
        spec = (False, leaf, tuple(shape), dtype, bool(requires_grad))
        if alias != leaf:  # traced as the same tensor as an earlier argument (f(x, x))
            spec += (position_of_leaf[alias],)
        position_of_leaf[leaf] = len(positions)
        positions.append(spec)
        leaf_layouts.append((tuple(shape), dtype))

    input_specs = []
    for (block, slot), source in inputs:
        if source.kind == "arg":
            shape, dtype = leaf_layouts[source.leaf_index]
            if slot is None:  # a callable step's argument: the signature's layout
                slot = _CallSlot(shape, dtype)
            if shape != tuple(slot.shape) or dtype != slot.dtype:
                return None
            input_specs.append((block, source.leaf_index, None, tuple(slot.shape),
                                slot.byte_strides, slot.dtype))
        elif source.kind == "capture" and type(source.tensor) is tensor_type:
            input_specs.append((block, -1, source.tensor, tuple(slot.shape),
                                slot.byte_strides, slot.dtype))
        else:
            return None
    results = []
    for kind, value in cf.out_spec:
        results.append((value, None) if kind == "out" else (-1, value))
    single = cf.out_structure == pytree.LEAF and len(results) == 1
    descriptors = vars(tensor_type)
    try:
        return ext.FastEntry(
            address, n_block, tuple(fixed), tuple(positions), len(leaf_layouts),
            tuple(input_specs), tuple(outputs), tuple(results),
            None if single else cf.out_structure, pytree.unflatten,
            vars(dispatch), vars(jit_module),
            (instrument._on_kernel, instrument._before_kernel, instrument._after_kernel),
            bool(cf.signature.grad_enabled), tensor_type, descriptors["_data"],
            descriptors["requires_grad"], miss, release_gil, python_replay, keep,
            cf.python_state_holds if cf.python_guards or cf.scalar_guards else None,
            # A program times its steps itself; the entry times a one-step plan's step.
            None if plan.program is not None else plan.clock.array)
    except ValueError as exc:  # more than 64 arguments or 32 dimensions: not worth C
        _note(f"{cf.segments[0].graph.name}: Python replay ({exc})")
        return None


def install_call(jit_class, ext, miss) -> None:
    """``jit_class.__call__`` (JitFunction's) replaced by the extension's ``JitCall``: the
    same two steps (the fast replay, else ``_call``) without a Python frame in front of
    the C entry, which cost as much as the entry itself for a jitted single op (~190 ns).
    Once per process; keyword calls still go to the Python ``__call__``."""
    current = jit_class.__dict__["__call__"]
    if type(current).__name__ != "JitCall":
        jit_class.__call__ = ext.JitCall(current, miss)


def _address(cfunc) -> int:
    return ctypes.cast(cfunc, ctypes.c_void_p).value


def _program_target(plan, sources):
    """(address, block size, fixed pointers, [((block, slot), source)], outputs, release
    GIL, keepalive) for a whole-graph program."""
    program = plan.program
    n_block = len(program._block)
    if len(program._inputs) != len(sources) or program.failed is not None:
        return None  # (a failed check is a miss the generated Python replay takes)
    out_blocks = [index for index, _ in program._outputs]
    in_blocks = [index for index, _ in program._inputs]
    if len(set(out_blocks)) != len(out_blocks) or set(out_blocks) & set(in_blocks) \
            or set(out_blocks) & set(program._owned):
        return None  # an output that is an input or another output: the Python path
    fixed = [(index, data_pointer(array)) for index, array in program._owned.items()]
    fixed += list(program._fixed.items())  # BLAS function pointers
    outputs = [(index, pool.entries, pool.take) for index, pool in program._outputs]
    # A program writes the scratch buffers it owns: never two threads at once.
    return (_address(program._entry), n_block, fixed, list(zip(program._inputs, sources)),
            outputs, False, program)


class _CallSlot:
    """An input of a callable step: its shape and dtype are checked, not its strides (a
    ufunc takes any layout)."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype, self.byte_strides = tuple(shape), dtype, None


def _call_target(plan, sources):
    """The same for a plan of one NumPy ufunc step (a jitted single op): the entry calls
    the ufunc itself, so results are NumPy's, bit for bit, as in the Python replay."""
    if len(plan.steps) != 1:
        return None
    step = plan.steps[0]
    if not isinstance(step.fn, np.ufunc) or step.out_array is not None \
            or plan.output_slots != [step.out] or len(step.args) > 8:
        return None
    inputs, fixed = [], []
    for position, arg in enumerate(step.args):
        if arg.__class__ is not int:
            fixed.append((position, arg.value))  # a Literal operand: passed as it is
            continue
        if arg not in plan.input_slots:
            return None
        source = sources[plan.input_slots.index(arg)]
        if source.kind == "capture":
            data = source.tensor._data
            if not isinstance(data, np.ndarray):
                return None
            slot = _CallSlot(data.shape, data.dtype)
        elif source.kind == "arg":
            slot = None  # filled from the argument's signature below
        else:
            return None
        inputs.append(((position, slot), source))
    # The ufunc's loop called directly where the operands allow (ufunc_loop.py).
    call = direct_loop(step.fn, step.node.dtype) or step.fn
    return call, len(step.args), fixed, inputs, [], False, call


def _kernel_target(plan, sources):
    """The same for a plan of one fused C kernel writing a pool output."""
    from .c_runtime import CKernel

    if len(plan.steps) != 1:
        return None
    step = plan.steps[0]
    kernel = step.fn
    if type(kernel) is not CKernel or step.out_array is not None \
            or plan.output_slots != [step.out]:
        return None
    inputs = []
    for k, slot in enumerate(kernel._slots):
        arg = step.args[slot.position]
        if arg.__class__ is not int or arg not in plan.input_slots:
            return None
        inputs.append(((k, slot), sources[plan.input_slots.index(arg)]))
    n_block = len(kernel._block)
    out = kernel._out_index
    fixed = [(i, kernel._block[i] or 0) for i in range(len(kernel._slots), n_block)
             if i != out]
    pool = kernel._pool
    nbytes = int(np.prod(pool.shape)) * pool.dtype.itemsize
    release_gil = not fixed and nbytes >= RELEASE_GIL_BYTES
    return (_address(kernel._entry), n_block, fixed, inputs,
            [(out, pool.entries, pool.take)], release_gil, kernel)

