"""The recorder: real eager ops and hand-made graph-mode events into a real session."""

from __future__ import annotations

import gc
import math
import sys

import pytest
from execmode.profilers.recorder import Recorder, start_recording
from execmode.profilers.session import open_session
from profiler_fixtures import fixed_events

import execmode as em
from execmode import instrument


def _line() -> int:
    return sys._getframe(1).f_lineno


def test_eager_ops_are_recorded_with_shapes_scopes_and_lines(tmp_path):
    path = tmp_path / "ops.emsession"
    x = em.ones(8, 16)
    w = em.ones(16, 4)
    with Recorder(path, calibrate=False) as rec:
        with em.named_scope("layer"):
            y = x @ w; matmul_line = _line()  # noqa: E702 - the op and its line together
        z = em.sum(y * 2.0, axis=1); sum_line = _line()  # noqa: E702
        assert rec.flush()
        with open_session(path) as live:  # readable before the recording ends
            assert live.count("op_events") == 3
    del z
    with open_session(path) as s:
        ops = list(s.ops())
        assert [o.op for o in ops] == ["matmul", "multiply", "sum"]
        matmul, mul, total = ops
        assert (matmul.inputs, matmul.output, matmul.scope) == \
            ("f32[8,16], f32[16,4]", "f32[8,4]", "layer")
        assert (matmul.file, matmul.line) == (__file__, matmul_line)
        assert mul.inputs == "f32[8,4], 2.0" and mul.scope == ""
        assert total.attrs and "axis" in total.attrs and total.line == sum_line
        assert matmul.bytes == 8 * 4 * 4
        assert all(o.v_nan is None for o in ops)  # no summaries unless asked
        assert s.meta["options"] == {"summaries": False, "memory": True, "calibrate": False,
                                     "kernel_rows": False}
        assert s.meta["recorded"]["ops"] == 3 and s.meta["recorded"]["devices"] == ["cpu"]
        assert s.status == "finished" and s.meta["end_ns"] >= s.t0_ns


def test_value_summaries(tmp_path):
    path = tmp_path / "summaries.emsession"
    x = em.tensor([-1.0, 0.0, 1.0, 4.0])
    with Recorder(path, summaries=True, calibrate=False):
        y = em.log(x)  # nan, -inf, 0, log 4
        em.greater(y, 0.5)
        em.tensor([1, 2, 3]) + 1
    with open_session(path) as s:
        log, greater, *rest = s.ops()
        assert (log.v_nan, log.v_inf) == (1, 1)
        # min and max see the -inf (as the debugger's summary does); the mean is finite.
        assert log.v_min == -math.inf and log.v_max == pytest.approx(math.log(4))
        assert log.v_mean == pytest.approx(math.log(4) / 2)
        assert (greater.v_min, greater.v_max, greater.v_mean) == (0.0, 1.0, 0.25)
        add = rest[-1]
        assert (add.v_min, add.v_max, add.v_nan) == (2.0, 4.0, 0)


def test_graph_mode_events_land_in_their_tables(tmp_path):
    path = tmp_path / "events.emsession"
    with Recorder(path, calibrate=False) as rec:
        for event in fixed_events():
            instrument.emit(event)
        rec.mark("checkpoint", "half way")
        rec.record_comparison(function="f", graph_id="f#0", kernel="k0", step_kind="fused",
                              eager_ops=["add", "mul"], eager_ns=3000, kernel_ns=1000,
                              eager_bytes=800, planned_bytes=0, repeat=5, rounds=7,
                              verdict="3.00x")
    with open_session(path) as s:
        assert [k.kernel for k in s.kernels()] == ["matmul0", "k0"]
        counts = s.event_counts()
        assert counts == {"compile": 1, "graph": 1, "graph_break": 1, "mark": 2,
                          "memory_plan": 1, "pass": 2, "retrace": 1, "trace": 1}
        trace = s.events("trace")[0].data
        assert trace["location"]["lineno"] == 30 and trace["node_count"] == 7
        assert s.events("graph")[0].data["ir_json"] == {"nodes": [{"id": 0, "op": "matmul"}]}
        assert [m.source for m in s.memory()].count("graph") == 1
        (c,) = s.comparisons()
        assert (c.eager_ops, c.eager_count, c.speedup, c.repeat) == (["add", "mul"], 2, 3.0, 5)
        assert (c.rounds, c.speedup_text()) == (7, "3.00x")


