"""Live and peak bytes of eager tensors, per device, and the eager peak of a region."""

from __future__ import annotations

import gc

from execmode.profilers.memory import MemoryTracker, eager_peak, track
from execmode.profilers.recorder import Recorder
from execmode.profilers.session import open_session

import execmode as em
from execmode import instrument

N = 1000  # float32 elements: 4000 bytes per tensor


def test_live_and_peak_follow_allocations_and_frees():
    tracker = MemoryTracker()
    with instrument.listening(tracker):
        a = em.ones(N)
        b = a + 1
        c = b * 2
        assert tracker.live_bytes() == 3 * 4 * N
        del b
        gc.collect()
        assert tracker.live_bytes() == 2 * 4 * N
        d = em.reshape(c, (10, 100))  # a view: no new memory
        assert tracker.live_bytes() == 2 * 4 * N
    assert tracker.peak_bytes() == 3 * 4 * N
    del a, c, d
    gc.collect()
    assert tracker.live_bytes() == 0  # frees are seen after the listener is gone too
    assert tracker.snapshot() == {"cpu": (0, 3 * 4 * N)}


def test_an_array_shared_by_tensors_counts_until_the_last_one_goes():
    tracker = MemoryTracker()
    with instrument.listening(tracker):
        a = em.ones(N) + 0
        alias = a.detach()  # same buffer
    del a
    gc.collect()
    assert tracker.live_bytes() == 4 * N
    del alias
    gc.collect()
    assert tracker.live_bytes() == 0


def test_region_peaks_nest():
    tracker = MemoryTracker()
    with instrument.listening(tracker):
        keep = em.ones(N)
        with tracker.region() as outer:
            t = em.ones(N) * 2  # two arrays alive for a moment: ones and the product
            del t
            with tracker.region() as inner:
                u = em.ones(N)
                del u
    assert outer.start_bytes == {"cpu": 4 * N}
    assert outer.peak_above_start() == 2 * 4 * N
    assert inner.peak_above_start() == 4 * N
    assert inner.peak_bytes["cpu"] == 2 * 4 * N
    del keep


def test_eager_peak_of_a_function():
    def three_alive():
        a = em.ones(N)
        b = a + 1
        c = b + 1
        return a, b, c

    def one_at_a_time():
        x = em.ones(N)
        for _ in range(5):
            x = x + 1
        return x

    assert eager_peak(three_alive) == 3 * 4 * N
    assert eager_peak(one_at_a_time) == 2 * 4 * N  # x and x + 1 overlap for an instant
    with track() as region:
        em.ones(N)
    assert region.peak_above_start("cpu") == 4 * N


def test_memory_rows_in_the_session(tmp_path):
    path = tmp_path / "mem.emsession"
    with Recorder(path, calibrate=False) as rec:
        rec.memory.interval_ns = 0  # a row per change, so the rows are exact
        a = em.ones(N)
        b = a * 3
        del a, b
        gc.collect()
    with open_session(path) as s:
        rows = s.memory()
        lives = [r.live_bytes for r in rows]
        assert max(lives) == 2 * 4 * N and lives[-1] == 0
        assert rows[-1].peak_bytes == 2 * 4 * N
        assert {r.device for r in rows} == {"cpu"} and {r.source for r in rows} == {"eager"}
        assert s.peak_memory() == {"cpu": 2 * 4 * N}
