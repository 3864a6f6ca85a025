"""Graph mode under the recorder: each compiled step's runs summed where they run (the
kernel clock), written as kernel_totals and graph_runs rows; a row per run only when asked;
new bytes only for new buffers; the stated cost from the calibration and the counts."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from execmode.profilers import store_queries
from execmode.profilers.kernel_totals import KernelTotals
from execmode.profilers.profiler_cost import profiler_cost
from execmode.profilers.recorder import Recorder
from execmode.profilers.session import open_session
from execmode.profilers.store_queries import CostCounts

import execmode as em
from execmode import kernel_clock


def _mlp():
    em.random.seed(0)
    # Inference: with parameters that require grad, the forward would also return what
    # its backward graph reads (jit_driver/backward.py), new memory at every call.
    net = em.nn.MLP([32, 16, 4]).requires_grad_(False)
    return em.jit(net), em.randn(2, 32)


def test_every_run_is_summed_and_no_row_per_run_is_written(tmp_path):
    step, x = _mlp()
    step(x)  # compiled before recording: only the recorded runs count
    path = tmp_path / "s.emsession"
    with Recorder(path, calibrate=False):
        for _ in range(25):
            step(x)
    with open_session(path) as s:
        assert s.count("kernels") == 0
        (runs, graph_id) = s._query("SELECT runs, graph_id FROM graph_runs")[0]
        steps = s._query("SELECT kernel, calls, total_ns, min_ns, max_ns, bytes "
                         "FROM kernel_totals ORDER BY step_index")
        summary = s.summary()
    assert runs == 25 and graph_id.endswith("#0:0")
    assert steps and all(calls == 25 for _, calls, *_ in steps)
    assert all(0 < low <= total / 25 <= high for _, _, total, low, high, _ in steps)
    # The program's buffers are its own: only its output (2 x 4 float32) can be new memory,
    # a whole output at a time, at most once a call (its pool reuses an array nobody holds).
    *inner, last = steps
    assert all(nbytes == 0 for *_, nbytes in inner)
    assert last[-1] % (2 * 4 * 4) == 0 and last[-1] <= 25 * 2 * 4 * 4
    assert summary["kernels"] == 25 * len(steps)
    assert not kernel_clock.running()  # the recorder's stop stopped the clock


def test_results_a_caller_keeps_are_new_memory_at_every_call(tmp_path):
    step, x = _mlp()
    step(x)
    path = tmp_path / "kept.emsession"
    with Recorder(path, calibrate=False):
        kept = [step(x) for _ in range(10)]
    with open_session(path) as s:
        (nbytes,) = s._query("SELECT bytes FROM kernel_totals ORDER BY step_index DESC")[0]
    assert len(kept) == 10 and nbytes >= 9 * 2 * 4 * 4  # at most one pool array reused


def test_kernel_rows_when_asked_and_the_sums_agree_with_them(tmp_path):
    step, x = _mlp()
    step(x)
    path = tmp_path / "rows.emsession"
    with Recorder(path, calibrate=False, kernel_rows=True):
        for _ in range(5):
            step(x)
    with open_session(path) as s:
        rows = s._query("SELECT kernel, COUNT(*), SUM(bytes) FROM kernels GROUP BY kernel")
        sums = s._query("SELECT kernel, SUM(calls), SUM(bytes) FROM kernel_totals "
                        "GROUP BY kernel")
    assert rows and sorted(rows) == sorted(sums)


def test_a_view_step_allocates_nothing_and_a_new_buffer_its_bytes(tmp_path):
    x = em.randn(64, 32)
    f = em.jit(lambda x: (x.T * 2.0).sum(axis=0), backend="interpreter")
    f(x)
    path = tmp_path / "views.emsession"
    with Recorder(path, calibrate=False, kernel_rows=True):
        f(x)
        kept = [x.T, x * 2.0]  # an eager view, an eager op with a new buffer
    with open_session(path) as s:
        kernels = {k.kernel: k.bytes for k in s.kernels()}
        ops = {o.op: o.bytes for o in s.ops()}
    assert kernels["permute_dims"] == 0
    assert ops["permute_dims"] == 0 and ops["multiply"] == 64 * 32 * 4
    assert kept[0]._data.base is x._data  # it was a view


def test_the_stated_cost_multiplies_the_calibration_by_the_counts():
    calibration = {"overhead_ns": 800, "kernel_step_ns": 20, "kernel_run_ns": 150,
                   "kernel_loop_step_ns": 300, "settled": True}
    meta = {"recorder_cost_ns": {"start": 5_000_000, "stop": 100_000, "events": 2_000}}
    # 1000 eager ops; 300 kernel runs (60 timed in Python) in 100 graph runs (20 in Python)
    counts = CostCounts(1000, 300, 60, 100, 20, 0)
    cost = profiler_cost(calibration, counts, meta)
    assert cost.eager_ns == 800_000 and cost.events_ns == 2_000
    # per clock read (compiled and in Python), plus per compiled run
    assert cost.graph_ns == 20 * (240 + 80) + 150 * 80 + 300 * (60 + 20)
    assert cost.total_ns == 800_000 + cost.graph_ns + 2_000
    text = cost.text(10_000_000)
    assert "8.4% of wall time" in text and "300 kernel runs in 100 graph runs" in text
    assert "to start" in text and "busy" not in text
    # plans timed in Python at every run state their measured timing work instead
    gapped = profiler_cost(calibration, CostCounts(1000, 300, 60, 100, 20, 0, 50_000, 20, 60),
                           meta)
    assert gapped.graph_ns == 20 * (240 + 80) + 150 * 80 + 50_000
    rows = profiler_cost({"overhead_ns": 800, "kernel_row_ns": 3000, "kernel_rows": True},
                         CostCounts(10, 300, 0, 100, 0, 300), {})
    assert rows.graph_ns == 900_000  # per kernel row, not per clock read
    assert profiler_cost({}, CostCounts(10, 0, 0, 0, 0, 0), meta).total_ns is None
    unsettled = profiler_cost(dict(calibration, settled=False), CostCounts(1, 0, 0, 0, 0, 0),
                              {})
    assert "busy" in unsettled.text(1000)


def test_a_plan_timed_in_python_states_the_timing_it_measured(tmp_path):
    """A graph without a whole-graph program (``cumsum`` has no C lowering) is timed step
    by step in Python: its runs' time less its steps' is what the timing did between them,
    which the session counts and the stated cost takes as measured."""
    step = em.jit(lambda x: em.exp(em.cumsum(x, axis=1)) * 2.0 + 1.0)
    x = em.ones((4, 8))
    step(x)
    path = tmp_path / "s.emsession"
    with Recorder(path, calibrate=False):
        for _ in range(40):
            step(x)
    with open_session(path) as s:
        runs, loop_runs, total = s._query("SELECT runs, loop_runs, total_ns FROM graph_runs")[0]
        steps = s._query("SELECT SUM(total_ns), SUM(calls) FROM kernel_totals")[0]
        counts = store_queries.cost_counts(s._query)
    assert runs == loop_runs == 40  # every run in Python
    assert counts.gap_runs == 40 and counts.gap_calls == steps[1]
    assert counts.loop_gap_ns == total - steps[0] > 0
    calibration = {"overhead_ns": 0, "kernel_step_ns": 0, "kernel_run_ns": 0,
                   "kernel_loop_step_ns": 10**6}  # absurd: it must not be used here
    assert profiler_cost(calibration, counts, {}).graph_ns == counts.loop_gap_ns


def test_runs_of_a_plan_freed_while_recording_are_kept(tmp_path):
    path = tmp_path / "freed.emsession"
    x = em.randn(4, 8)
    with Recorder(path, calibrate=False):
        for _ in range(3):  # a new jitted function each time, dropped after 5 calls
            f = em.jit(lambda x: (em.exp(x) * 2.0).sum(axis=1))
            for _ in range(5):
                f(x)
            del f
            gc.collect()
    with open_session(path) as s:
        (runs,) = s._query("SELECT SUM(runs) FROM graph_runs")[0]
    assert runs == 15


def test_the_final_sums_are_not_overwritten_by_a_late_periodic_drain():
    totals = KernelTotals()
    step, x = _mlp()
    timer = type("Timer", (), {"wants_kernel_times": True})()
    kernel_clock.want(timer)
    try:
        step(x)
        written: list = []
        totals.drain(written.extend, final=True)
        totals.drain(written.extend)  # after the final drain: nothing more
        assert written and all(row.calls == 1 for row in written if hasattr(row, "step_index"))
        step(x)
        late: list = []
        totals.drain(late.extend)
        assert late == []
    finally:
        kernel_clock.release(timer)


@pytest.mark.parametrize("calls", [1, 3])
def test_a_one_step_plan_times_its_step_in_the_fast_entry(tmp_path, calls):
    a = em.tensor(np.ones(8, np.float32))
    f = em.jit(lambda a: em.exp(a) * 2.0)
    f(a)
    path = tmp_path / "one.emsession"
    with Recorder(path, calibrate=False):
        for _ in range(calls):
            f(a)
    with open_session(path) as s:
        (total,) = s._query("SELECT SUM(calls) FROM kernel_totals")[0]
    assert total == calls


def test_the_json_and_csv_exports_carry_the_kernel_sums(tmp_path):
    import csv
    import json

    from execmode.profilers.exporters.csv_tables import export_csv
    from execmode.profilers.exporters.session_json import export_json

    step, x = _mlp()
    step(x)
    path = tmp_path / "e.emsession"
    with Recorder(path, calibrate=False):
        for _ in range(4):
            step(x)
    with open_session(path) as s:
        data = json.loads(export_json(s, tmp_path / "e.json").read_text())
        table = export_csv(s, tmp_path / "e.csv", table="kernel_totals")
    assert data["kernel_totals"] and all(k["calls"] == 4 for k in data["kernel_totals"])
    assert [r["runs"] for r in data["graph_runs"]] == [4]
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["kernel"] for r in rows] == [k["kernel"] for k in data["kernel_totals"]]


def test_eager_ops_are_stated_by_the_path_they_took_and_their_new_sites():
    calibration = {"overhead_ns": 400, "site_ns": 2_000,
                   "op_path_ns": {"binary0": 300, "binary1": 400, "general1": 350,
                                  "general2": 600}}
    meta = {"recorded": {"ring_ops": {"binary": [10, 20, 0], "general": [0, 30, 40]},
                         "ring_sites": 5}}
    # 100 ops: 100 in the ring, none on the Python path
    cost = profiler_cost(calibration, CostCounts(100, 0, 0, 0, 0, 0), meta)
    assert cost.eager_ns == 10 * 300 + 20 * 400 + 30 * 350 + 40 * 600 + 5 * 2_000
    # 10 more ops took the Python path (another thread): at its cost, else the costliest
    more = profiler_cost(calibration, CostCounts(110, 0, 0, 0, 0, 0), meta)
    assert more.eager_ns == cost.eager_ns + 10 * 600
    python = dict(calibration, op_path_ns=dict(calibration["op_path_ns"], python=3_000))
    assert profiler_cost(python, CostCounts(110, 0, 0, 0, 0, 0), meta).eager_ns \
        == cost.eager_ns + 10 * 3_000
    # ops that waited for the writer: measured, stated as it is
    waited = dict(meta, recorded=dict(meta["recorded"], ring_waited_ns=5_000_000))
    assert profiler_cost(calibration, CostCounts(100, 0, 0, 0, 0, 0), waited).total_ns \
        == cost.eager_ns + 5_000_000
    assert "5 ms waiting for the session writer" in \
        profiler_cost(calibration, CostCounts(100, 0, 0, 0, 0, 0), waited).text(10**8)
    # a path the calibration could not measure here (no C operators) at the costliest too
    no_c = dict(calibration, op_path_ns=dict(calibration["op_path_ns"], binary0=None))
    assert profiler_cost(no_c, CostCounts(100, 0, 0, 0, 0, 0), meta).eager_ns \
        == cost.eager_ns + 10 * (600 - 300)
    # a session without counts by path (older, or no ring): every op at the mean
    assert profiler_cost(calibration, CostCounts(100, 0, 0, 0, 0, 0), {}).eager_ns == 40_000
