"""execmode's thread count: compiled kernels and NumPy's BLAS, and what a fork does.

**How many.** One count for the process, chosen by the first of: ``set_num_threads(n)``;
``EXECMODE_NUM_THREADS``; ``OMP_NUM_THREADS`` (its first number, as OpenMP reads "4,2");
the default, the CPUs this process may run on (``os.sched_getaffinity``) but never more
than the physical cores among them (a second hyperthread of a core adds little to
memory-bound kernels and makes busy-waiting BLAS threads fight over the core). A bad value
raises ``ValueError`` naming the variable: a typo must not silently run a job or a
benchmark on another count than asked.

**Kernels.** Large kernels run their outermost loop with OpenMP (``#pragma omp parallel
for``, see render_c.py); every kernel library holds its own count, ``em_num_threads``, set
here when it loads and again by every ``set_num_threads``. The count never changes a
result: how work is cut into pieces is fixed by the kernel's sizes alone (a big full
reduction is always 64 chunks combined in order, lower.py), the count only says how many
threads take the pieces.

**BLAS.** NumPy's OpenBLAS gets the same count when the engine first needs threads (the
first kernel library loaded, the first ``set_num_threads``), not at ``import execmode``
and never by reading: :func:`thread_settings` (reports, ``em.compare``, every recording)
changes nothing, so a measured script runs as it runs unmeasured, and a kernel library
loaded inside :func:`blas_left_alone` (execmode's own calibration) leaves the BLAS too.
Kernels and BLAS calls run one after the other on the caller's thread (a program's matmul
is a call from C, plan.py's is NumPy's), so equal counts never put two full teams to work
at once. What still overlaps: after a call OpenBLAS's idle workers spin for a while
(~2^28 cycles, ~0.1 s; ``OPENBLAS_THREAD_TIMEOUT`` when NumPy loads) and a threaded
kernel started meanwhile waits for the core they hold. OpenBLAS's jobs can run on the
kernels' own OpenMP team instead (blas_workers.py), but only when asked
(``EXECMODE_BLAS_CALLBACK=1``): its workers sleep between regions, so every BLAS call
must wake one, which made back-to-back matmuls slower and, on a busy machine, stall
(docs/performance.md). ``thread_settings()["blas_workers"]`` says which threads run them
and why. Where the user set OpenBLAS's own variables (``OPENBLAS_NUM_THREADS``,
``GOTO_NUM_THREADS``, ``OMP_NUM_THREADS``, read by OpenBLAS when NumPy loads it) execmode
leaves the BLAS as they set it, and :func:`thread_settings` says so; an explicit
``set_num_threads(n)`` sets both.

**Fork.** GNU libgomp keeps its worker threads in a pool. ``fork()`` copies the pool's
bookkeeping into the child but not the threads, so the child's next parallel region waits
forever for workers that do not exist (measured: a multiprocessing-style ``os.fork`` after
one threaded kernel hung the child's first kernel call). libgomp has no fork handler and
no way to drop its pool. So every library records whether it ever started a team of more
than one thread (``em_threads_used``; OpenBLAS's jobs on the team count too), and a child
forked after that happened runs every kernel single-threaded, libraries it loads later
included (a team of one never touches the pool), and OpenBLAS's jobs on OpenBLAS's own
threads (blas_workers.c's fork handler, which sees forks from C code too). Results are
the same bits; only the speed differs. A child forked before any team ran keeps its
threads (libgomp starts a fresh pool there) and, where the team ran OpenBLAS's jobs,
hands them to the team again.
Processes started with exec (``subprocess``, the debugger's script runs,
multiprocessing's "spawn") start fresh and are not affected. The kernels' guard is hooked
with ``os.register_at_fork``: a fork from C code that bypasses Python's ``os.fork`` is not
seen by it. (OpenBLAS restarts its own threads in a forked child.)
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import operator
import os
import re

from . import compiler_slots

ENV = "EXECMODE_NUM_THREADS"
OPENMP_ENV = "OMP_NUM_THREADS"
# The variables OpenBLAS reads for its own count when it loads, the first one set wins
# (openblas_env.c, blas_get_cpu_number); a value that is not a positive number is unset
# to OpenBLAS.
BLAS_ENVS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
SET_BY_CALL = "set_num_threads()"
BLAS_FOLLOWS = "execmode's count"
# Before the engine first needs threads (a kernel library loads, set_num_threads), the
# BLAS runs at the count OpenBLAS chose when NumPy loaded it: reading the settings does
# not change it.
BLAS_NOT_YET = "OpenBLAS's own count until execmode's first compiled kernel"


class _State:
    libraries: list = []       # the ctypes handles of loaded OpenMP kernel libraries
    leave_blas = 0             # inside blas_left_alone(): libraries loading leave the BLAS
    inherited_pool = False     # forked after threads ran: libgomp's pool is unusable here
    override: int | None = None  # set_num_threads(): wins over the environment
    hooked = False
    blas_synced = False        # the BLAS was given its count (once the engine needed it)
    blas_source = ""           # who chose the BLAS count (thread_settings' "blas_source")
    blas_at_start: int | None = None  # the BLAS's count before execmode first changed it


# --- the CPUs ---------------------------------------------------------------------------

def _affinity() -> frozenset:
    try:
        return frozenset(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return frozenset(range(os.cpu_count() or 1))


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    return len(_affinity())


def physical_cores() -> int:
    """The distinct physical cores among the usable CPUs (hyperthreads of one core count
    once). Read from /sys (core and package ids), else /proc/cpuinfo; where neither says,
    every usable CPU counts as a core."""
    return _cores_of(_affinity())


@functools.lru_cache(maxsize=8)
def _cores_of(cpus: frozenset) -> int:
    cores = _cores_from_sysfs(cpus) or _cores_from_cpuinfo(cpus)
    return len(cores) if cores else len(cpus)


def _cores_from_sysfs(cpus) -> set | None:
    cores = set()
    for cpu in cpus:
        topology = f"/sys/devices/system/cpu/cpu{cpu}/topology"
        try:
            with open(f"{topology}/physical_package_id") as f:
                package = int(f.read())
            with open(f"{topology}/core_id") as f:
                core = int(f.read())
        except (OSError, ValueError):
            return None  # any CPU unaccounted for: this source cannot answer
        cores.add((package, core))
    return cores


def _cores_from_cpuinfo(cpus) -> set | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            blocks = f.read().split("\n\n")
    except OSError:
        return None
    core_of = {}
    for block in blocks:
        fields = dict(line.split(":", 1) for line in block.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        try:
            core_of[int(fields["processor"])] = (fields["physical id"], fields["core id"])
        except (KeyError, ValueError):
            continue
    if not all(cpu in core_of for cpu in cpus):
        return None
    return {core_of[cpu] for cpu in cpus}


def default_threads() -> int:
    """The count when nothing asks for one: the usable CPUs, at most the physical cores."""
    return max(1, min(usable_cpus(), physical_cores()))


def _default_source() -> str:
    return f"default: {usable_cpus()} usable CPUs, {physical_cores()} physical cores"


# --- the count ----------------------------------------------------------------------------

_POSITIVE = re.compile(r"\s*\+?0*[1-9][0-9]*\s*")


def _count_from_environment(name: str) -> int | None:
    """A positive integer from variable ``name`` (OMP_NUM_THREADS: the first of a list),
    None when unset or blank; ValueError naming the variable for anything else."""
    raw = os.environ.get(name, "")
    if not raw.strip():
        return None
    text = raw.split(",", 1)[0] if name == OPENMP_ENV else raw
    if _POSITIVE.fullmatch(text):
        return int(text)
    what = ("a positive integer or a comma-separated list of them (execmode uses the "
            "first)") if name == OPENMP_ENV else "a positive integer"
    raise ValueError(f"{name}={raw!r}: expected {what}, the number of threads for "
                     f"execmode's compiled kernels and NumPy's BLAS (1: single-threaded); "
                     f"unset, execmode uses {usable_cpus()} usable CPUs, at most "
                     f"{physical_cores()} physical cores")


def _chosen() -> tuple[int, str]:
    """(count, source) by precedence: set_num_threads() > EXECMODE_NUM_THREADS >
    OMP_NUM_THREADS > the default. Sources below the one that answers are not read."""
    if _State.override is not None:
        return _State.override, SET_BY_CALL
    for name in (ENV, OPENMP_ENV):
        count = _count_from_environment(name)
        if count is not None:
            return count, name
    return default_threads(), _default_source()


def requested_threads() -> int:
    """The count the environment asks for: ``EXECMODE_NUM_THREADS``, else
    ``OMP_NUM_THREADS``, else the default (usable CPUs, at most the physical cores).

    Raises ``ValueError`` naming the variable for a value that is not a positive integer.
    """
    for name in (ENV, OPENMP_ENV):
        count = _count_from_environment(name)
        if count is not None:
            return count
    return default_threads()


def num_threads() -> int:
    """The thread count kernel libraries get: 1 in a child forked after threads ran."""
    requested = _chosen()[0]  # validated even where a fork makes it 1
    return 1 if _State.inherited_pool else requested


compiler_slots.count_threads_with(num_threads)  # no more compilers at once than threads


def set_num_threads(n: int | None) -> None:
    """Use ``n`` threads for execmode's compiled kernels and for NumPy's BLAS.

    Applies at once to kernels already compiled and to those compiled later, and wins
    over ``EXECMODE_NUM_THREADS``, ``OMP_NUM_THREADS`` and OpenBLAS's own variables.
    ``None`` goes back to the environment's choice (or the default: the CPUs this process
    may run on, at most the physical cores; the BLAS as you set it, if you did). Results
    never depend on the count, only the speed does. On a machine shared with other work,
    fewer threads than cores is often faster: a thread that waits for a busy core holds up
    the others.
    """
    if n is not None:
        if isinstance(n, bool):
            raise ValueError(f"set_num_threads: expected a positive integer or None, got {n!r}")
        try:
            n = operator.index(n)
        except TypeError:
            raise ValueError(f"set_num_threads: expected a positive integer or None, "
                             f"got {n!r}") from None
        if n < 1:
            raise ValueError(f"set_num_threads: expected a positive integer or None, "
                             f"got {n!r}")
    _State.override = n
    count = num_threads()
    for lib in _State.libraries:
        lib.em_set_num_threads(count)
    _sync_blas()


def get_num_threads() -> int:
    """The number of threads execmode's compiled kernels use now.

    Set by :func:`set_num_threads`, else ``EXECMODE_NUM_THREADS``, else
    ``OMP_NUM_THREADS``, else the CPUs this process may run on (``os.sched_getaffinity``),
    at most the physical cores. 1 in a process forked after threaded kernels ran (GNU
    OpenMP's threads do not survive ``fork``).
    """
    return num_threads()


def forked_after_threads() -> bool:
    """True in a process forked after a kernel started threads (kernels run on one)."""
    return _State.inherited_pool


# --- the BLAS -----------------------------------------------------------------------------

def _blas_variable_set() -> str | None:
    """The OpenBLAS variable the user set (OpenBLAS read it when NumPy loaded it)."""
    for name in BLAS_ENVS:
        digits = re.match(r"\s*\+?([0-9]+)", os.environ.get(name, ""))
        if digits and int(digits.group(1)) > 0:  # OpenBLAS's atoi: "4,2" is 4, "x" unset
            return name
    return None


def _sync_blas() -> None:
    """Give NumPy's BLAS execmode's count, unless the user set OpenBLAS's own variables
    (then their count stands; restored if a set_num_threads(n) changed it)."""
    from . import blas

    control = blas.thread_control()
    _State.blas_synced = True
    if control is None:
        _State.blas_source = f"not set: {blas.thread_control_reason()}"
        _blas_jobs_follow(None)
        return
    if _State.blas_at_start is None:
        _State.blas_at_start = control.get()
    users = _blas_variable_set()
    if _State.override is not None:
        target, _State.blas_source = _State.override, SET_BY_CALL
    elif users is not None:
        target = _State.blas_at_start
        _State.blas_source = _left_as_set(users)
    else:
        target, _State.blas_source = _chosen()[0], BLAS_FOLLOWS
    if control.get() != target:
        control.set(target)
    _blas_jobs_follow(target)


def _blas_jobs_follow(count: int | None) -> None:
    """OpenBLAS's parallel jobs on execmode's OpenMP team where they can run there
    (blas_workers.py); a child forked after threads ran keeps OpenBLAS's own threads."""
    from . import blas_workers
    from .openmp_policy import prefer_passive_openmp

    blas_workers.follow(count, forked=_State.inherited_pool,
                        before_openmp_loads=prefer_passive_openmp)
    _hook_fork()  # the team's workers are the kernels': the fork guard covers both


def _sync_blas_once() -> None:
    if not _State.blas_synced:
        _sync_blas()


def _left_as_set(users: str) -> str:
    return f"from {users}={os.environ[users].strip()} as OpenBLAS read it; execmode leaves it"


def _blas_source_now(control) -> str:
    """Who chose the BLAS's count in force, without changing it: what _sync_blas said,
    or, before execmode first gave the BLAS a count, OpenBLAS's own choice."""
    from . import blas

    if _State.blas_synced:
        return _State.blas_source
    if control is None:
        return f"not set: {blas.thread_control_reason()}"
    users = _blas_variable_set()
    if users is not None:
        return _left_as_set(users)
    return BLAS_NOT_YET


# --- what reports print -------------------------------------------------------------------

def thread_settings() -> dict:
    """The thread settings in force, for reports and ``em.compare`` to print beside their
    numbers. Strictly read-only: it neither gives the BLAS a count nor changes who runs
    its jobs (a profiled or compared script must run as it runs unmeasured), so before
    execmode's first compiled kernel or ``set_num_threads`` it reports OpenBLAS's own
    count (``blas_source``: :data:`BLAS_NOT_YET`).

    Keys: ``threads`` (kernels' count now), ``source`` ("set_num_threads()",
    "EXECMODE_NUM_THREADS", "OMP_NUM_THREADS" or "default: N usable CPUs, M physical
    cores"), ``requested`` (the count asked, which a fork may have lowered to 1),
    ``forked`` (True in such a child), ``blas_threads`` (read back from the BLAS; None
    when execmode cannot read it), ``blas_source``, ``blas_library``, ``blas_workers``
    (who runs OpenBLAS's parallel jobs: "execmode's OpenMP team", "OpenBLAS's own
    threads (why)", or "the BLAS's own threads (not OpenBLAS: ...)", blas_workers.py),
    ``usable_cpus``, ``physical_cores``.
    """
    from . import blas, blas_workers

    requested, source = _chosen()
    control = blas.thread_control()
    return {
        "threads": 1 if _State.inherited_pool else requested,
        "source": source,
        "requested": requested,
        "forked": _State.inherited_pool,
        "blas_threads": control.get() if control is not None else None,
        "blas_source": _blas_source_now(control),
        "blas_library": os.path.basename(control.path) if control is not None else None,
        "blas_workers": blas_workers.status(),
        "usable_cpus": usable_cpus(),
        "physical_cores": physical_cores(),
    }


def thread_settings_text(settings: dict | None = None) -> str:
    """One short line: "threads: 2 (default: 2 usable CPUs, 2 physical cores), BLAS 2 on
    the kernels' threads" (or "on OpenBLAS's own threads"; nothing for one BLAS thread,
    which starts no jobs, or settings stored before execmode said)."""
    from .blas_workers import TEAM

    s = thread_settings() if settings is None else settings
    text = f"threads: {s['threads']} ({s['source']})"
    if s.get("forked"):
        text = (f"threads: 1 (forked after threaded kernels ran; {s['requested']} asked by "
                f"{s['source']})")
    if s.get("blas_threads") is None:
        return f"{text}, BLAS threads unknown ({s.get('blas_source') or 'not read'})"
    text += f", BLAS {s['blas_threads']}"
    if s.get("blas_source") not in (BLAS_FOLLOWS, SET_BY_CALL):
        text += f" ({s['blas_source']})"
    workers = s.get("blas_workers")
    if workers and s["blas_threads"] > 1:
        text += " on the kernels' threads" if workers == TEAM else " on OpenBLAS's own threads"
    return text


# --- kernel libraries ---------------------------------------------------------------------

def configure_library(cdll: ctypes.CDLL) -> None:
    """Give a freshly loaded OpenMP kernel library its thread count (and the BLAS its
    count, with the first library); watch for forks."""
    cdll.em_set_num_threads.argtypes = [ctypes.c_int]
    cdll.em_set_num_threads.restype = None
    cdll.em_threads_used.argtypes = []
    cdll.em_threads_used.restype = ctypes.c_int
    cdll.em_set_num_threads(num_threads())
    _State.libraries.append(cdll)
    if not _State.leave_blas:
        _sync_blas_once()
    _hook_fork()


@contextlib.contextmanager
def blas_left_alone():
    """Kernel libraries loaded inside leave NumPy's BLAS as it is (its count, who runs
    its jobs): for execmode's own measurements (the profiler's calibration compiles
    kernels), which must not change the program they measure. The next library loaded
    outside, or ``set_num_threads``, gives the BLAS its count as usual."""
    _State.leave_blas += 1
    try:
        yield
    finally:
        _State.leave_blas -= 1


def _hook_fork() -> None:
    if not _State.hooked and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _State.hooked = True


def _after_fork_in_child() -> None:
    from . import blas_workers

    # The libraries' flags were copied into the child with the rest of the memory; the
    # BLAS jobs ran on the same pool when blas_workers' team ran.
    if _State.inherited_pool or blas_workers.team_ran() or \
            any(lib.em_threads_used() for lib in _State.libraries):
        _State.inherited_pool = True
        for lib in _State.libraries:
            lib.em_set_num_threads(1)
    blas_workers.after_fork_in_child(pool_unusable=_State.inherited_pool)
