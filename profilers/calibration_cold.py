"""What recording adds to an eager op whose data pushed the recorder out of the CPU's cache.

The recorder's per-op work (dispatch's listening path, the op ring, the memory tables,
the user's line) runs from the core's caches when the script's ops are small. An op that
streams more data than the core's L2 cache holds evicts that work's code and data, and
the recorder's next visit runs from memory: on the 2-vCPU dev VM (2 MiB of L2) ~0.4 us
an op warm, ~1.5 us more after 1 MiB of new data, ~3-3.5 us more after 2 MiB, ~5 us more
after 4 MiB.

Measured like the rest of the calibration, in interleaved rounds plainly and recorded:
each call sweeps ``size`` bytes of data it has not touched lately (a NumPy reduction, no
op) and then makes one small op, timed alone (the sweeps' own time varies by more than
the recorder's cost), for sizes around the L2 cache and for none::

    extra(size) = (recorded - plain)(size) - (recorded - plain)(0), per op

A session states, for each op that allocated its output, ``extra`` at the bytes it read
and wrote (its inputs' and output's, from its row), interpolated between the measured
sizes and held at the largest. That counts the op's own data as new to the cache, which
overstates ops that re-read data still cached from the op before (a loop over one small
set of arrays) and understates what evicts without allocating (in-place updates, views
read by a later op); docs/profiling.md says so.
"""

from __future__ import annotations

import os
import re

from execmode.profilers import measure

# Sizes swept before each op, in units of the core's L2 cache; 0 is the warm baseline.
FRACTIONS = (0, 0.5, 1, 2)
CALLS = 100
# More rounds than the other workloads': a sweep's cache misses vary from round to round.
ROUNDS = 15
# An op whose data are smaller than this is stated warm: the interpolation gives it a few
# ns at most, and the sessions' byte lists stay short.
MIN_BYTES = 16 << 10
_DEFAULT_L2 = 1 << 20


def core_cache_bytes() -> int:
    """The L2 cache of one core, in bytes (1 MiB where the system does not say)."""
    try:
        size = os.sysconf("SC_LEVEL2_CACHE_SIZE")
        if size > 0:
            return int(size)
    except (ValueError, OSError, AttributeError):
        pass
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as f:
            text = f.read().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        return int(text.rstrip("KM")) * scale
    except (OSError, ValueError):
        return _DEFAULT_L2


def sizes() -> tuple:
    l2 = core_cache_bytes()
    return tuple(int(f * l2) for f in FRACTIONS)


def _op_after_sweeps(size: int, calls: int):
    """A callable timing ``calls`` small ops, each right after sweeping ``size`` bytes
    that no sweep touched for at least four L2 caches' worth: the mean op's ns. Only the
    op is timed: the sweeps' own time varies by more than the recorder's cost."""
    import time

    import numpy as np

    import execmode as em

    a, b = em.ones(16), em.ones(16)
    clock = time.perf_counter_ns
    if size == 0:
        order = [None] * calls
    else:
        n = max(1, size // 4)
        chunks = max(4, -(-4 * core_cache_bytes() // size))
        pool = np.ones(n * chunks, np.float32)
        views = [pool[i * n:(i + 1) * n] for i in range(chunks)]
        order = [views[i % chunks] for i in range(calls)]

    def timed():
        total = 0
        for chunk in order:
            if chunk is not None:
                chunk.max()
            t0 = clock()
            a + b
            total += clock() - t0
        return total / calls
    return timed


def measure_points(attach, detach, *, rounds: int, calls: int = CALLS) -> tuple:
    """``(points, spreads)``: the extra per op by bytes swept (:func:`extra_points`), from
    interleaved rounds of each size with the recorder detached and attached (``attach()``
    and ``detach()`` add and remove it)."""
    def recorded(timed):
        def run():
            attach()
            try:
                return timed()
            finally:
                detach()
        return run

    swept, candidates = sizes(), {}
    for size in swept:
        timed = _op_after_sweeps(size, calls)
        candidates[f"{size} plain"] = timed
        candidates[f"{size} recorded"] = recorded(timed)
    results = measure.run_interleaved(candidates, rounds=rounds)
    spreads = {name: measure.Spread.of(values) for name, values in results.items()}
    differences = {size: spreads[f"{size} recorded"].median - spreads[f"{size} plain"].median
                   for size in swept}
    return extra_points(differences), spreads


def extra_points(differences: dict) -> list:
    """``[[bytes, ns], ...]`` from ``{size: (recorded - plain) per op}``: less the warm
    op's, never negative, never falling as the size grows (the rounds' noise would
    otherwise state a larger op cheaper)."""
    warm = max(0.0, differences[0])
    points, highest = [], 0.0
    for size in sorted(s for s in differences if s > 0):
        highest = max(highest, differences[size] - warm, 0.0)
        points.append([size, round(highest)])
    return points


def extra_ns(points, nbytes: int) -> float:
    """The calibrated extra for an op moving ``nbytes``: linear from 0 through the
    measured sizes, the largest size's beyond it."""
    if not points or nbytes <= 0:
        return 0.0
    x0, y0 = 0, 0.0
    for x1, y1 in points:
        if nbytes < x1:
            return y0 + (y1 - y0) * (nbytes - x0) / (x1 - x0)
        x0, y0 = x1, y1
    return float(y0)


# A tensor in a row: its dtype's name (``f32``, ``bool``, or NumPy's for a dtype outside
# the short names: ``float16``), then its shape.
_TYPE = re.compile(r"([A-Za-z_]+?)(\d*)\[([\d,]*)\]")


def type_bytes(text: str) -> int:
    """The bytes of the tensors a row's ``inputs`` or ``output`` names (``f32[64,512],
    0.5``: 131072); Python scalars and unknown shapes or dtypes count nothing. Read from
    the names alone (their bits, ``bool`` a byte): the TUI reads sessions without NumPy."""
    total = 0
    for name, bits, dims in _TYPE.findall(text or ""):
        if bits:
            itemsize = int(bits) // 8
        elif name == "bool":
            itemsize = 1
        else:
            continue
        count = 1
        for d in dims.split(",") if dims else ():
            count *= int(d)
        total += count * itemsize
    return total
