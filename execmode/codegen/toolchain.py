"""The system C compiler: which one, with which flags, and whether it works.

``CC`` wins when set (a missing program means no compiler: graph mode then interprets its
kernels over NumPy and says so); otherwise the first of cc, gcc, clang on PATH.

Flags, and why each is there:

* ``-O3 -march=native``: vector code for this CPU (the disk cache key includes the CPU);
* ``-fno-math-errno``: sqrt/floor/rint/fabs become vector instructions (errno is never read);
* ``-fno-trapping-math``: no kernel reads the FP exception flags and Python never enables
  FP traps. Without it GCC refuses to if-convert any select whose arm holds an operation
  that could raise a flag (it even sinks float -> double conversions into arms itself),
  so loops over our branch-free helpers stop vectorising. It has one value-changing
  consequence that tests found: GCC rewrites ``(double)(int)x`` as ``trunc(x)``, which
  keeps -0.0 where NumPy's round trip gives +0.0. The renderers therefore print every
  int -> float conversion as ``(T)i + 0.0`` (the addition maps -0.0 to +0.0 and may not be
  dropped while signed zeros are honoured), see ``CRenderer.convert``;
* ``-fwrapv``: signed integer overflow wraps, as NumPy's integer arithmetic does;
* ``-ffp-contract=off``: ``a - b * c`` stays two roundings, as NumPy computes it. GCC's
  default in gnu mode fuses it into one FMA, whose exact product does not overflow:
  ``x - exp(x)`` at x = inf gave inf (exp's last multiply overflowing inside the FMA)
  where NumPy gives nan (fuzz seed 1795551149), and results differed in the last bit;
* ``-fopenmp`` (else ``-fopenmp-simd``): parallel loops and ``omp simd`` hints;
* for a translation unit of ``LARGE_UNIT_BYTES`` or more, also ``-fno-tree-pta`` where the
  compiler takes it (GCC): a 5000-op chain (500 KB of C) spent a third of GCC's 2.4 s in
  points-to analysis, which our kernels do not need (restrict pointers, ``omp simd``
  loops); without it, 1.6 s and the same vector code at the same speed (docs/kernels.md);
* for a unit of long kernels (``LONG_KERNEL_BYTES`` of C per kernel or more, ~64 ops),
  also ``--param=vect-epilogues-nomask=0`` where the compiler takes it (GCC): GCC
  otherwise compiles each long loop body a third time, as an 8-lane loop for the
  remainder after the 16-lane one; without it the remainder (at most 15 elements of a
  loop that does hundreds of ops per element) runs scalar, and gcc's time on a 5000-op
  chain fell by a third (docs/performance.md, "First calls").

Never ``-ffast-math``, ``-ffinite-math-only`` or ``-fno-signed-zeros``: they assume NaN,
Inf and -0.0 away, and the debugger exists to find them.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from functools import cache

from . import toolchain_record
from .compiler_slots import compiler_slot, in_background

BASE_FLAGS = ("-O3", "-std=gnu11", "-fPIC", "-shared", "-fno-math-errno",
              "-fno-trapping-math", "-fwrapv", "-ffp-contract=off", "-Wno-unknown-pragmas")
LARGE_UNIT_BYTES = 256 * 1024
LARGE_UNIT_FLAGS = ("-fno-tree-pta",)
LONG_KERNEL_BYTES = 8 * 1024
LONG_KERNEL_FLAGS = ("--param=vect-epilogues-nomask=0",)
CANDIDATES = ("cc", "gcc", "clang")

# One probe at a time: a probe started early (start_probe) and a thread asking for the
# toolchain meanwhile share one probe, never two of the same compiler.
_PROBING = threading.RLock()


class _Early:
    running = False   # a probe started early has not finished
    failed = False    # one failed: the next probes run where they are asked for


def _after_fork_in_child() -> None:
    global _PROBING
    # A parent's probe thread (holding the lock) does not exist in the child.
    _PROBING = threading.RLock()
    _Early.running = False


os.register_at_fork(after_in_child=_after_fork_in_child)


@dataclass(frozen=True)
class Toolchain:
    """A working compiler and the flags that it accepted."""

    command: tuple            # the compiler and any arguments CC carried
    version: str
    flags: tuple
    openmp: bool
    native: bool
    notes: tuple = field(default=(), compare=False)

    @property
    def identity(self) -> str:
        """What a compiled library depends on besides its source (the cache key)."""
        return "\n".join([" ".join(self.command), self.version, " ".join(self.flags),
                          cpu_identity()])

    def flags_for(self, source: str, long_kernels: bool = False) -> tuple:
        """The flags for one translation unit: a large one compiles with fewer analyses,
        one of long kernels without vectorised remainder loops, where the compiler takes
        the flags (asked at the first one, and remembered)."""
        flags = self.flags
        with _PROBING:
            if len(source) >= LARGE_UNIT_BYTES and _takes(self.command, self.flags,
                                                          LARGE_UNIT_FLAGS):
                flags += LARGE_UNIT_FLAGS
            if long_kernels and _takes(self.command, self.flags, LONG_KERNEL_FLAGS):
                flags += LONG_KERNEL_FLAGS
        return flags

    def identity_for(self, source: str, long_kernels: bool = False) -> str:
        """``identity`` with any flags only ``source``'s unit gets."""
        extra = self.flags_for(source, long_kernels)[len(self.flags):]
        return self.identity + ("\n" + " ".join(extra) if extra else "")

    def describe(self) -> str:
        extras = [f for f in ("-march=native" if self.native else "",
                              "OpenMP" if self.openmp else "no OpenMP") if f]
        return f"{self.version} ({', '.join(extras)})"


