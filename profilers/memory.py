"""Live and peak bytes per device over time, for the eager tensors created while recording.

Each op output that allocated memory gets a weak reference whose callback subtracts its
bytes when the array is freed (weakref.ref subclass with slots: ~0.4 us per tracked array
for the pair of events, against ~0.55 us for weakref.finalize and a registry). The array,
not the Tensor, is tracked: several tensors may share one buffer (detach, saved outputs),
and the memory is live until the last of them goes. On CUDA devices the live figure comes
from CuPy's memory pool instead, which also sees the allocator's own caching.

What is counted: outputs of ops that ran while the tracker listened. Tensors created
before, and NumPy arrays the user wraps with ``em.tensor``, are not (the first is the
"baseline"; reports say so).
"""

from __future__ import annotations

import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field

from execmode.profilers.writer import MemorySample

from execmode import instrument

DEFAULT_INTERVAL_NS = 1_000_000  # at most one memory row per device per ms of activity

_perf_ns = time.perf_counter_ns


class _Ref(weakref.ref):
    """A weak reference that remembers what to subtract when its array dies."""

    __slots__ = ("key", "nbytes", "mem")


class DeviceMemory:
    """Running counters of one device."""

    __slots__ = ("name", "live", "peak", "window", "pool")

    def __init__(self, name: str, pool=None):
        self.name = name
        self.live = 0
        self.peak = 0
        self.window = 0  # the peak since the innermost open region began
        self.pool = pool


@dataclass
class Region:
    """The peak live bytes of a region of code, per device (see :meth:`MemoryTracker.region`)."""

    start_bytes: dict[str, int] = field(default_factory=dict)
    peak_bytes: dict[str, int] = field(default_factory=dict)
    end_bytes: dict[str, int] = field(default_factory=dict)

    def peak_above_start(self, device: str | None = None) -> int:
        """Peak minus the live bytes at entry: what the region itself needed at most.

        ``device=None`` picks the device with the largest value.
        """
        deltas = {d: self.peak_bytes[d] - self.start_bytes.get(d, 0) for d in self.peak_bytes}
        if device is not None:
            return deltas.get(device, 0)
        return max(deltas.values(), default=0)


