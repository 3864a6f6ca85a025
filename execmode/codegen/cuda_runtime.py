"""The GPU runtime: CUDA renderings compiled at run time by CuPy (NVRTC), one RawModule per
graph, kept in a process-wide cache by source (CuPy adds its own on-disk cache).

CuPy is imported only here, and only when a graph has kernels on a CUDA device and
``cupy.cuda.is_available()`` says yes (``execmode.backend.cupy_module``). Launch
configuration comes from the kernel's static sizes: elementwise kernels run a grid-stride
loop (256 threads a block, enough blocks to fill the GPU), reductions one block of
``REDUCE_THREADS`` threads per output element. ``timed(*args)`` measures one launch with
CUDA events.
"""

from __future__ import annotations

import time

import numpy as np

from execmode.backend import cuda_problem, cupy_module

from .buffers import arranged, has_strides
from .kernel_ir import Kernel
from .render_cuda import REDUCE_THREADS, CUDARenderer

THREADS = 256
MAX_BLOCKS = 65535
# --fmad=false: a * b + c stays two roundings, as NumPy/CuPy's elementwise ops compute it
# (a contracted FMA's exact product does not overflow: x - exp(x) at inf gave inf, not nan;
# the C toolchain's -ffp-contract=off, toolchain.py).
NVRTC_OPTIONS = ("--std=c++14", "--fmad=false")

_modules: dict[str, object] = {}


class CudaUnavailable(Exception):
    pass


def require_cupy():
    cp = cupy_module()
    if cp is None:
        raise CudaUnavailable(cuda_problem())
    return cp


def build_module(kernels, renderer=None) -> tuple:
    """(module, source, compile_ns, cache_hit) for ``kernels`` (one NVRTC compilation)."""
    cp = require_cupy()
    renderer = renderer or CUDARenderer()
    source = renderer.translation_unit(kernels)
    t0 = time.perf_counter_ns()
    module = _modules.get(source)
    hit = module is not None
    if module is None:
        module = cp.RawModule(code=source, options=NVRTC_OPTIONS)
        module.compile()  # compile now, so that errors and compile time belong here
        _modules[source] = module
    return module, source, time.perf_counter_ns() - t0, hit


def launch_config(kernel: Kernel) -> tuple:
    """(grid, block) for ``kernel``."""
    if kernel.reduction is not None:
        points = 1
        for loop in kernel.loops:
            if loop.role != "reduce":
                points *= loop.size
        return (max(1, min(points, MAX_BLOCKS)),), (REDUCE_THREADS,)
    work = kernel.size
    if kernel.matmul is not None and not kernel.matmul.library:
        work = kernel.matmul.m * kernel.matmul.n
    blocks = max(1, min(-(-work // THREADS), MAX_BLOCKS))
    return (blocks,), (THREADS,)


class CudaKernel:
    """A CUDA kernel the plan calls with CuPy arrays: ``fn(*args)``, ``run_into``."""

    backend = "cuda"
    language = "cuda"

    def __init__(self, kernel: Kernel, module, renderer=None):
        renderer = renderer or CUDARenderer()
        self.kernel = kernel
        self.name = kernel.name
        self.source = renderer.kernel(kernel)
        self._cp = require_cupy()
        params = renderer.signature_params(kernel)
        # What each call checks an argument against, worked out once: per-call stride work
        # cost more than the launch itself.
        self._inputs = [(p.position, p.dtype, p.shape, p.element_strides,
                         tuple(e * p.dtype.itemsize for e in p.element_strides))
                        for p in params if p.position >= 0]
        # A scalar input's device copy, by position: (its bytes, the 0-d array). Built with
        # a fill kernel, not copied from the host: a host-to-device copy of pageable memory
        # waits for every kernel queued before it, a stall per scalar per call.
        self._scalars: dict = {}
        self._scratch = [p for p in params if p.position < 0 and p is not kernel.output]
        self._buffers = {p.name: self._cp.empty(p.shape, p.dtype) for p in kernel.scratch}
        mm = kernel.matmul
        self._library_mm = mm is not None and mm.library
        if self._library_mm:
            by_name = {p.name: p for p in kernel.params}
            self._a, self._b = by_name[mm.a].position, by_name[mm.b].position
        # A bare library matmul has no kernel of its own: cuBLAS writes the output.
        needs_function = kernel.body or not self._library_mm
        self._function = module.get_function(kernel.name) if needs_function else None
        self._grid, self._block = launch_config(kernel)
        self.last_ms = None

    def __repr__(self) -> str:
        return f"<CudaKernel {self.kernel.describe()}>"

    def __call__(self, *args):
        o = self.kernel.output
        return self.run_into(self._cp.empty(o.shape, o.dtype), *args)

    def run_into(self, out, *args):
        cp = self._cp
        if self._library_mm:
            target = out if self._function is None else self._buffers["mm"]
            cp.matmul(args[self._a], args[self._b], out=target)
            if self._function is None:
                return out
        arrays = []
        ndarray = cp.ndarray
        for position, dtype, shape, element_strides, byte_strides in self._inputs:
            a = args[position]
            if a.__class__ is not ndarray:
                # A Python number or a host 0-d array (a scalar input).
                a = self._device_scalar(position, a, dtype, shape, element_strides)
            elif a.dtype != dtype or a.shape != shape or (
                    a.strides != byte_strides and not has_strides(a, element_strides)):
                a = arranged(cp, a.reshape(shape), dtype, element_strides)
            arrays.append(a)
        scratch = [self._buffers[p.name] for p in self._scratch]
        self._function(self._grid, self._block, (*arrays, *scratch, out))
        return out

    def _device_scalar(self, position, value, dtype, shape, element_strides):
        """``value`` on the device in ``dtype``, as the host would convert it; the last
        one kept per position and reused while its bytes are unchanged (a constant input;
        the bytes tell -0.0 from 0.0)."""
        host = np.asarray(value).astype(dtype, copy=False)
        if host.size != 1:  # not a scalar after all: copied, as any host array
            return arranged(self._cp, self._cp.asarray(host).reshape(shape), dtype,
                            element_strides)
        host = host.reshape(())
        key = host.tobytes()
        kept = self._scalars.get(position)
        if kept is not None and kept[0] == key:
            return kept[1]
        a = self._cp.full(shape, host[()], dtype)
        self._scalars[position] = (key, a)
        return a

    def timed(self, *args) -> tuple:
        """(output, milliseconds) of one launch, timed with CUDA events."""
        cp = self._cp
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        out = self(*args)
        end.record()
        end.synchronize()
        self.last_ms = cp.cuda.get_elapsed_time(start, end)
        return out, self.last_ms
