"""NumPy's OpenBLAS can run its parallel jobs on execmode's OpenMP team, so that the BLAS
and the kernels share one set of worker threads. Opt-in: ``EXECMODE_BLAS_CALLBACK=1``
(or :func:`use_team` in a process).

**Why one might.** Kernels and BLAS calls take turns on the calling thread, but after a
call OpenBLAS's idle workers keep spinning (~2^28 cycles, ``OPENBLAS_THREAD_TIMEOUT``,
read only when NumPy loads OpenBLAS) while the next kernel's OpenMP team wants the same
cores: a matmul followed by a threaded kernel is slower on OpenBLAS's own threads, and a
jitted step that alternates the two more so on a busy machine (docs/performance.md).
OpenBLAS 0.3.28 and later take a callback that runs their jobs instead of their own
threads (``openblas_set_threads_callback_function``); this module builds one
(``blas_workers.c``) that runs them on the team execmode's kernels use.

**Why it is not the default.** That team's workers sleep between regions
(``OMP_WAIT_POLICY=PASSIVE``, threads.py), so every BLAS call wakes one: back-to-back
eager matmuls and a jitted MLP step with small threaded BLAS calls were slower by the
median, and on a busy machine a woken worker waits a scheduler slice for a core, so
rounds stalled where OpenBLAS's spinning workers did not (benchmarks/bench_blas_handoff.py,
docs/performance.md). Reading the settings never installs it (threads.py).

**Installed** by threads.py when execmode first gives the BLAS its count (the first
kernel library or ``set_num_threads``) if the variable asks for it, or at
``use_team(True)``; never at ``import execmode``. The C source is compiled on first use
(~0.1 s) with the kernels' compiler and ``-fopenmp`` (so it shares their OpenMP runtime),
cached in the kernel cache's ``extensions`` folder and loaded after the cache's trust
checks (cache_trust.py).

**When it is not used** (``thread_settings()["blas_workers"]`` says which and why):
``EXECMODE_BLAS_CALLBACK`` unset or 0; no OpenBLAS, or one without the
callback; an OpenMP build of OpenBLAS (its callback's thread numbers mean something
else); a version outside 0.3.28-0.3.31, whose source (driver/others/blas_server.c,
level3_thread.c, getrf_parallel.c) this was checked against, because the callback hands
out OpenBLAS's internal slot numbers; no C compiler with OpenMP; ``OMP_DYNAMIC`` or an
``OMP_THREAD_LIMIT`` below the count (OpenBLAS's jobs need their whole team at once); a
thread count too large for OpenBLAS's slots (blas_workers.c, rule 2: job slots are taken
from the top so they never meet OpenBLAS's own workers, which stay alive and still run LU
factorisations); a forked child after threads ran (GNU OpenMP's workers do not survive
``fork``).

**What "set before other OpenBLAS calls" really requires.** OpenBLAS's comment asks for
the callback before any other call; its code reads the pointer afresh in every
``exec_blas``, so what matters is only that a call already under way on OpenBLAS's own
workers and a job set on the callback never share a slot (``thread_status[]`` and the
packing buffers). Taking slots from the top guarantees that at any moment, so installing
(and :func:`use_team` switching) while another thread is inside OpenBLAS is safe.

**Same bits.** The jobs, how a product is cut into them and the code each runs depend on
OpenBLAS's thread count only, not on which threads run them: results are bit-identical to
OpenBLAS's own threads at the same count (tests/codegen/test_threads.py).
"""

from __future__ import annotations

import ctypes
import os
import re

from ..native import source_path
from . import disk_cache
from .cache_trust import UnsafeCacheError

