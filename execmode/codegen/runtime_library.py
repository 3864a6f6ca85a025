"""The float32 transcendentals compiled once per machine, for kernels too long to inline them.

The prelude's float32 ``exp``, ``log``, ``tanh``, ``erf``, ``expm1`` and ``log1p``
(em_dialect_c.h) are branch-free polynomials marked ``always_inline``: inlined into a loop
they vectorise with it. Inlined into a long fused chain they are most of what the C
compiler works on: a 5000-op chain with 1,250 ``tanh`` was 520 KB of C and ~25 s of gcc
at -O3, ~28 ms per inlined ``tanh`` (docs/performance.md, "First calls").

So a kernel that would inline more than :data:`INLINE_MAX` of them calls them from this
library instead: the same source (the prelude itself), compiled once per machine and
compiler, one small library per helper (``runtime-tanh-<key>.so`` in the kernel cache),
with ``omp declare simd`` so that each helper also exists as vector functions
(``_ZGVeN16v_em_rt_tanh_f32`` ...) that a vectorised kernel loop calls 16 lanes at a time.
A shorter kernel keeps inlining, whatever its neighbours in the unit do: a 16M-element
``tanh(x * a + b) * 0.5 + relu(x)`` ran ~10-20% slower calling than inlined, where the
kernels of a tanh chain (64 per kernel) ran no slower. The helpers are declared ``const``
(they read no memory): GCC refuses to if-convert a loop holding any other call, and a
select (``relu``) beside a call left that loop scalar, 10x slower. The bits are the
prelude's: one source, one set of flags, the same IEEE operations in every variant
(tests/codegen/test_runtime_library.py).

A kernel library that calls the helpers does not link against them: the helpers it uses are
loaded first (after the cache's trust checks, with ``RTLD_GLOBAL``) and the kernel's
undefined ``em_rt_*`` symbols resolve to it when the kernel loads. That keeps the runtime
an independent translation unit, compiled alongside the first kernels that need it.
The kernel's cache key needs nothing more: a helper library's source is the prelude plus
:func:`export`, all of which is in the kernel's own source; a changed prelude is a new
key for both, a new file name for the helper, and a rebuild.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time

from . import disk_cache
from .toolchain import Toolchain, run_compiler

# The prelude's float32 helpers that cost the compiler most when inlined (each a
# polynomial, tanh and erf an exp too). float64 ones already call libm.
HELPERS = ("exp", "log", "tanh", "erf", "expm1", "log1p")
# Calls a kernel may inline (each ~20-30 ms of gcc -O3 here): above this many the kernel
# calls the library; a kernel that large does enough arithmetic per element that a vector
# call costs little beside it (benchmarks/bench_first_call.py's steady rows).
INLINE_MAX = 8
MARK = "/* execmode runtime library: "


class RuntimeBuildError(Exception):
    """The compiler rejected the runtime library (a bug in the prelude)."""


def call_sites(body: str) -> int:
    """How many helper calls ``body`` (kernel C, without the prelude) holds."""
    return sum(body.count(f"em_{name}_f32(") for name in HELPERS)


def calls_in(body: str) -> tuple:
    """The helpers ``body`` (kernel C, without the prelude) calls."""
    return tuple(name for name in HELPERS if f"em_{name}_f32(" in body)


def used(source: str) -> tuple:
    """The helpers a translation unit calls from the library (those it declared)."""
    return tuple(name for name in HELPERS if f"extern float em_rt_{name}_f32(" in source)


def declarations(names) -> str:
    """What a translation unit whose kernels call the library adds after the prelude:
    each helper they call declared as a vector-callable ``const`` function."""
    lines = [f"{MARK}float32 helpers that long kernels call (runtime_library.py) */"]
    for name in names:
        lines += ["#pragma omp declare simd notinbranch",
                  f"extern float em_rt_{name}_f32(float x) __attribute__((const));"]
    return "\n".join(lines) + "\n"


def redirected(kernel_text: str, names) -> str:
    """One kernel's C with the prelude's names of ``names`` meaning the library's, for
    this kernel only: kernels before and after it keep inlining theirs."""
    define = [f"#define em_{name}_f32 em_rt_{name}_f32" for name in names]
    undef = [f"#undef em_{name}_f32" for name in names]
    return "\n".join(define + [kernel_text] + undef)


def export(name: str) -> str:
    """A library's own function: the helper's inline body behind an exported name."""
    return "\n".join([
        f"/* execmode's runtime library: the prelude's float32 {name}, exported with vector",
        " * variants (omp declare simd) for the kernels that call it (runtime_library.py). */",
        "#pragma omp declare simd notinbranch",
        f"float em_rt_{name}_f32(float x) {{ return em_{name}_f32(x); }}"]) + "\n"


def usable(toolchain: Toolchain) -> bool:
    """Whether kernels may call the library: only where ``omp declare simd`` is honoured
    (-fopenmp or -fopenmp-simd), since scalar calls would leave the loops unvectorised."""
    return any(f in ("-fopenmp", "-fopenmp-simd") for f in toolchain.flags)


def source(helpers: str, name: str) -> str:
    """One helper's library: the prelude's helpers and the export. One library per helper:
    each costs gcc ~15 ms per vector variant (five of them), and a program needs few."""
    return helpers + "\n" + export(name)


def path_for(toolchain: Toolchain, helpers: str, name: str) -> str:
    text = source(helpers, name)
    key = disk_cache.library_key(text, toolchain.identity_for(text))
    return disk_cache.library_path(f"runtime-{name}-{key}")


class _State:
    lock = threading.Lock()
    loaded: dict = {}        # path -> ctypes.CDLL, kept for the process's life
    built: dict = {}         # path -> (cache hit, ns): what this process's first ask paid
    building: dict = {}      # path -> the lock its build holds


def ensure_built(toolchain: Toolchain, helpers: str, name: str) -> str:
    """The path of helper ``name``'s library, compiled into the cache unless a trusted copy
    is there (cache_trust.py). Thread-safe: parallel unit compiles may ask at once."""
    path = path_for(toolchain, helpers, name)
    with _State.lock:
        lock = _State.building.setdefault(path, threading.Lock())
    with lock:  # one build per library; two libraries build at once
        if path in _State.built:
            return path
        text = source(helpers, name)
        t0 = time.perf_counter_ns()

        def build(output: str) -> None:
            src_path = disk_cache.temporary_path(path[:-3] + ".c")
            try:
                with open(src_path, "w", encoding="utf-8") as f:
                    f.write(text)
                ok, message = run_compiler(toolchain.command, toolchain.flags_for(text),
                                           src_path, output)
                if not ok:
                    raise RuntimeBuildError(f"{toolchain.command[0]} failed on the runtime "
                                            f"library's {name}:\n{message}")
                # The source next to the library, for people (never read back).
                os.replace(src_path, path[:-3] + ".c")
            finally:
                if os.path.exists(src_path):
                    os.unlink(src_path)

        hit = disk_cache.reuse_or_build(path, build)
        _State.built[path] = (hit, time.perf_counter_ns() - t0)
        return path


def load(toolchain: Toolchain, helpers: str, names) -> list:
    """Build (or find) and load the libraries of ``names``, once per process and source,
    with ``RTLD_GLOBAL`` so that kernel libraries loaded after them find their symbols."""
    cdlls = []
    for name in names:
        path = ensure_built(toolchain, helpers, name)
        with _State.lock:
            cdll = _State.loaded.get(path)
            if cdll is None:
                cdll = _State.loaded[path] = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        cdlls.append(cdll)
    return cdlls


def build_record(toolchain: Toolchain, helpers: str, name: str) -> tuple | None:
    """(cache hit, ns) of this process's build or lookup of ``name``'s library, or None."""
    return _State.built.get(path_for(toolchain, helpers, name))
