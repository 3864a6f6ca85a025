"""Building a small CPython extension from a C source of execmode/native.

The eager operators, the jit's fast entry and the recorder's op ring are built the same
way: on first use, with the project's C compiler, into the kernel cache's
``extensions`` folder, keyed by the source, compiler, flags, CPU and the Python/NumPy ABI,
and loaded only after the cache's owner, mode and content-hash checks (cache_trust.py).
Each is optional: anything missing (a compiler, Python or NumPy headers, a working build)
gives None and a status that says why.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import re
import sys
import sysconfig
import time

import numpy as np

from ..native import generated_headers
from . import disk_cache
from .cache_trust import UnsafeCacheError
from .clock_mode import clock_header
from .toolchain import NoCompiler, compiler, cpu_identity, run_compiler

# CPython extension flags. No -march=native: nothing here vectorises, and -O2 compiles
# faster than -O3 (and runs as fast). -fno-strict-aliasing as for any CPython extension:
# Tensor slots are read through casts to PyObject **.
FLAGS = ("-O2", "-std=gnu11", "-fPIC", "-shared", "-fno-strict-aliasing",
         "-DNPY_TARGET_VERSION=NPY_2_0_API_VERSION")


HEADERS = os.path.dirname(os.path.abspath(__file__))
_LOCAL_INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


class _BuildFailed(Exception):
    pass


def python_abi() -> str:
    """What a compiled extension depends on besides its source and compiler."""
    return " ".join([sys.implementation.cache_tag or sys.implementation.name, sys.version,
                     sysconfig.get_config_var("EXT_SUFFIX") or "",
                     getattr(sys, "abiflags", ""), f"numpy {np.__version__}"])


def _with_local_headers(source: str, folders: tuple, generated: dict,
                        seen: set | None = None) -> str:
    """``#include "x.h"`` lines replaced by the text of x.h, taken from ``generated`` (the
    headers the build makes: native.generated_headers) or else from the first of
    ``folders`` that has it, recursively and once each (as an include guard would): the
    source is compiled from the cache folder, and its cache key must change with its
    headers."""
    seen = set() if seen is None else seen
    lines = []
    for line in source.splitlines():
        included = _LOCAL_INCLUDE.match(line)
        if included:
            name = included.group(1)
            if name in generated:
                if name not in seen:
                    seen.add(name)
                    lines.append(_with_local_headers(generated[name], folders, generated,
                                                     seen))
                continue
            header = next((os.path.join(folder, name) for folder in folders
                           if os.path.exists(os.path.join(folder, name))), None)
            if header is not None:
                if header not in seen:
                    seen.add(header)
                    with open(header, encoding="utf-8") as f:
                        lines.append(_with_local_headers(f.read(), folders, generated, seen))
                continue
        lines.append(line)
    return "\n".join(lines) + "\n"


def build_extension(name: str, source_path: str, stem: str) -> tuple:
    """``(module, status)``: the extension ``name`` built from ``source_path`` (cached as
    ``<stem>-<key>``), or ``(None, status)``; ``status`` is ``{"ok", "reason",
    "machine_lacks", "path", "cache_hit", "compile_ns"}``. ``machine_lacks`` names what a
    build needs and this machine does not have (a C compiler, headers, a usable cache
    folder), so that a caller or a test tells it from a build that failed ("")."""
    status = {"ok": False, "reason": "", "machine_lacks": "", "path": "", "cache_hit": False,
              "compile_ns": 0}
    try:
        # Not get_toolchain(): its probe compiles a test kernel (~50 ms at every recording
        # start), and an extension uses its own FLAGS, not the kernels'.
        command, version = compiler()
    except NoCompiler as exc:
        status["reason"] = f"no C compiler: {exc}"
        status["machine_lacks"] = "a C compiler"
        return None, status
    py_include = sysconfig.get_paths().get("include") or ""
    np_include = np.get_include()
    if not os.path.exists(os.path.join(py_include, "Python.h")):
        status["reason"] = f"no Python headers (Python.h not in {py_include!r})"
        status["machine_lacks"] = "Python's headers"
        return None, status
    if not os.path.exists(os.path.join(np_include, "numpy", "arrayobject.h")):
        status["reason"] = f"no NumPy headers in {np_include!r}"
        status["machine_lacks"] = "NumPy's headers"
        return None, status
    with open(source_path, encoding="utf-8") as f:
        # The kernel clock (em_clock.h) is codegen's: generated programs include it too.
        source = _with_local_headers(f.read(), (os.path.dirname(source_path), HEADERS),
                                     {**generated_headers(), "em_clock.h": clock_header()})
    flags = (*FLAGS, f"-I{py_include}", f"-I{np_include}")
    identity = "\n".join([" ".join(command), version, " ".join(flags),
                          cpu_identity(), python_abi()])
    key = disk_cache.library_key(source, identity)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    try:
        path = disk_cache.library_path(f"{stem}-{key}", suffix, folder="extensions")
    except UnsafeCacheError as exc:  # the extension is optional: say why and go without
        status["reason"] = str(exc)
        status["machine_lacks"] = "a cache folder it may trust"
        return None, status
    status["path"] = path
    t0 = time.perf_counter_ns()

    def build(output: str) -> None:
        tmp_src = disk_cache.temporary_path(path[:-len(suffix)] + ".c")
        try:
            with open(tmp_src, "w", encoding="utf-8") as f:
                f.write(source)
            ok, message = run_compiler(command, flags, tmp_src, output)
            if not ok:
                raise _BuildFailed(f"{command[0]} failed: {message}")
        finally:
            os.unlink(tmp_src)

    try:
        # Loaded only after the owner, mode and content-hash checks (cache_trust.py).
        status["cache_hit"] = disk_cache.reuse_or_build(path, build)
    except (_BuildFailed, OSError) as exc:  # OSError: the cache folder cannot be written
        status["reason"] = str(exc)
        if not isinstance(exc, _BuildFailed):
            status["machine_lacks"] = "a writable cache folder"
        return None, status
    status["compile_ns"] = time.perf_counter_ns() - t0
    try:
        loader = importlib.machinery.ExtensionFileLoader(name, path)
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except (ImportError, OSError) as exc:
        status["reason"] = f"could not load {path}: {exc}"
        return None, status
    status["ok"], status["reason"] = True, "cached" if status["cache_hit"] else "compiled"
    return module, status