class MemoryTracker:
    """Tracks op outputs' memory; an instrumentation listener in its own right.

    ``emit`` receives :class:`~execmode.profilers.writer.MemorySample` rows, at most one
    per ``interval_ns`` while memory changes, and one on :meth:`sample_now`.
    """

    def __init__(self, emit=None, interval_ns: int = DEFAULT_INTERVAL_NS):
        self._emit = emit
        self._interval = interval_ns
        self._last_emit = 0
        self._entries: dict[int, _Ref] = {}
        self._devices: dict[int, tuple] = {}  # id(Device) -> (Device, DeviceMemory)
        self._native = None  # the CPU's counters in C, when adopted (adopt_native_cpu)
        self._freed = self._on_freed  # one bound method for every reference

    @property
    def interval_ns(self) -> int:
        """The least time between two memory rows while memory changes (0: a row per
        change)."""
        return self._interval

    @interval_ns.setter
    def interval_ns(self, value: int) -> None:
        self._interval = int(value)
        if self._native is not None:
            self._native.interval = self._interval

    # --- listener protocol ----------------------------------------------------------------
    def on_op(self, ev, output) -> None:
        nbytes = ev.bytes_allocated
        if not nbytes:
            return
        device = ev.output[2]
        entry = self._devices.get(id(device))
        mem = entry[1] if entry is not None else self._add_device(device)
        if mem.pool is not None:
            self._update_from_pool(mem, ev.end_ns)
            return
        if mem is self._native:
            mem.track(output._data, nbytes, ev.end_ns)
            return
        data = output._data
        key = id(data)
        if key in self._entries:  # an op handed back an array already counted
            return
        try:
            ref = _Ref(data, self._freed)
        except TypeError:  # an array type without weak references: not tracked
            return
        ref.key = key
        ref.nbytes = nbytes
        ref.mem = mem
        self._entries[key] = ref
        live = mem.live = mem.live + nbytes
        if live > mem.window:
            mem.window = live
            if live > mem.peak:
                mem.peak = live
        if ev.end_ns - self._last_emit >= self._interval:
            self._sample(ev.end_ns)

    def _on_freed(self, ref: _Ref) -> None:
        if self._entries.pop(ref.key, None) is None:
            return
        ref.mem.live -= ref.nbytes
        if self._emit is not None:
            now = _perf_ns()
            if now - self._last_emit >= self._interval:
                self._sample(now)

    # --- state ----------------------------------------------------------------------------
    def live_bytes(self, device: str = "cpu") -> int:
        return next((m.live for _, m in self._devices.values() if m.name == device), 0)

    def peak_bytes(self, device: str = "cpu") -> int:
        return next((m.peak for _, m in self._devices.values() if m.name == device), 0)

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """{device: (live_bytes, peak_bytes)}."""
        return {m.name: (m.live, m.peak) for _, m in self._devices.values()}

    @property
    def native_cpu(self):
        """The CPU's counters in C (a CpuMemory, see adopt_native_cpu), or None."""
        return self._native

    def adopt_native_cpu(self, counters) -> bool:
        """Count the CPU device in ``counters``, a ``CpuMemory`` of the recorder's op ring
        (native.py): the ring counts each op output there in C, with the same rules as
        :meth:`on_op`, and so does ``on_op`` from then on. Only before anything was counted
        on the CPU; returns whether it was adopted."""
        from execmode.backend import CPU

        if id(CPU) in self._devices:
            return False
        counters.last_emit = self._last_emit
        self._devices[id(CPU)] = (CPU, counters)
        self._native = counters
        return True

    def sample_now(self) -> None:
        """Emit a row per device now (at the start and end of a recording)."""
        self._sample(_perf_ns())

    @contextmanager
    def region(self):
        """``with tracker.region() as r:`` records the peak live bytes inside the block."""
        saved = {}
        region = Region()
        for _, mem in self._devices.values():
            saved[mem.name] = mem.window
            region.start_bytes[mem.name] = mem.live
            mem.window = mem.live
        try:
            yield region
        finally:
            for _, mem in self._devices.values():
                region.peak_bytes[mem.name] = max(mem.window, region.start_bytes.get(mem.name, 0))
                region.end_bytes[mem.name] = mem.live
                # The enclosing region saw this peak too.
                mem.window = max(saved.get(mem.name, 0), mem.window)

    # --- internals ------------------------------------------------------------------------
    def _add_device(self, device) -> DeviceMemory:
        pool = _cuda_pool() if getattr(device, "is_cuda", False) else None
        mem = DeviceMemory(str(device), pool)
        self._devices[id(device)] = (device, mem)  # holding the Device keeps its id unique
        return mem

    def _update_from_pool(self, mem: DeviceMemory, ts: int) -> None:
        live = mem.pool.used_bytes()
        mem.live = live
        if live > mem.window:
            mem.window = live
            if live > mem.peak:
                mem.peak = live
        if ts - self._last_emit >= self._interval:
            self._sample(ts)

    def _sample(self, ts: int) -> None:
        self._last_emit = ts
        if self._native is not None:
            self._native.last_emit = ts
        if self._emit is None:
            return
        for _, mem in self._devices.values():
            source = "pool" if mem.pool is not None else "eager"
            self._emit(MemorySample(ts, mem.name, mem.live, mem.peak, source))


def _cuda_pool():
    from execmode.backend import cupy_module

    cp = cupy_module()
    return cp.get_default_memory_pool() if cp is not None else None


@contextmanager
def track():
    """``with track() as region:`` measures eager memory in a block without a recorder."""
    tracker = MemoryTracker()
    with instrument.listening(tracker), tracker.region() as region:
        yield region


def eager_peak(fn, *args, device: str | None = None, **kwargs) -> int:
    """The peak bytes of live eager tensors that ``fn(*args, **kwargs)`` needed at once,
    above what was live when it started (the figure the graph's memory planner compares
    its planned peak with). Returns bytes; ``fn``'s result is discarded."""
    with track() as region:
        fn(*args, **kwargs)
    return region.peak_above_start(device)