ENV = "EXECMODE_BLAS_CALLBACK"
SOURCE = source_path("blas_workers.c")
FLAGS = ("-O2", "-std=gnu11", "-fPIC", "-shared", "-pthread", "-fopenmp")
TEAM = "execmode's OpenMP team"
# The team is opt-in: with it, back-to-back BLAS calls each wake a sleeping worker, which
# made eager matmuls and a jitted MLP step slower and, on a busy machine, stall for a
# scheduler slice (docs/performance.md, benchmarks/bench_blas_handoff.py).
DEFAULT = False
_ON = ("1", "on", "yes", "true")
_OFF = ("0", "off", "no", "false")
OFF_BY_DEFAULT = f"the default; {ENV}=1 runs them on execmode's OpenMP team"
NOT_YET = "until execmode's first compiled kernel or set_num_threads"
SWITCHED_OFF = f"switched off by use_team(False); {ENV}=0 does it for a process"
NOT_OPENBLAS = "not OpenBLAS"
FORKED = "a forked process: execmode's OpenMP workers do not survive fork once they ran"
# The OpenBLAS releases whose threading code the callback's slot rule was read in: 0.3.28
# (source) to 0.3.31 (NumPy 2.4's scipy-openblas: exec_blas, exec_threads and the slot
# arrays' sizes checked in the binary).
CHECKED_VERSIONS = ((0, 3, 28), (0, 3, 31))
# (setter, configuration string) by build: NumPy 2's wheels (scipy-openblas64, then
# scipy-openblas32), then plain OpenBLAS (ILP64, LP64).
FUNCTIONS = (
    ("scipy_openblas_set_threads_callback_function64_", "scipy_openblas_get_config64_"),
    ("scipy_openblas_set_threads_callback_function", "scipy_openblas_get_config"),
    ("openblas_set_threads_callback_function64_", "openblas_get_config64_"),
    ("openblas_set_threads_callback_function", "openblas_get_config"),
)


class _State:
    lib = None              # the loaded callback library (ctypes), once built
    openblas = None         # (setter address, &blas_num_threads, slots)
    tried = False           # one build attempt per process
    wanted = False          # execmode chose the team (it may be off for a reason below)
    switched_off = False    # use_team(False): follow() leaves it off
    declined = False        # not built because EXECMODE_BLAS_CALLBACK did not ask for it
    pool_unusable = False   # a child forked after a team ran: never the team here
    reason = NOT_YET        # why OpenBLAS's own threads run its jobs


def enabled() -> bool:
    """Whether ``EXECMODE_BLAS_CALLBACK`` asks for the team (:data:`DEFAULT` when unset).
    Raises ``ValueError`` naming the variable for a value that is neither on nor off: a
    typo must not silently measure the other workers."""
    raw = os.environ.get(ENV, "")
    value = raw.strip().lower()
    if not value:
        return DEFAULT
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise ValueError(f"{ENV}={raw!r}: expected 1 (OpenBLAS's parallel jobs on execmode's "
                     f"OpenMP team) or 0 (on OpenBLAS's own threads, the default)")


def _off_reason() -> str:
    """Why OpenBLAS's own threads run its jobs where the variable does not ask for the
    team."""
    if os.environ.get(ENV, "").strip():
        return f"{ENV}={os.environ[ENV].strip()}"
    return OFF_BY_DEFAULT


def own_threads(reason: str) -> str:
    return f"OpenBLAS's own threads ({reason})"


def status() -> str:
    """Who runs OpenBLAS's parallel jobs now: :data:`TEAM`, or "OpenBLAS's own threads
    (why)". Read from the C library, so a fork from C code is seen too. Changes nothing
    (reports call it)."""
    if _State.lib is not None and _State.lib.em_blas_workers_installed():
        return TEAM
    if _State.lib is not None and _State.lib.em_blas_workers_dropped_by_fork():
        return own_threads(FORKED)
    reason = _State.reason
    if not _State.tried:
        reason = NOT_YET if enabled() else _off_reason()
    if reason.startswith(NOT_OPENBLAS):
        return f"the BLAS's own threads ({reason})"
    return own_threads(reason)


def follow(count: int | None, forked: bool = False, before_openmp_loads=None) -> None:
    """Run OpenBLAS's jobs on the team where the rules allow it, for OpenBLAS thread count
    ``count`` (None: not OpenBLAS). threads.py calls this whenever it gives the BLAS a
    count; ``forked``: this is a child forked after threads ran (never the team);
    ``before_openmp_loads()`` runs before the callback library brings the OpenMP runtime
    in (threads.py's choice of a wait policy)."""
    forked = forked or _State.pool_unusable
    if not _State.tried:
        _State.tried = True
        _State.wanted = not forked and _first_install(before_openmp_loads)
        if forked and not _State.wanted:
            _State.reason = FORKED
    if not _State.wanted or _State.lib is None:
        return
    if _State.switched_off:
        if _State.lib.em_blas_workers_installed():
            _uninstall(SWITCHED_OFF)
        return
    if forked:
        _State.pool_unusable = True
        _uninstall(FORKED)
        return
    slots, openblas_threads = _State.openblas[2], _openblas_threads()
    # blas_workers.c, rule 2: the jobs' slots (from the top) and OpenBLAS's workers' slots
    # (from 0; OpenBLAS starts workers up to the count it is given) must not meet.
    limit = _State.lib.em_blas_workers_team_limit()
    if count + max(openblas_threads, count) - 1 > slots:
        _uninstall(f"{count} threads: the jobs and OpenBLAS's own threads would need more "
                   f"than its {slots} slots")
    elif limit < count:
        # OpenBLAS's jobs need a whole team at once; every call would start threads.
        _uninstall("OMP_DYNAMIC is on: OpenMP may give fewer threads than OpenBLAS's jobs "
                   "need at once" if limit == 0 else
                   f"OMP_THREAD_LIMIT={limit}: fewer threads than OpenBLAS's {count} jobs "
                   f"need at once")
    elif not _State.lib.em_blas_workers_installed():
        _install()


