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
graph's own units. :func:`start_early` starts them on background threads as a segment
begins compiling, where a second compiler slot exists (with one, there is nothing to
overlap, and a build the call turns out not to need would only delay it). Each early build
is the one build of its kind in the process: whoever asks waits for it (its result, or its
exception raised in the asking thread, unchanged).
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Future

from .threads import num_threads


class _Slots:
    condition = threading.Condition()
    busy = 0          # compiler processes running now
    most = 0          # the most that ever ran at once (tests read it)


def capacity() -> int:
    """How many compiler processes may run at once: the thread count."""
    return max(1, num_threads())


@contextlib.contextmanager
def compiler_slot():
    """Held while one compiler process runs; waits while :func:`capacity` run already."""
    limit = capacity()
    with _Slots.condition:
        while _Slots.busy >= limit:
            _Slots.condition.wait()
        _Slots.busy += 1
        _Slots.most = max(_Slots.most, _Slots.busy)
    try:
        yield
    finally:
        with _Slots.condition:
            _Slots.busy -= 1
            _Slots.condition.notify_all()


def most_at_once(reset: bool = False) -> int:
    """The most compiler processes that ran at once since the last reset."""
    with _Slots.condition:
        most = _Slots.most
        if reset:
            _Slots.most = _Slots.busy
        return most


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


def start_early(fast_entry: bool) -> None:
    """Start the toolchain probe and (``fast_entry``: the jit may use the C entry) the
    fast entry's extension in the background, when a second compiler slot exists and
    they are not started or done yet."""
    if capacity() < 2:
        return
    from . import toolchain

    toolchain.start_probe()
    if fast_entry:
        from . import fast_entry as fast_entry_module

        fast_entry_module.start_build()
