"""A hand-written C file of execmode/native, compiled into a plain shared library once per
machine (the disk cache, keyed by its source and the toolchain) and loaded with ctypes.

The kernels' flags (``-O3 -march=native -ffp-contract=off``, no fast-math) without OpenMP:
these libraries run on the calling thread. ``EXECMODE_EAGER_OPERATORS=0`` switches them off
with the eager operators, so every caller keeps its NumPy version.
"""

from __future__ import annotations

import ctypes
import os

from ..native import source_path
from . import cache_trust, disk_cache
from .toolchain import NoCompiler, get_toolchain, remembered_toolchain, run_compiler

_HEADERS = os.path.dirname(os.path.abspath(__file__))  # codegen's em_*.h


def switched_off() -> bool:
    return os.environ.get("EXECMODE_EAGER_OPERATORS", "1").strip() in ("0", "off", "no")


def load_library(file_name: str, build: bool = True, headers: tuple = ()):
    """``execmode/native/<file_name>`` as a ctypes CDLL, or None (switched off, no
    compiler; with ``build=False``, not built on this machine yet). A build that fails
    raises. ``headers``: codegen's headers the file includes (``#include "em_dialect_c.h"``:
    the kernels' own float32 math), found on the include path and part of the build's key."""
    if switched_off():
        return None
    if build:
        try:
            toolchain = get_toolchain()
        except NoCompiler:
            return None
    else:  # no probe either: it compiles a test kernel
        toolchain = remembered_toolchain()
        if toolchain is None:
            return None
    with open(source_path(file_name), encoding="utf-8") as f:
        source = f.read()
    stem = file_name.rsplit(".", 1)[0]
    flags = tuple(f for f in toolchain.flags if f not in ("-fopenmp", "-fopenmp-simd"))
    keyed = source
    if headers:
        flags += ("-I", _HEADERS)
        for name in headers:
            with open(os.path.join(_HEADERS, name), encoding="utf-8") as f:
                keyed += f.read()
    key = disk_cache.library_key(keyed, f"{toolchain.identity} {stem}")
    path = disk_cache.library_path(f"{stem}-{key}", folder="extensions")

    if not build:  # only a trusted build already in the cache (~2 ms to load)
        return None if cache_trust.verify(path) else ctypes.CDLL(path)

    def compile_into(output: str) -> None:
        src_path = disk_cache.temporary_path(path[:-3] + ".c")
        try:
            with open(src_path, "w", encoding="utf-8") as f:
                f.write(source)
            ok, message = run_compiler(toolchain.command, flags, src_path, output)
            if not ok:
                raise RuntimeError(f"{file_name} did not compile: {message}")
        finally:
            if os.path.exists(src_path):
                os.unlink(src_path)

    disk_cache.reuse_or_build(path, compile_into)
    return ctypes.CDLL(path)


__all__ = ["load_library", "switched_off"]