def use_team(on: bool) -> None:
    """Run OpenBLAS's jobs on the team (``True``) or on OpenBLAS's own threads, for this
    process from now on: the in-process form of ``EXECMODE_BLAS_CALLBACK`` (tests,
    benchmarks that compare the two). Safe at any time (the two never share a slot). ``True``
    builds the callback if the variable left it unbuilt, and is a no-op where a rule
    rules the team out (:func:`status` says which); off stays off (later thread counts
    included) until ``use_team(True)``."""
    if on:
        _State.switched_off = False
        from .openmp_policy import prefer_passive_openmp

        # pool_unusable: forked after a team ran (threads.py's fork hook tells us), where
        # libgomp's pool cannot be used.
        if not _State.wanted and (_State.declined or not _State.tried) \
                and not _State.pool_unusable:
            _State.tried, _State.declined = True, False
            _State.wanted = _first_install(prefer_passive_openmp, asked=True)
        elif not _State.wanted and _State.pool_unusable:
            _State.tried, _State.reason = True, FORKED
        if _State.wanted and _State.lib is not None:
            from . import blas

            follow(blas.thread_control().get())  # the slot rule and the fork rule hold
        return
    _State.switched_off = True
    if _State.lib is not None and _State.wanted:
        _uninstall(SWITCHED_OFF)


def using_team() -> bool:
    """True while OpenBLAS's jobs run on the team (tests restore what they found)."""
    return status() == TEAM


def team_ran() -> bool:
    """True once a job set ran on a team of 2+ threads (threads.py's fork guard)."""
    return bool(_State.lib is not None and _State.lib.em_blas_workers_team_ran())


def after_fork_in_child(pool_unusable: bool) -> None:
    """The C child handler gave OpenBLAS its own threads back; hand the jobs to the team
    again where no team ever ran before the fork (libgomp starts afresh there)."""
    lib = _State.lib
    _State.pool_unusable = _State.pool_unusable or pool_unusable
    if lib is not None and lib.em_blas_workers_dropped_by_fork() and not pool_unusable \
            and not _State.switched_off:
        _install()


def slots() -> int | None:
    """OpenBLAS's slots for per-thread state (its MAX_CPU_NUMBER), once found."""
    return None if _State.openblas is None else _State.openblas[2]


def calls() -> tuple[int, int]:
    """(job sets run on the team, job sets run on threads started for them): for tests."""
    if _State.lib is None:
        return 0, 0
    return int(_State.lib.em_blas_workers_calls(0)), int(_State.lib.em_blas_workers_calls(1))


def force_new_threads(on: bool) -> None:
    """Tests: run every job set on threads started for it (the fallback path)."""
    if _State.lib is not None:
        _State.lib.em_blas_workers_force_new_threads(int(bool(on)))


# --- installing -----------------------------------------------------------------------

def _install() -> None:
    setter, threads_address, slots = _State.openblas
    if _State.lib.em_blas_workers_install(setter, threads_address, slots) != 0:
        _State.reason = "pthread_atfork failed: a forked child could hang"
        return
    _State.reason = ""


def _uninstall(reason: str) -> None:
    _State.lib.em_blas_workers_uninstall()
    _State.reason = reason


def _openblas_threads() -> int:
    return ctypes.c_int.from_address(_State.openblas[1]).value


