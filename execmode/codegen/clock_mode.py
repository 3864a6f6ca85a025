"""Which clock the compiled steps read: the CPU's time-stamp counter, or clock_gettime.

Each compiled step's time is a clock read after it (em_clock.h). clock_gettime waits for
the step's memory operations to finish before it reads (its counter read is ordered), so
a read cost 20 ns after a small step and 40-50 ns after one that moved memory: a cost
the profiler's calibration, on small steps, stated as half of what a real program paid.
The time-stamp counter read without that order costs a few ns whatever the step did.

It is used where it runs at one constant rate whatever the CPU's frequency and sleep
states (Linux's ``constant_tsc`` and ``nonstop_tsc`` flags, x86-64), where Linux itself
keeps time by it (its clocksource is ``tsc``: stable, in step across CPUs), and the C compiler
builds the little library that reads it from Python (native/clock_ticks.c). The compiled
code then sums ticks; :func:`ns_per_tick` (measured once per process, against
``time.perf_counter_ns``, when a reader first needs it) turns them into ns in
kernel_clock.py. Elsewhere the steps read clock_gettime's ns, as before.
``EXECMODE_KERNEL_CLOCK=ns`` forces clock_gettime.
"""

from __future__ import annotations

import os
import platform
import time

from execmode import kernel_clock

from .native_library import load_library
from .render_c import read_header

_mode: dict = {}
CALIBRATION_NS = 2_000_000  # how long the tick rate is measured: 2 ms, ~1e-4 relative
PAIRS = 9  # bracketed counter reads at each end, the tightest kept


def _cpu_flags() -> set:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _kernel_trusts_tsc() -> bool:
    """Linux keeps time by the counter itself (its clocksource is ``tsc``): it found the
    counter stable and in step across CPUs, which the flags alone do not say."""
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  encoding="utf-8") as f:
            return f.read().strip() == "tsc"
    except OSError:
        return False


def _reader():
    """The counter's reader from Python (a ctypes function), or None where the steps read
    clock_gettime."""
    if "reader" not in _mode:
        reader = None
        if os.environ.get("EXECMODE_KERNEL_CLOCK", "").strip().lower() != "ns" and \
                platform.machine() in ("x86_64", "AMD64") and \
                {"constant_tsc", "nonstop_tsc"} <= _cpu_flags() and _kernel_trusts_tsc():
            try:
                cdll = load_library("clock_ticks.c")
            except Exception:  # noqa: BLE001 - no counter: the steps read clock_gettime
                cdll = None
            if cdll is not None:
                import ctypes

                reader = cdll.em_clock_ticks_now
                reader.restype = ctypes.c_longlong
                reader.argtypes = ()
                reader._keep = cdll
        _mode["reader"] = reader
        if reader is not None:
            kernel_clock.set_tick_rate(ns_per_tick)
    return _mode["reader"]


def uses_ticks() -> bool:
    return _reader() is not None


def clock_header() -> str:
    """em_clock.h as the compiled code here includes it: the counter where it is used."""
    return ("#define EM_CLOCK_TSC 1\n" if uses_ticks() else "") + read_header("em_clock.h")


def ns_per_tick() -> float:
    """How many ns a counter tick is, measured once over CALIBRATION_NS."""
    rate = _mode.get("rate")
    if rate is None:
        read, now = _reader(), time.perf_counter_ns
        read()  # (a first call resolves the symbol: slow, and not to be timed)

        def pair():
            """A counter read and the clock's time at its middle, from the tightest of
            a few brackets: a thread descheduled inside one (a busy machine) would move
            the rate by the time it waited."""
            best = None
            for _ in range(PAIRS):
                before = now()
                ticks = read()
                after = now()
                if best is None or after - before < best[2]:
                    best = (ticks, (before + after) / 2, after - before)
            return best[:2]

        c0, t0 = pair()
        while now() - t0 < CALIBRATION_NS:
            pass
        c1, t1 = pair()
        rate = _mode["rate"] = (t1 - t0) / max(1, c1 - c0)
    return rate
