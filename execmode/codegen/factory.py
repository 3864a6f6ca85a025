"""From a lowered graph to the kernel objects its plan calls.

``kernel_factory_for(graph, graph_id, backend)`` lowers every fused node, compiles the CPU
kernels of the graph in translation units of bounded size, in parallel (units.py; each a
compiler call or a disk-cache hit), and the CUDA ones in one CuPy module, emits a
``compile`` event per translation unit (its kernels as children), and returns the
``factory(node) -> (fn, backend_name)`` that :func:`execmode.plan.build_plan` calls.

Backends: ``None`` (auto: C when a compiler works, else the interpreter; CUDA for nodes on
a CUDA device), ``"c"``, ``"interpreter"``, ``"numpy"`` (no kernels: members op by op).
A fused node that cannot be lowered, or a failed compile, falls back without failing the
graph, and ``backend_status()`` / the compile events say so.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

from execmode import instrument
from execmode.graph.ir import FUSED, Node, make_attrs

from . import matmul_policy
from .c_runtime import CompileError, make_kernel, needs_compiling
from .interpreter import InterpretedKernel
from .lower import Unsupported, arrival_strides, lower_fused
from .render_c import CRenderer
from .status import record_fallback
from .toolchain import NoCompiler, get_toolchain
from .units import build_libraries

BACKENDS = (None, "auto", "c", "interpreter", "numpy", "cuda")


def debug_level() -> int:
    text = os.environ.get("EXECMODE_DEBUG", "").strip()
    return int(text) if text.isdigit() else 0


def kernel_factory_for(graph, graph_id: str, backend: str | None = None, alongside=None):
    """The plan's kernel factory for ``graph`` (None when there is nothing to generate).

    ``alongside(c_kernels)``: called with node id -> kernel IR of the kernels about to
    compile as C, it returns more rendered units to compile on the same workers (the
    graph's whole-graph program, compiled_segment.py); its owner loads them."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown kernel backend {backend!r}; expected one of "
                         "'c', 'interpreter', 'numpy' or None")
    if backend == "numpy":
        return None
    fused = [n for n in graph.nodes if n.op == FUSED]
    matmuls = [n for n in graph.nodes if n.op == "matmul"] if backend != "interpreter" else []
    if not fused and not matmuls:
        return None
    kernels = compile_kernels(graph, graph_id, backend, alongside)

    def factory(node):
        k = kernels.get(node.id)
        return (k, k.backend) if k is not None else (None, "numpy")

    factory.kernels = kernels
    return factory


def compile_kernels(graph, graph_id: str, backend: str | None = None,
                    alongside=None) -> dict:
    """node id -> kernel object, for every fused node of ``graph`` that lowers."""
    producers = graph.node_map()
    memory_plan = getattr(graph, "meta", {}).get("memory_plan")
    inplace = memory_plan.inplace if memory_plan is not None else {}
    lowered = {}
    for node in graph.nodes:
        if node.op != FUSED:
            continue
        on_gpu = node.device != "cpu"
        try:
            lowered[node.id] = lower_fused(
                node, producers, graph_id=graph_id, inplace_input=inplace.get(node.id),
                matmul_inline=matmul_policy.inline_on_gpu if on_gpu else
                matmul_policy.inline_on_cpu)
        except Unsupported as exc:
            _note(f"{graph_id} {node.label or node.id}: runs op by op ({exc})")
    if backend != "interpreter":
        # Small plain matmuls join the same translation unit: one compiler call per graph.
        lowered.update(_lower_small_matmuls(graph, graph_id))
    cpu = {i: k for i, k in lowered.items() if k.device == "cpu"}
    gpu = {i: k for i, k in lowered.items() if k.device != "cpu"}
    objects = {}
    if cpu:
        objects.update(_cpu_kernels(cpu, graph_id, backend, alongside))
    if gpu and backend in (None, "auto", "cuda"):
        objects.update(_gpu_kernels(gpu, graph_id))
    return objects


def _lower_small_matmuls(graph, graph_id: str) -> dict:
    """Kernel IR for plain (unfused) CPU matmuls small enough that generated loops beat a
    BLAS call (matmul_policy.py); the big ones are left to NumPy."""
    producers = graph.node_map()
    lowered = {}
    for node in graph.nodes:
        if node.op != "matmul" or node.device != "cpu" or len(node.shape) != 2:
            continue
        a, b = (producers.get(i) for i in node.inputs)
        if a is None or b is None or len(a.shape) != 2 or len(b.shape) != 2:
            continue
        m, n, k = node.shape[0], node.shape[1], a.shape[1]
        if not matmul_policy.inline_on_cpu(m, n, k, node.dtype,
                                           arrival_strides(node.inputs[1], producers)):
            continue
        wrapper = Node(node.id, FUSED, node.inputs, make_attrs({"kind": "matmul_epilogue"}),
                       node.shape, node.dtype, node.device, node.scope, node.loc, (node,),
                       f"mm{node.id}")
        try:
            lowered[node.id] = lower_fused(wrapper, producers, graph_id=graph_id,
                                           matmul_inline=matmul_policy.inline_on_cpu)
        except Unsupported:
            continue
    return lowered


