"""How many C compiler processes a process runs at once, and the builds it starts early.

**At most the thread count.** Every compiler process execmode starts (toolchain.py's
``run_compiler``: the probe, kernel units, runtime-library helpers, whole-graph programs,
the C extensions) first takes one of :func:`capacity` slots, the thread count kernels run
on (threads.py: ``em.set_num_threads``, ``EXECMODE_NUM_THREADS``). So a pool of unit
compiles (units.py), a build started early (below) and a build another thread asks for
never run more compilers together than that, whoever started them: a first call on one
thread runs one compiler at a time, as it always did.

**Started before they are asked for.** A cold first call compiles things that do not
depend on the traced graph: the toolchain probe (every kernel needs its flags) and the
jit's C fast entry (fast_entry.py, needed once the plan is known to qualify). Waiting for
each where it is first asked put them on the critical path one after another, after the
graph's own units. So em.jit starts them (``toolchain.start_probe``,
``fast_entry.start_build``: :func:`in_background` threads) as a segment begins compiling,
where a second compiler slot exists (jit_driver/compiled_segment.py; with one, there is
nothing to overlap, and a build the call turns out not to need would only delay it). Each
early build
is the one build of its kind in the process: whoever asks waits for it (its result, or its
exception raised in the asking thread, unchanged). A child forked meanwhile has neither
the build's thread nor its compiler: it forgets both and builds again if it must.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import Future


class _Slots:
    condition = threading.Condition()
    busy = 0          # compiler processes running now
    # The thread count, as threads.py answers it (it registers itself when imported;
    # importing it here would be a cycle: its BLAS workers build an extension).
    count = None


def _after_fork_in_child() -> None:
    # The compilers and threads of the parent are not the child's: a slot taken by a
    # parent's background build would never be given back here.
    _Slots.condition = threading.Condition()
    _Slots.busy = 0


os.register_at_fork(after_in_child=_after_fork_in_child)


def count_threads_with(count) -> None:
    """``count()`` answers the thread count from now on (threads.num_threads)."""
    _Slots.count = count


def capacity() -> int:
    """How many compiler processes may run at once: the thread count (1 before threads.py
    is imported, which every parallel build imports first)."""
    if _Slots.count is None:
        return 1
    try:
        return max(1, _Slots.count())
    except ValueError:  # a bad EXECMODE_NUM_THREADS: raised where kernels use the count
        return 1


@contextlib.contextmanager
def compiler_slot():
    """Held while one compiler process runs; waits while :func:`capacity` run already."""
    limit = capacity()
    with _Slots.condition:
        while _Slots.busy >= limit:
            _Slots.condition.wait()
        _Slots.busy += 1
    try:
        yield
    finally:
        with _Slots.condition:
            _Slots.busy -= 1
            _Slots.condition.notify_all()


def in_background(fn, name: str) -> Future:
    """``fn()`` on a new thread; its result or exception comes back through the future.
    Not a daemon: a build in flight at exit finishes (and installs) before the process
    ends, rather than leaving a half-written temporary file in the cache."""
    future: Future = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn())
        except BaseException as exc:  # the asking thread re-raises it
            future.set_exception(exc)

    threading.Thread(target=run, name=f"execmode-{name}").start()
    return future