class NoCompiler(Exception):
    """No working C compiler; the message says why."""


def find_compiler() -> tuple:
    """The compiler command (honouring CC), or raise NoCompiler with the reason."""
    cc = os.environ.get("CC", "").strip()
    if cc:
        parts = shlex.split(cc)
        path = shutil.which(parts[0])
        if path is None:
            raise NoCompiler(f"CC={cc!r} is not a program on PATH")
        return (path, *parts[1:])
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return (path,)
    raise NoCompiler("no C compiler found (CC is unset and none of cc, gcc, clang is on PATH)")


def get_toolchain() -> Toolchain:
    """The toolchain for the current CC: probed once per compiler and machine, and
    remembered on disk (toolchain_record.py). While a probe started early
    (:func:`start_probe`) runs, this waits for it and takes its answer."""
    with _PROBING:
        return _probe(os.environ.get("CC", "").strip())


def remembered_toolchain() -> Toolchain | None:
    """The toolchain for the current CC where a probe found it before (in this process, or
    on this machine, remembered on disk), without probing: None where none did, or there
    is no compiler. For what must not compile anything (a small call looking for a library
    built before: native_library.load_library(build=False))."""
    cc_env = os.environ.get("CC", "").strip()
    try:
        command = find_compiler()
    except NoCompiler:
        return None
    return _recorded(cc_env, command)


def start_probe() -> None:
    """Probe the current CC on a background thread unless a probe ran or runs (em.jit
    asks as a segment starts compiling: jit_driver/compiled_segment.py). A probe that
    fails there is not reported there: the get_toolchain() that needs the answer probes
    again and raises NoCompiler itself, as it does after any failed probe; no probe
    starts early after that."""
    with _PROBING:
        if _Early.running or _Early.failed or _probe.cache_info().currsize:
            return
        _Early.running = True
    cc_env = os.environ.get("CC", "").strip()

    def probe() -> None:
        try:
            with _PROBING:
                _probe(cc_env)
        except NoCompiler:
            _Early.failed = True
        finally:
            _Early.running = False

    in_background(probe, "probe")


def compiler() -> tuple:
    """``(command, version line)`` of the current CC, without the kernel flags' probe
    (which compiles a test kernel): enough to build and key a CPython extension."""
    with _PROBING:
        return _compiler(os.environ.get("CC", "").strip())


@cache
def _compiler(cc_env: str) -> tuple:
    command = find_compiler()
    remembered = _remembered(cc_env, command)
    return command, remembered["version"] if remembered else _version(command)


@cache
def _probe(cc_env: str) -> Toolchain:
    command = find_compiler()
    recorded = _recorded(cc_env, command)
    if recorded is not None:
        return recorded
    toolchain = _probe_flags(cc_env)
    _remember(cc_env, toolchain, {})
    return toolchain


def _probe_flags(cc_env: str) -> Toolchain:
    command, version = _compiler(cc_env)
    notes = []
    # Try the best flag set first, then drop what this compiler or machine refuses.
    attempts = [(True, True), (False, True), (True, False), (False, False)]
    for native, openmp in attempts:
        flags = list(BASE_FLAGS)
        if native and _machine_supports_native():
            flags.append("-march=native")
        elif native:
            continue
        flags.append("-fopenmp" if openmp else "-fopenmp-simd")
        ok, message = try_compile(command, tuple(flags))
        if ok:
            return Toolchain(command, version, tuple(flags), openmp, native, tuple(notes))
        notes.append(f"flags {' '.join(flags[len(BASE_FLAGS):])} refused: {message}")
        if not openmp:
            # Some compilers lack -fopenmp-simd too: try without it.
            flags.pop()
            ok, message = try_compile(command, tuple(flags))
            if ok:
                return Toolchain(command, version, tuple(flags), False, native, tuple(notes))
    raise NoCompiler(f"{command[0]} could not build a test kernel: {notes[-1] if notes else ''}")


