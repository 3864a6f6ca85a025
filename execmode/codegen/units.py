"""A graph's kernels in translation units of bounded size, compiled in parallel.

One translation unit per graph made the C compiler's time grow faster than the graph
(GCC's passes are superlinear in a unit's functions and their length) and left every
core but one idle while a user waited for a first call. So the kernels are cut, in graph
order, into units of at most :data:`UNIT_WEIGHT` (ops, plus a fixed cost per kernel for
its function, loop nest and OpenMP outlining: measured ~8 ms of gcc for a 3-op kernel
against ~0.3 ms per op of a long chain, and more for each transcendental it inlines), and the units, with any runtime-library helper
they call that is not built yet (runtime_library.py), are compiled on at most the
thread count kernels run on (threads.py: ``em.set_num_threads``, ``EXECMODE_NUM_THREADS``):
the calling thread and threads kept for the process, each waiting on one compiler process.

The cut depends on the kernels alone, never on the thread count, so the disk cache finds
the same libraries whatever the count (one thread compiles the same units one after
another). Each unit is one library with its own compile event; the kernels' bits do not
depend on which unit holds them (tests/codegen/test_units.py).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from . import runtime_library
from .c_runtime import CompileError, Library, compile_unit, load_unit, render_unit
from .threads import num_threads

# Weights are ops: a kernel counts its members, plus KERNEL_WEIGHT, plus
# INLINED_CALL_WEIGHT per float32 transcendental it inlines (runtime_library.INLINE_MAX:
# ~20-30 ms of gcc each, as much as ~80 ops of a chain). A unit of 2048 is ~0.5-0.7 s of
# gcc here, so the ~40 ms a unit pays to start (the compiler, the prelude) stays small,
# and a 5000-op chain already makes three units.
KERNEL_WEIGHT = 24
INLINED_CALL_WEIGHT = 64
UNIT_WEIGHT = 2048


def weight(kernel) -> int:
    calls = sum(op in runtime_library.HELPERS for op in kernel.member_ops)
    inlined = calls if calls <= runtime_library.INLINE_MAX else 0
    return len(kernel.member_ops) + KERNEL_WEIGHT + INLINED_CALL_WEIGHT * inlined


def partition(kernels) -> list[list]:
    """``kernels`` in order, cut into consecutive groups of at most UNIT_WEIGHT each (a
    kernel heavier than that alone), balanced: as many groups as the total needs, each
    near the total over that count."""
    kernels = list(kernels)
    total = sum(weight(k) for k in kernels)
    count = max(1, -(-total // UNIT_WEIGHT))
    target = total / count
    groups, current, load = [], [], 0
    for k in kernels:
        w = weight(k)
        if current and (load + w > UNIT_WEIGHT or load + w / 2 > target):
            groups.append(current)
            current, load = [], 0
        current.append(k)
        load += w
    if current:
        groups.append(current)
    return groups


def build_libraries(kernels, toolchain, renderer, threads: int | None = None,
                    alongside=()) -> list:
    """``[(kernels, Library)]``: ``kernels`` compiled (or found in the disk cache) as
    partition() cuts them, on up to ``threads`` compilers at once (default: the kernels'
    thread count; compiler_slots.py bounds them all), and loaded in order on this thread.

    ``alongside``: other rendered units (a graph's whole-graph program, program.py)
    compiled on the same workers, longest first with the rest, and not loaded here; each
    keeps its own failure in ``unit.error`` for its owner to raise. A failure of the
    kernels' own units raises here, the first in the order a sequential run meets it."""
    units = [render_unit(group, toolchain, renderer) for group in partition(kernels)]
    everything = units + list(alongside)
    helpers = next((u.helpers for u in everything if u.runtime), "")
    runtime = [name for name in runtime_library.HELPERS
               if any(name in u.runtime for u in everything)]
    ours = {name for name in runtime if any(name in u.runtime for u in units)}
    ours.update(id(u) for u in units)
    jobs = [(len(runtime_library.source(helpers, name)), name,
             lambda name=name: _build_helper(toolchain, helpers, name)) for name in runtime]
    jobs += [(len(u.source), id(u), lambda u=u: compile_unit(u)) for u in everything]
    jobs.sort(key=lambda job: -job[0])  # the longest first: the pool ends together
    failures = _run(jobs, ours, min(threads or num_threads(), len(jobs)))
    for unit in alongside:
        unit.error = next((failures[key] for key in (*unit.runtime, id(unit))
                           if key in failures), None)
    failed = next((failures[key] for _, key, _ in jobs if key in ours and key in failures),
                  None)
    if failed is not None:
        raise failed
    libraries: list[Library] = [load_unit(u) for u in units]
    return [(u.kernels, lib) for u, lib in zip(units, libraries)]


def _run(jobs, ours, workers: int) -> dict:
    """Run ``jobs`` (size, key, job) on ``workers`` threads, this one among them: key ->
    the Exception each failed with. One thread stops at the first failure among ``ours``
    (what the caller raises); several run every job, as they always did before a failure
    was raised."""
    failures = {}

    def attempt(key, job) -> None:
        try:
            job()
        except Exception as exc:  # noqa: BLE001 - raised by the caller that owns the job
            failures[key] = exc

    if workers <= 1:
        for _, key, job in jobs:
            attempt(key, job)
            if key in ours and key in failures:
                break
        return failures
    pending, taking = iter(jobs), threading.Lock()
    stop = []

    def drain() -> None:
        while not stop:
            with taking:
                item = next(pending, None)
            if item is None:
                return
            attempt(item[1], item[2])

    others = [_Workers.pool(workers - 1).submit(drain) for _ in range(workers - 1)]
    try:
        drain()
    except BaseException:  # (KeyboardInterrupt) no new job starts; those running finish
        stop.append(True)
        raise
    finally:
        for future in others:
            future.result()
    return failures


class _Workers:
    """The compile threads beside the calling one, started once per process and kept.
    Threads started for each compile cost a first call whose libraries are all in the
    disk cache more than finding them (~1 ms of a ~4 ms first call here), and a thread that
    ended before a recorder stopped escaped its count of the CPU the script's threads
    waited for (recorder.py, "displaced")."""

    lock = threading.Lock()
    executor: ThreadPoolExecutor | None = None
    size = 0

    @classmethod
    def pool(cls, size: int) -> ThreadPoolExecutor:
        with cls.lock:
            if cls.executor is None or cls.size < size:
                if cls.executor is not None:
                    cls.executor.shutdown(wait=False)  # its threads end when idle
                cls.executor = ThreadPoolExecutor(max_workers=size,
                                                  thread_name_prefix="execmode-compile")
                cls.size = size
            return cls.executor

    @classmethod
    def forget(cls) -> None:
        # A forked child has none of the parent's threads: its first compile starts its own.
        cls.lock = threading.Lock()
        cls.executor, cls.size = None, 0


os.register_at_fork(after_in_child=_Workers.forget)


def _build_helper(toolchain, helpers: str, name: str) -> None:
    try:
        runtime_library.ensure_built(toolchain, helpers, name)
    except runtime_library.RuntimeBuildError as exc:  # the factory's fallback catches it
        raise CompileError(str(exc)) from exc