# --- CPU ----------------------------------------------------------------------------------

def _cpu_kernels(kernels: dict, graph_id: str, backend, alongside=None) -> dict:
    reason = ""
    if backend != "interpreter":
        try:
            toolchain = get_toolchain()
        except NoCompiler as exc:
            reason = f"no C compiler: {exc}"
            if backend == "c":
                warnings.warn(f"em.jit(backend='c'): {reason}; interpreting kernels over "
                              "NumPy", RuntimeWarning, stacklevel=3)
        else:
            try:
                return _compiled(kernels, graph_id, toolchain, alongside)
            except (CompileError, OSError) as exc:
                reason = f"the C compiler failed: {exc}"
                record_fallback(reason)
                warnings.warn(f"{graph_id}: {reason}; interpreting kernels over NumPy",
                              RuntimeWarning, stacklevel=3)
    return _interpreted(kernels, graph_id, reason or "backend='interpreter'")


def _compiled(kernels: dict, graph_id: str, toolchain, alongside=None) -> dict:
    renderer = CRenderer()
    to_compile = {i: k for i, k in kernels.items() if needs_compiling(k)}
    extra = alongside(to_compile) if alongside is not None else []
    # Translation units of bounded size, compiled in parallel (units.py).
    built = build_libraries(list(to_compile.values()), toolchain, renderer,
                            alongside=extra) if to_compile or extra else []
    library_of = {id(k): library for unit, library in built for k in unit}
    objects = {i: make_kernel(k, library_of.get(id(k)), renderer) for i, k in kernels.items()}
    for unit, library in built:
        members = {id(k) for k in unit}
        emit_compile(graph_id, [o for o in objects.values() if id(o.kernel) in members],
                     library.started_ns, library.compile_ns, library.cache_hit, "c", "c")
        if debug_level() >= 2:
            state = "cache hit" if library.cache_hit else f"{library.compile_ns / 1e6:.0f} ms"
            _note(f"{graph_id}: {len(unit)} C kernel(s), {state}: {library.path}")
    if not built:  # library matmuls only: nothing went to the compiler
        now = time.perf_counter_ns()
        emit_compile(graph_id, list(objects.values()), now, 0, True, "c", "c")
    return objects


def _interpreted(kernels: dict, graph_id: str, reason: str) -> dict:
    renderer = CRenderer()
    objects = {}
    for i, k in kernels.items():
        source = f"/* interpreted over NumPy: {reason} */\n" + renderer.kernel(k)
        objects[i] = InterpretedKernel(k, source)
    emit_compile(graph_id, list(objects.values()), time.perf_counter_ns(), 0, False,
                 "interpreter", "interpreter")
    return objects


# --- GPU ------------------------------------------------------------------------------------

def _gpu_kernels(kernels: dict, graph_id: str) -> dict:
    from .cuda_runtime import CudaKernel, CudaUnavailable, build_module

    to_compile = [k for k in kernels.values() if k.body or not
                  (k.matmul is not None and k.matmul.library)]
    started = time.perf_counter_ns()
    try:
        module, _, compile_ns, hit = build_module(to_compile) if to_compile else \
            (None, "", 0, True)
    except CudaUnavailable as exc:
        _note(f"{graph_id}: CUDA kernels unavailable ({exc}); running op by op")
        return {}
    objects = {i: CudaKernel(k, module) for i, k in kernels.items()}
    emit_compile(graph_id, list(objects.values()), started, compile_ns, hit, "cuda", "cuda")
    return objects


# --- reporting ------------------------------------------------------------------------------

def kernel_child(kernel, source: str) -> dict:
    """A compile event's child: one kernel of the translation unit."""
    return {"kernel": kernel.name, "source": source, "member_nodes": list(kernel.members),
            "member_ops": list(kernel.member_ops)}


def emit_compile(graph_id: str, objects: list, started_ns: int, compile_ns: int,
                 cache_hit: bool, language: str, backend: str, what: str = "kernels",
                 children: list | None = None) -> None:
    """One compile: one translation unit (or module) and the kernels in it, as children
    (``objects``' kernels, or ``children`` as kernel_child makes them). Its time is the
    compiler's (or the cache lookup's) once, not once per kernel."""
    kernels = children if children is not None else \
        [kernel_child(obj.kernel, obj.source) for obj in objects]
    if debug_level() >= 4:
        for child in kernels:
            print(child["source"], file=sys.stderr)
    if not instrument._on_event:
        return
    instrument.emit(instrument.Event("compile", {
        "graph_id": graph_id, "what": what, "language": language, "backend": backend,
        "compile_ns": compile_ns, "cache_hit": cache_hit, "kernels": kernels,
    }, started_ns, started_ns + compile_ns))


def _note(text: str) -> None:
    if debug_level() >= 1:
        print(f"[execmode.codegen] {text}", file=sys.stderr)