def test_calibration_is_stored(tmp_path):
    with Recorder(tmp_path / "cal.emsession") as rec:
        em.ones(3) + 1
    cal = rec.calibration
    assert cal["ops"] > 0 and cal["recorder_ns"] > 0 and cal["no_listener_ns"] > 0
    assert cal["overhead_ns"] == pytest.approx(cal["recorder_ns"] - cal["no_listener_ns"], abs=1)
    with open_session(rec.path) as s:
        assert s.meta["calibration"] == cal
        assert s.count("op_events") == 2  # the calibration's own ops went elsewhere
        # em.ones is run_eager's op; `+ 1` an operator, Python or C by how hot they are
        recorded = s.meta["recorded"]
        by_path = recorded["ring_ops"]
        assert sum(by_path["binary"]) == 1 and by_path["general"] == [0, 0, 1]
        binary = cal["op_path_ns"][f"binary{by_path['binary'].index(1)}"]
        assert recorded["ring_sites"] == 2
        assert s.summary()["profiler_ns"] == pytest.approx(
            binary + cal["op_path_ns"]["general2"] + 2 * cal["site_ns"])


def test_calibration_is_skipped_beside_other_listeners(tmp_path):
    class Other:
        def on_op(self, ev, out):
            pass

    with instrument.listening(Other()), Recorder(tmp_path / "skip.emsession") as rec:
        pass
    assert "skipped" in rec.calibration


def test_start_recording_for_script_runners(tmp_path):
    rec = start_recording(tmp_path / "agent.emsession", script="train.py", argv=["--fast"],
                          calibrate=False)
    em.ones(2) * 3
    rec.flush()
    rec.close(status="ok", code=0)
    with open_session(rec.path) as s:
        assert s.meta["argv"] == ["train.py", "--fast"]
        assert s.meta["exit"]["kind"] == "normal"
        assert s.count("op_events") == 2
    assert not instrument.listeners()


def test_the_script_starts_with_no_full_collection_due(tmp_path):
    # Whether a full collection (milliseconds on the engine's heap) falls inside a short
    # script's recording must not depend on the process's history: the start collects
    # every generation, so the oldest generation's count of younger collections is zero.
    for _ in range(3):  # a middle-generation collection counts toward the next full one
        gc.collect(1)
    assert gc.get_count()[2] > 0
    rec = Recorder(tmp_path / "gc.emsession", calibrate=False).start()
    try:
        assert gc.get_count()[2] == 0
    finally:
        rec.close()


def test_values_are_unchanged_by_recording(tmp_path):
    def work():
        em.random.seed(3)
        x = em.randn(16, 16)
        return (em.softmax(x @ x.T, axis=-1) * 2).numpy()

    plain = work()
    with Recorder(tmp_path / "same.emsession", summaries=True, calibrate=False):
        recorded = work()
    assert (plain == recorded).all()


def test_an_inf_summary_survives_the_store_and_the_json_exports(tmp_path):
    import json

    from execmode.profilers.exporters import chrome

    path = tmp_path / "inf.emsession"
    x = em.tensor([1.0, 1000.0])
    with Recorder(path, summaries=True, calibrate=False):
        em.exp(x)
    with open_session(path) as s:
        (exp,) = s.ops()
        assert exp.v_min == pytest.approx(math.e) and (exp.v_max, exp.v_inf) == (math.inf, 1)
    out = tmp_path / "trace.json"
    with open_session(path) as s:
        chrome.export_chrome(s, out)
    text = out.read_text()
    assert "Infinity" not in text                     # strict JSON: Perfetto reads it
    (event,) = [e for e in json.loads(text)["traceEvents"] if e.get("name") == "exp"]
    assert event["args"]["summary"]["max"] == "inf"
    from execmode.profilers.exporters import session_json

    with open_session(path) as s:
        session_json.export_json(s, tmp_path / "session.json")
    text = (tmp_path / "session.json").read_text()
    assert "Infinity" not in text
    assert json.loads(text)["ops"][0]["v_max"] == "inf"
