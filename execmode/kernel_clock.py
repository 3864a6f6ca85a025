"""The kernel clock: every compiled step's runs timed and summed where they run.

An event per compiled step costs more than a small kernel itself. Instead, while a
listener wants kernel times (``wants_kernel_times = True``: the recorder, em.compare),
every plan sums its own steps' runs: a whole-graph C program with one clock read per step
into an int64 array it was given at compile time (program_draft.py), the fast entry around a
one-step plan's kernel or ufunc (fast_entry.c), the plan's Python loops and the generated
Python replay into lists (plan.py, jit_driver/fastcall.py). Nothing crosses into Python
per run in C; the listeners read the sums when they like (:func:`clocks`): the recorder at
each writer batch and at the end, em.compare after each round.

Compiled code reads the CPU's time-stamp counter where it runs at a constant rate and
sums ticks (codegen/clock_mode.py, which hands :func:`set_tick_rate` its measure); the
readers here turn them into ns. The Python loops' sums are ns.

A :class:`StepClock` belongs to one plan. Its ``array`` is what C reads and writes:

    [on, runs, run_ns, run_min, run_max, (calls, ns, min, max, bytes) per step ...]

``on`` is set on every clock while the clock runs, so compiled code tests one integer per
step and costs nothing more when nobody measures. min/max count from the moment the clock
started (they cannot be subtracted); calls, ns and bytes are cumulative, and readers keep
their own baselines. ``bytes`` counts new buffers a step allocated: never a view, a buffer
of the memory plan, or a program's own buffers (allocated once, when it was compiled); an
output pool counts the arrays it had to make anew (codegen/buffers.py).

A plan freed while the clock runs leaves its sums behind (:class:`RetiredClock`), so a
short-lived jitted function's runs still reach the readers, the last of which reads them
after the clock stopped; they are dropped when it starts again.
"""

from __future__ import annotations

import itertools
import threading
import weakref

HEADER = 5        # on, then whole runs' (calls, ns, min, max)
FIELDS = 5        # per step: calls, ns, min, max, bytes
NO_MIN = 2 ** 63 - 1  # int64's largest: "no run yet" for a min

_clocks: weakref.WeakSet = weakref.WeakSet()
_retired: list = []
# Reentrant: a plan freed by the garbage collector while this thread holds the lock
# retires its clock from inside it.
_lock = threading.RLock()
_numbers = itertools.count(1)
# Listeners that asked for kernel times: the clock runs while this is not empty. A list,
# so that the C fast entry can hold it and test its length.
demand: list = []


class ClockSums:
    """The reading side of a plan's sums: C's ``array`` and the Python loops' ``py``
    (plain lists: a NumPy scalar update costs ~0.1 us, a list item a tenth of that), one
    list for whole runs and one per step, each ``[calls, ns, min, max, bytes]``."""

    __slots__ = ("graph_id", "number", "steps", "array", "py", "__weakref__")

    @property
    def n_steps(self) -> int:
        return (len(self.array) - HEADER) // FIELDS

    def run_totals(self) -> tuple:
        """(runs, ns, min, max) of whole runs, both paths summed; min/max 0 before the
        first run."""
        return _merged(self.array[1:HEADER], self.py[0])[:4]

    def step_totals(self, index: int) -> tuple:
        """(calls, ns, min, max, bytes) of step ``index``, both paths summed."""
        base = HEADER + FIELDS * index
        return _merged(self.array[base:base + FIELDS], self.py[index + 1])

    def loop_runs(self) -> int:
        """Whole runs timed in Python (the plan's loops, the generated replay): their clock
        reads cost more than compiled code's, and the profiler states them apart."""
        return self.py[0][0]

    def loop_calls(self, index: int) -> int:
        return self.py[index + 1][0]


