"""Threads of the compiled CPU kernels: how many, and what a fork does to them.

Large kernels run their outermost loop with OpenMP (``#pragma omp parallel for``, see
render_c.py); every kernel library holds its own thread count, ``em_num_threads``, set
here when the library loads: ``EXECMODE_NUM_THREADS``, else the CPUs this process may run
on. The count never changes a result: how work is cut into pieces is fixed by the kernel's
sizes alone (a big full reduction is always 64 chunks combined in order, lower.py), the
count only says how many threads take the pieces.

**Fork.** GNU libgomp keeps its worker threads in a pool. ``fork()`` copies the pool's
bookkeeping into the child but not the threads, so the child's next parallel region waits
forever for workers that do not exist (measured: a multiprocessing-style ``os.fork`` after
one threaded kernel hung the child's first kernel call). libgomp has no fork handler and
no way to drop its pool. So every library records whether it ever started a team of more
than one thread (``em_threads_used``), and a child forked after that happened runs every
kernel single-threaded, libraries it loads later included (a team of one never touches the
pool). Results are the same bits; only the speed differs. A child forked before any
threaded kernel ran keeps its threads (libgomp starts a fresh pool there). Processes
started with exec (``subprocess``, the debugger's script runs, multiprocessing's "spawn")
start fresh and are not affected. Hooked with ``os.register_at_fork``: a fork from C code
that bypasses Python's ``os.fork`` is not seen.
"""

from __future__ import annotations

import ctypes
import os

ENV = "EXECMODE_NUM_THREADS"


class _State:
    libraries: list = []       # the ctypes handles of loaded OpenMP kernel libraries
    inherited_pool = False     # forked after threads ran: libgomp's pool is unusable here
    override: int | None = None  # set_num_threads(): wins over the environment
    hooked = False


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def requested_threads() -> int:
    """``EXECMODE_NUM_THREADS`` (a positive integer), else :func:`usable_cpus`.

    Raises ``ValueError`` naming the variable for anything else: a typo must not silently
    run a benchmark or a job with another thread count than asked.
    """
    text = os.environ.get(ENV, "").strip()
    if not text:
        return usable_cpus()
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{ENV}={os.environ[ENV]!r}: expected a positive integer (the "
                         f"number of threads for large compiled kernels; 1 = single-"
                         f"threaded), or leave it unset for the usable CPUs "
                         f"({usable_cpus()})")
    return value


def num_threads() -> int:
    """The thread count kernel libraries get: 1 in a child forked after threads ran."""
    requested = _State.override or requested_threads()  # validated even if not honoured
    return 1 if _State.inherited_pool else requested


def set_num_threads(n: int | None) -> None:
    """Set the thread count of every kernel library, loaded and to come (None: back to
    ``EXECMODE_NUM_THREADS``). For benchmarks and tests that compare thread counts on the
    same compiled kernels; results do not depend on it."""
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"set_num_threads: expected a positive int or None, got {n!r}")
    _State.override = n
    count = num_threads()
    for lib in _State.libraries:
        lib.em_set_num_threads(count)


def forked_after_threads() -> bool:
    """True in a process forked after a kernel started threads (kernels run on one)."""
    return _State.inherited_pool


def configure_library(cdll: ctypes.CDLL) -> None:
    """Give a freshly loaded OpenMP kernel library its thread count; watch for forks."""
    cdll.em_set_num_threads.argtypes = [ctypes.c_int]
    cdll.em_set_num_threads.restype = None
    cdll.em_threads_used.argtypes = []
    cdll.em_threads_used.restype = ctypes.c_int
    cdll.em_set_num_threads(num_threads())
    _State.libraries.append(cdll)
    if not _State.hooked and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
        _State.hooked = True


def _after_fork_in_child() -> None:
    # The libraries' flags were copied into the child with the rest of the memory.
    if _State.inherited_pool or any(lib.em_threads_used() for lib in _State.libraries):
        _State.inherited_pool = True
        for lib in _State.libraries:
            lib.em_set_num_threads(1)


def prefer_passive_openmp() -> None:
    """Idle OpenMP workers sleep instead of spinning, unless the user chose a policy.

    Kernels share the cores with NumPy and BLAS between parallel regions: spinning workers
    (libgomp's default) made an MLP training step 10x slower on 2 cores. Read by libgomp
    when it loads, i.e. with the first kernel library of the process.
    """
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