def _first_install(before_openmp_loads, asked: bool = False) -> bool:
    """Find OpenBLAS's callback, build and load the C callback, install it. False (and
    ``_State.reason``) where any rule says no. ``asked``: use_team(True) asked for the
    team, whatever the variable says."""
    if not asked and not enabled():
        _State.reason = _off_reason()
        _State.declined = True
        return False
    found = _find_openblas()
    if isinstance(found, str):
        _State.reason = found
        return False
    lib = _build(before_openmp_loads)
    if isinstance(lib, str):
        _State.reason = lib
        return False
    _State.lib, _State.openblas = lib, found
    _install()
    return True


def _find_openblas():
    """(setter address, &blas_num_threads, slots) of NumPy's OpenBLAS, or why not."""
    from . import blas

    control = blas.thread_control()
    if control is None:
        return f"{NOT_OPENBLAS}: {blas.thread_control_reason()}"
    lib = ctypes.CDLL(control.path)  # already loaded: the same handle NumPy uses
    for set_name, config_name in FUNCTIONS:
        setter, config = getattr(lib, set_name, None), getattr(lib, config_name, None)
        if setter is not None and config is not None:
            break
    else:
        return (f"{os.path.basename(control.path)} has no openblas_set_threads_callback_"
                f"function (OpenBLAS 0.3.28 or later)")
    config.argtypes, config.restype = [], ctypes.c_char_p
    text = (config() or b"").decode("ascii", "replace")
    version = re.search(r"OpenBLAS (\d+)\.(\d+)\.(\d+)", text)
    slots = re.search(r"MAX_THREADS=(\d+)", text)
    if version is None or slots is None:
        return f"its configuration {text!r} does not say its version and slots"
    version = tuple(int(v) for v in version.groups())
    low, high = CHECKED_VERSIONS
    if not low <= version <= high:
        return (f"OpenBLAS {'.'.join(map(str, version))}: the callback was checked for "
                f"{'.'.join(map(str, low))}-{'.'.join(map(str, high))} only")
    if "USE_OPENMP" in text.split():
        return "an OpenMP build of OpenBLAS (it runs its own OpenMP team)"
    try:
        threads_address = ctypes.addressof(ctypes.c_int.in_dll(lib, "blas_num_threads"))
    except ValueError:
        return "OpenBLAS does not export blas_num_threads (its workers' slots)"
    return ctypes.cast(setter, ctypes.c_void_p).value, threads_address, int(slots.group(1))


def _build(before_openmp_loads):
    """The loaded callback library, or why not. Built with the kernels' compiler and
    ``-fopenmp``, so it links the same OpenMP runtime as they do; not with the kernels'
    probed flags, whose probe compiles a test kernel (~0.1 s) that a process which only
    asks for its thread settings need not pay."""
    from .toolchain import NoCompiler, compiler, run_compiler

    try:
        command, version = compiler()
    except NoCompiler as exc:
        return f"no C compiler: {exc}"
    with open(SOURCE, encoding="utf-8") as f:
        source = f.read()
    key = disk_cache.library_key(source, "\n".join([" ".join(command), version,
                                                    " ".join(FLAGS)]))
    try:
        path = disk_cache.library_path(f"blas_workers-{key}", ".so", folder="extensions")
    except UnsafeCacheError as exc:
        return str(exc)

    def build(output: str) -> None:
        tmp_src = disk_cache.temporary_path(path[:-3] + ".c")
        try:
            with open(tmp_src, "w", encoding="utf-8") as f:
                f.write(source)
            ok, message = run_compiler(command, FLAGS, tmp_src, output)
            if not ok:
                raise OSError(f"{command[0]} could not build blas_workers.c with OpenMP: "
                              f"{message}")
        finally:
            os.unlink(tmp_src)

    try:
        disk_cache.reuse_or_build(path, build)
        if before_openmp_loads is not None:
            before_openmp_loads()
        lib = ctypes.CDLL(path)
    except (OSError, UnsafeCacheError) as exc:
        return str(exc)
    lib.em_blas_workers_install.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    lib.em_blas_workers_install.restype = ctypes.c_int
    lib.em_blas_workers_uninstall.argtypes, lib.em_blas_workers_uninstall.restype = [], None
    for name in ("installed", "dropped_by_fork", "team_ran", "team_limit"):
        fn = getattr(lib, f"em_blas_workers_{name}")
        fn.argtypes, fn.restype = [], ctypes.c_int
    lib.em_blas_workers_force_new_threads.argtypes = [ctypes.c_int]
    lib.em_blas_workers_force_new_threads.restype = None
    lib.em_blas_workers_calls.argtypes, lib.em_blas_workers_calls.restype = \
        [ctypes.c_int], ctypes.c_long
    return lib