class StepClock(ClockSums):
    """The run sums of one plan's steps (see the module docstring)."""

    __slots__ = ()

    def __init__(self, graph_id: str, n_steps: int, steps: tuple = ()):
        import numpy as np  # here: the CLI imports instrument (and this) without NumPy

        self.graph_id = graph_id
        # Plans of two jitted functions may share a graph id ("f#0:0"): readers key sums
        # by this number, unique in the process.
        self.number = next(_numbers)
        # What readers say of each step (plan.py's step descriptions): name, kind, ...
        self.steps = steps
        self.array = np.zeros(HEADER + FIELDS * n_steps, np.int64)
        self.py = [[0, 0, NO_MIN, 0, 0] for _ in range(n_steps + 1)]
        with _lock:
            _reset_extremes(self)
            self.array[0] = 1 if demand else 0
            _clocks.add(self)
        weakref.finalize(self, _retire, self.graph_id, self.number, self.steps, self.array,
                         self.py)

    def add_step(self, index: int, ns: int, nbytes: int = 0) -> None:
        """One run of step ``index`` took ``ns`` and allocated ``nbytes`` (timed in
        Python)."""
        sums = self.py[index + 1]
        _add(sums, ns)
        sums[4] += nbytes

    def add_run(self, ns: int) -> None:
        """One whole run of the plan took ``ns`` (timed in Python)."""
        _add(self.py[0], ns)


class RetiredClock(ClockSums):
    """The sums a plan left when it was freed while the clock ran."""

    __slots__ = ()

    def __init__(self, graph_id, number, steps, array, py):
        self.graph_id, self.number, self.steps, self.array, self.py = \
            graph_id, number, steps, array, py


def _retire(graph_id, number, steps, array, py) -> None:
    with _lock:
        if demand and (array[1] or py[0][0]):  # it ran, and someone reads the sums
            _retired.append(RetiredClock(graph_id, number, steps, array, py))


def _reset_extremes(clock) -> None:
    a = clock.array
    a[3], a[4] = NO_MIN, 0
    a[HEADER + 2::FIELDS] = NO_MIN
    a[HEADER + 3::FIELDS] = 0
    for sums in clock.py:
        sums[2], sums[3] = NO_MIN, 0


def _add(sums: list, ns: int) -> None:
    sums[0] += 1
    sums[1] += ns
    if ns < sums[2]:
        sums[2] = ns
    if ns > sums[3]:
        sums[3] = ns


# Compiled code sums the time-stamp counter's ticks where codegen/clock_mode.py uses it:
# ns per tick, measured once when first read (None: the C sums are ns).
_tick_rate = {"measure": None, "ns": None}


def set_tick_rate(measure) -> None:
    """The compiled steps sum ticks; ``measure()`` says how many ns a tick is."""
    _tick_rate["measure"] = measure


def _ns_per_tick() -> float:
    rate = _tick_rate["ns"]
    if rate is None:
        measure = _tick_rate["measure"]
        if measure is None:
            return 1.0
        rate = _tick_rate["ns"] = measure()
    return rate


def _merged(native, py: list) -> tuple:
    calls = int(native[0]) + py[0]
    if calls == 0:
        return 0, 0, 0, 0, 0
    nbytes = (int(native[4]) if len(native) > 4 else 0) + py[4]
    rate = _ns_per_tick() if native[0] else 1.0
    low = int(native[2])
    low = min(low if low == NO_MIN else round(low * rate), py[2])
    # No run since the clock last started: min and max are unknown (0).
    return (calls, round(int(native[1]) * rate) + py[1], 0 if low == NO_MIN else low,
            max(round(int(native[3]) * rate), py[3]), nbytes)


def running() -> bool:
    return bool(demand)


def want(listener) -> None:
    """``listener`` wants kernel times: start the clock if it is the first."""
    with _lock:
        if any(d is listener for d in demand):
            return
        if not demand:
            _retired.clear()  # sums of a measuring period that ended: read by now
            for clock in _clocks:
                _reset_extremes(clock)
                clock.array[0] = 1
        demand.append(listener)


def release(listener) -> None:
    """``listener`` no longer wants kernel times: stop the clock after the last."""
    with _lock:
        demand[:] = [d for d in demand if d is not listener]
        if not demand:
            for clock in _clocks:
                clock.array[0] = 0


def clocks() -> list:
    """Every live plan's clock (plans that never ran included), and the sums of plans
    freed while the clock ran."""
    with _lock:
        return list(_clocks) + list(_retired)
