"""The CPU runtime: render kernels into a translation unit, compile it (one compiler call)
or find it in the disk cache, load the library with ctypes, and call kernels with little
overhead. units.py cuts a graph's kernels into several units and compiles them at once.

A :class:`CKernel` is what the plan calls: ``kernel(*args)`` with the fused node's inputs
in ``node.inputs`` order (literal values are ignored: they are compiled in), returning the
output array; ``kernel.run_into(out, *args)`` writes into a preallocated ``out`` (which
must not overlap any input). Pointers are found without ``arr.ctypes.data`` on the common
paths (see buffers.py): a call with cached pointers costs about a ctypes call.
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass

import numpy as np

from . import disk_cache, matmul_overflow, runtime_library
from .buffers import REGISTRY, OutputPool, arranged, data_pointer, has_strides
from .call_path import build_call_path
from .kernel_ir import Kernel, Param
from .openmp_policy import prefer_passive_openmp
from .render_c import CRenderer
from .threads import configure_library
from .toolchain import LONG_KERNEL_BYTES, Toolchain, run_compiler


class CompileError(Exception):
    """The compiler rejected a translation unit (a bug in a renderer or a template)."""


@dataclass
class Library:
    path: str
    cdll: ctypes.CDLL
    source: str
    cache_hit: bool
    compile_ns: int
    toolchain: Toolchain
    started_ns: int = 0   # perf_counter_ns when the build (or the cache lookup) began

    def function(self, name: str, n_pointers: int):
        fn = getattr(self.cdll, name)
        fn.argtypes = [ctypes.c_void_p] * n_pointers
        fn.restype = None
        return fn


@dataclass
class Unit:
    """One translation unit on its way to a loaded Library: rendered (``render_unit``),
    compiled or found in the disk cache (``compile_unit``, safe to run on several threads
    at once: units.py does), then loaded (``load_unit``, on the caller's thread)."""

    kernels: list
    source: str
    path: str
    toolchain: Toolchain
    long_kernels: bool = False  # toolchain.LONG_KERNEL_BYTES of C per kernel or more
    runtime: tuple = ()         # the runtime library's helpers it calls (their names)
    helpers: str = ""           # the prelude's helpers: those libraries' source
    cache_hit: bool = False
    compile_ns: int = 0
    started_ns: int = 0
    compiled: bool = False          # compile_unit ran to the end (built or found)
    error: Exception | None = None  # its compile failed (units.py: raised by its owner)


def render_unit(kernels, toolchain: Toolchain, renderer=None) -> Unit:
    renderer = renderer or CRenderer()
    source = renderer.translation_unit(kernels, runtime=runtime_library.usable(toolchain))
    long_kernels = bool(kernels) and \
        (len(source) - len(renderer.prelude())) / len(kernels) >= LONG_KERNEL_BYTES
    key = disk_cache.library_key(source, toolchain.identity_for(source, long_kernels))
    runtime = runtime_library.used(source)
    return Unit(list(kernels), source, disk_cache.library_path(key), toolchain, long_kernels,
                runtime, renderer.helpers() if runtime else "")


def compile_unit(unit: Unit) -> None:
    """Compile ``unit`` into the cache unless a trusted build is there; loads nothing."""
    toolchain, path, source = unit.toolchain, unit.path, unit.source
    unit.started_ns = t0 = time.perf_counter_ns()

    def build(output: str) -> None:
        src_path = disk_cache.temporary_path(path[:-3] + ".c")
        try:
            with open(src_path, "w", encoding="utf-8") as f:
                f.write(source)
            ok, message = run_compiler(toolchain.command,
                                       toolchain.flags_for(source, unit.long_kernels),
                                       src_path, output)
            if not ok:
                raise CompileError(f"{toolchain.command[0]} failed on {len(unit.kernels)} "
                                   f"kernel(s):\n{message}")
            # The source next to the library, for people (never read back by execmode).
            os.replace(src_path, path[:-3] + ".c")
        finally:
            if os.path.exists(src_path):
                os.unlink(src_path)

    # A cached library is loaded only after its owner, mode and content hash are checked
    # (cache_trust.py); anything else is rebuilt.
    unit.cache_hit = disk_cache.reuse_or_build(path, build)
    unit.compile_ns = time.perf_counter_ns() - t0
    unit.compiled = True


def load_unit(unit: Unit) -> Library:
    toolchain = unit.toolchain
    if toolchain.openmp:
        prefer_passive_openmp()
    if unit.runtime:  # its em_rt_* symbols resolve to these when it loads
        try:
            runtime_library.load(toolchain, unit.helpers, unit.runtime)
        except runtime_library.RuntimeBuildError as exc:
            raise CompileError(str(exc)) from exc
    cdll = ctypes.CDLL(unit.path)
    matmul_overflow.bind(cdll, unit.source)  # its generated matmuls' BLAS, where they call it
    if toolchain.openmp:
        configure_library(cdll)  # the thread count, and what a fork does (threads.py)
    return Library(unit.path, cdll, unit.source, unit.cache_hit, unit.compile_ns, toolchain,
                   unit.started_ns)


def build_library(kernels, toolchain: Toolchain, renderer=None) -> Library:
    """Render ``kernels`` into one translation unit, compile it (or find it in the disk
    cache) and load it."""
    unit = render_unit(kernels, toolchain, renderer)
    compile_unit(unit)
    return load_unit(unit)


# --- kernels --------------------------------------------------------------------------------


class _Slot:
    """One pointer argument read from the call's arguments."""

    __slots__ = ("position", "dtype", "shape", "strides", "byte_strides", "name")

    def __init__(self, param: Param):
        self.position = param.position
        self.dtype = param.dtype
        self.shape = param.shape
        self.strides = param.element_strides
        self.byte_strides = tuple(s * param.dtype.itemsize for s in self.strides)
        self.name = param.name

    def fits(self, a: np.ndarray) -> bool:
        if a.dtype != self.dtype or a.shape != self.shape:
            return False
        # Exact strides first (the common case); size-1 axes may carry any stride.
        return a.strides == self.byte_strides or has_strides(a, self.strides)


class CKernel:
    """A compiled kernel the plan calls: ``fn(*args) -> out`` and ``run_into(out, *args)``.

    Both are generated straight-line functions (call_path.py); ``run_into`` is an instance
    attribute, so the plan binds the function itself. Not thread-safe: a kernel object has
    one argument block (as a plan has one set of buffers).
    """

    backend = "c"

    def __init__(self, kernel: Kernel, library: Library, renderer=None):
        renderer = renderer or CRenderer()
        self.kernel = kernel
        self.name = kernel.name
        self.language = renderer.language
        self.source = renderer.kernel(kernel)
        self.library_path = library.path
        self.library = library  # whole-graph programs call its functions by address
        params = renderer.signature_params(kernel)
        self._slots = tuple(_Slot(p) for p in params if p.position >= 0)
        self._block = (ctypes.c_void_p * len(params))()
        # Scratch arrays (a library matmul's result) are owned: their pointers never change.
        self._scratch = {p.name: np.empty(p.shape, p.dtype) for p in kernel.scratch}
        for i, p in enumerate(params):
            if p.name in self._scratch:
                self._block[i] = self._scratch[p.name].ctypes.data
        self._out_index = len(params) - 1
        self._memo = [[None, 0] for _ in self._slots]
        self._keepalive = [None] * len(self._slots)
        self._pool = OutputPool(kernel.output.shape, kernel.output.dtype)
        self._entry = library.function(kernel.name + "_entry", 1)
        self._call, self.run_into = build_call_path(
            [s.position for s in self._slots], self._entry,
            ctypes.addressof(self._block), self._memo, self._rebind, self._pool,
            self._set_out, self._bind_out)

    def __repr__(self) -> str:
        return f"<CKernel {self.kernel.describe()}>"

    def __call__(self, *args):
        return self._call(*args)

    # -- the slow path: arrays seen for the first time -------------------------------------
    def _rebind(self, k: int, a) -> None:
        """A new array object at input ``k``: check it, write its pointer into the block."""
        slot = self._slots[k]
        if a.__class__ is not np.ndarray:
            a = np.asarray(a)
        if not slot.fits(a):
            self._rebind_copy(k, slot, a)
            return
        ptr = data_pointer(a)
        self._block[k] = ptr
        memo = self._memo[k]
        base = a.base
        # Memoising a pool buffer (or a view of one) would pin it: pools reuse only
        # buffers nobody references.
        pooled = id(a) in REGISTRY or (base is not None and id(base) in REGISTRY)
        memo[0] = None if pooled else a
        memo[1] = ptr

    def _rebind_copy(self, k: int, slot: _Slot, a: np.ndarray) -> None:
        if a.shape != slot.shape and a.size != int(np.prod(slot.shape)):
            raise ValueError(f"kernel {self.name}: argument {slot.name} has shape "
                             f"{a.shape}, the kernel was built for {slot.shape}")
        # Wrong dtype or layout: a converted copy, kept alive through the call. Never
        # memoised: the original's contents may change before the next call.
        a = arranged(np, a.reshape(slot.shape), slot.dtype, slot.strides)
        self._keepalive[k] = a
        self._memo[k][0] = None
        self._block[k] = data_pointer(a)

    def _set_out(self, ptr: int) -> None:
        self._block[self._out_index] = ptr

    def _bind_out(self, out) -> None:
        o = self.kernel.output
        if type(out) is not np.ndarray or out.dtype != o.dtype or out.shape != o.shape \
                or not out.flags.c_contiguous:
            raise ValueError(f"kernel {self.name}: out must be a C-contiguous "
                             f"{o.dtype}{list(o.shape)} array")
        self._block[self._out_index] = data_pointer(out)


class LibraryMatmulKernel(CKernel):
    """A matmul_epilogue whose matmul is a NumPy (BLAS) call into an owned scratch array,
    followed by the compiled epilogue. With no epilogue, the matmul writes the output."""

    def __init__(self, kernel: Kernel, library: Library | None, renderer=None):
        mm = kernel.matmul
        by_name = {p.name: p for p in kernel.params}
        self._a = by_name[mm.a].position
        self._b = by_name[mm.b].position
        self._has_epilogue = bool(kernel.body)
        if self._has_epilogue:
            super().__init__(kernel, library, renderer)
            self._result = self._scratch["mm"]
            self._epilogue_into = self.run_into
            self.run_into = self._matmul_then_epilogue
        else:
            renderer = renderer or CRenderer()
            self.kernel, self.name = kernel, kernel.name
            self.language = "numpy"
            self.library_path = None
            self.source = f"/* {kernel.name}: {mm.comment} - a NumPy matmul call, no kernel */"
            self._pool = OutputPool(kernel.output.shape, kernel.output.dtype)

    def __call__(self, *args):
        if not self._has_epilogue:
            out = self._pool.take()[0]
            np.matmul(args[self._a], args[self._b], out=out)
            return out
        np.matmul(args[self._a], args[self._b], out=self._result)
        return super().__call__(*args)

    def run_into(self, out, *args):
        np.matmul(args[self._a], args[self._b], out=out)
        return out

    def _matmul_then_epilogue(self, out, *args):
        np.matmul(args[self._a], args[self._b], out=self._result)
        return self._epilogue_into(out, *args)


def make_kernel(kernel: Kernel, library: Library | None, renderer=None) -> CKernel:
    if kernel.matmul is not None and kernel.matmul.library:
        return LibraryMatmulKernel(kernel, library, renderer)
    return CKernel(kernel, library, renderer)


def needs_compiling(kernel: Kernel) -> bool:
    """False for a bare library matmul (nothing to compile)."""
    return not (kernel.matmul is not None and kernel.matmul.library and not kernel.body)