_PROBE_SOURCE = """
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
void probe(const float *restrict x, float *restrict y, long n) {
    #pragma omp parallel for simd
    for (long i = 0; i < n; ++i) y[i] = sqrtf(x[i]);
}
"""


@cache
def _takes(command, flags, extra) -> bool:
    """Whether ``command`` builds the probe with ``flags + extra`` without a word (clang
    only warns of a GCC optimisation flag)."""
    cc_env = os.environ.get("CC", "").strip()
    toolchain = _probe(cc_env)
    remembered = _remembered(cc_env, command) or {}
    asked = " ".join(extra)
    if toolchain.command == command and toolchain.flags == flags and \
            asked in remembered.get("takes", {}):
        return remembered["takes"][asked]
    takes = try_compile(command, flags + extra, warnings_fail=True)[0]
    if toolchain.command == command and toolchain.flags == flags:
        _remember(cc_env, toolchain, {**remembered.get("takes", {}), asked: takes})
    return takes


# What a remembered probe depends on besides the compiler's files and the CPU.
_ATTEMPTS = hashlib.sha256((" ".join(BASE_FLAGS) + _PROBE_SOURCE).encode()).hexdigest()


def _recorded(cc_env: str, command: tuple) -> Toolchain | None:
    """The toolchain a probe of ``command`` found before, remembered on disk, or None."""
    remembered = _remembered(cc_env, command)
    if not remembered:
        return None
    return Toolchain(command, remembered["version"], tuple(remembered["flags"]),
                     remembered["openmp"], remembered["native"], tuple(remembered["notes"]))


def _remembered(cc_env: str, command: tuple) -> dict | None:
    record_key = toolchain_record.key(cc_env, command, _ATTEMPTS, cpu_identity())
    return toolchain_record.load(record_key) if record_key else None


def _remember(cc_env: str, toolchain: Toolchain, takes: dict) -> None:
    record_key = toolchain_record.key(cc_env, toolchain.command, _ATTEMPTS,
                                          cpu_identity())
    if record_key:
        toolchain_record.store(record_key, {
            "version": toolchain.version, "flags": list(toolchain.flags),
            "openmp": toolchain.openmp, "native": toolchain.native,
            "notes": list(toolchain.notes), "takes": takes})


def try_compile(command, flags, warnings_fail: bool = False) -> tuple:
    """(True, any warnings) if ``command`` builds and links a tiny OpenMP-style kernel with
    ``flags``, else (False, why); ``warnings_fail``: a warning is a failure too (clang only
    warns of a GCC flag)."""
    with tempfile.TemporaryDirectory(prefix="execmode-probe-") as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write(_PROBE_SOURCE)
        ok, message = run_compiler(command, flags, src, os.path.join(tmp, "probe.so"))
        if ok and warnings_fail and message.strip():
            return False, message
        if ok and "-fopenmp" in flags:
            ok, message = _loads(os.path.join(tmp, "probe.so"))
        return ok, message


def run_compiler(command, flags, source: str, output: str) -> tuple:
    """(ok, the compiler's messages: the error, or on success any warnings). Runs when a
    compiler slot is free: never more compilers at once than the thread count
    (compiler_slots.py)."""
    args = [*command, *flags, "-o", output, source, "-lm"]
    try:
        with compiler_slot():
            proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    if proc.returncode != 0:
        return False, (proc.stderr or proc.stdout).strip()[-2000:]
    return True, proc.stderr.strip()[-2000:]


def _loads(path: str) -> tuple:
    import ctypes

    from .openmp_policy import prefer_passive_openmp

    # The probe brings the OpenMP runtime in, which reads its wait policy once, now.
    prefer_passive_openmp()
    try:
        ctypes.CDLL(path)
    except OSError as exc:  # e.g. the OpenMP runtime library is missing
        return False, str(exc)
    return True, ""


def _version(command) -> str:
    try:
        proc = subprocess.run([*command, "--version"], capture_output=True, text=True,
                              timeout=30)
        lines = (proc.stdout or proc.stderr).strip().splitlines()
        return lines[0] if lines else "unknown version"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown version"


def _machine_supports_native() -> bool:
    # -march=native means nothing when cross-compiling or on some ARM compilers; the
    # compile attempt decides, this only skips the obviously pointless try.
    return platform.machine().lower() in ("x86_64", "amd64", "aarch64", "arm64", "ppc64le")


@cache
def cpu_identity() -> str:
    """The CPU model and feature flags (-march=native code only runs on the same kind)."""
    text = platform.machine() + " " + platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            wanted = {}
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "flags", "Features", "CPU part") and key not in wanted:
                    wanted[key] = value.strip()
            text += " " + " ".join(f"{k}={v}" for k, v in sorted(wanted.items()))
    except OSError:
        pass
    return hashlib.sha256(text.encode()).hexdigest()[:16]
