"""What an op over more data than the core's cache adds to the stated profiler cost
(profilers/calibration_cold.py): how bytes are read from a session, interpolated and
stated. Invariants only; the calibration's numbers are the benchmark's to judge."""

from __future__ import annotations

import pytest
from execmode.profilers import calibration_cold, store_queries
from execmode.profilers.calibration_cold import MIN_BYTES, extra_ns, extra_points, type_bytes
from execmode.profilers.profiler_cost import profiler_cost
from execmode.profilers.recorder import Recorder
from execmode.profilers.session import open_session
from execmode.profilers.store_queries import CostCounts

import execmode as em


@pytest.mark.parametrize(("text", "nbytes"), [
    ("f32[64,512], f32[512,256]", 4 * (64 * 512 + 512 * 256)),
    ("f32[100000], 0.5", 400_000),           # a Python scalar moves nothing
    ("f64[]", 8),                            # a 0-d tensor is one element
    ("bool[10], i64[3]", 10 + 24),
    ("float16[4]", 8),                       # a dtype outside the short names
    ("f32[?]", 0), ("", 0), ("nonsense[3]", 0), ("c128[2]", 32), ("u8[3], i16[2]", 7),
])
def test_a_rows_types_give_the_bytes_of_its_tensors(text, nbytes):
    assert type_bytes(text) == nbytes


def test_the_extra_is_interpolated_from_zero_and_held_beyond_the_largest_size():
    points = [[1000, 100], [2000, 400], [4000, 500]]
    assert extra_ns(points, 0) == 0 and extra_ns(points, -5) == 0
    assert extra_ns(points, 500) == pytest.approx(50)
    assert extra_ns(points, 1500) == pytest.approx(250)
    assert extra_ns(points, 4000) == extra_ns(points, 10**9) == 500
    assert extra_ns([], 10**9) == 0


def test_the_points_are_the_warm_ops_difference_removed_and_never_falling():
    # (recorded - plain) per op by size swept: noise made 4 MB cheaper than 2 MB
    points = extra_points({0: 300.0, 1 << 20: 2300.0, 2 << 20: 6300.0, 4 << 20: 5000.0})
    assert points == [[1 << 20, 2000], [2 << 20, 6000], [4 << 20, 6000]]
    # a warm difference measured below zero is noise, not a discount on the others
    assert extra_points({0: -200.0, 1 << 20: 100.0}) == [[1 << 20, 100]]
    assert extra_points({0: 500.0, 1 << 20: 100.0}) == [[1 << 20, 0]]


def test_the_sizes_swept_are_around_the_cores_cache():
    l2 = calibration_cold.core_cache_bytes()
    assert l2 > 0
    assert calibration_cold.sizes() == tuple(int(f * l2) for f in calibration_cold.FRACTIONS)
    assert calibration_cold.sizes()[0] == 0 and max(calibration_cold.sizes()) > l2


def test_a_session_counts_the_bytes_its_allocating_cpu_ops_moved(tmp_path):
    big, small = em.ones(100_000), em.ones(8)
    path = tmp_path / "s.emsession"
    with Recorder(path, calibrate=False):
        for _ in range(3):
            big + big          # 3 x 400 KB moved
        em.exp(big)            # 2 x 400 KB
        big.reshape(1000, 100)  # a view: allocates nothing, moves nothing
        small * 2.0            # under MIN_BYTES
    with open_session(path) as s:
        counts = store_queries.cost_counts(s._query)
    assert counts.op_bytes == ((1_200_000, 3), (800_000, 1))
    assert all(nbytes >= MIN_BYTES for nbytes, _ in counts.op_bytes)


def test_the_stated_cost_adds_each_ops_extra_for_the_bytes_it_moved():
    calibration = {"overhead_ns": 100, "kernel_step_ns": 0, "kernel_run_ns": 0,
                   "kernel_loop_step_ns": 0, "settled": True,
                   "cold_op_ns": [[1_000_000, 2_000], [2_000_000, 6_000]]}
    counts = CostCounts(10, 0, 0, 0, 0, 0, op_bytes=((3_000_000, 2), (500_000, 4)))
    cost = profiler_cost(calibration, counts, {})
    assert cost.cold_ns == 2 * 6_000 + 4 * 1_000 and cost.cold_ops == 6
    assert cost.total_ns == 10 * 100 + cost.cold_ns
    text = cost.text(10**9)
    assert "6 of those ops" in text and "CPU's cache" in text
    # An older calibration, or one whose points are malformed, states nothing for it.
    for points in (None, [], [["a", 1]], [[0, 5]], [[1000]], "x"):
        cost = profiler_cost(dict(calibration, cold_op_ns=points), counts, {})
        assert cost.cold_ns is None and cost.total_ns == 1000
        assert "CPU's cache" not in cost.text(10**9)
