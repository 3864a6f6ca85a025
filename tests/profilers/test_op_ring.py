"""The recorder's op ring (profilers/native.py): eager ops written as five integers in C,
their sites formatted once, the rows inserted by the writer thread. A session must read
the same whichever path recorded an op: every column but the timings, every memory row,
for a script that mixes what the ring records with what it hands to the Python path."""

from __future__ import annotations

import contextlib
import sqlite3
import threading

import numpy as np
import pytest
from execmode.profilers import native
from execmode.profilers.recorder import Recorder
from execmode.profilers.session import open_session

import execmode as em
import execmode.nn.functional as F
from execmode import dispatch, instrument
from execmode._tensor import Tensor
from execmode.codegen import eager_operators

pytestmark = pytest.mark.skipif(native.load() is None,
                                reason=f"no op ring extension: {native.status()['reason']}")


def _helper(x):
    return em.exp(x) * 0.5  # ops whose line is in another function


def _worker(x, out):
    out.append(em.tanh(x) + 1.0)  # another thread: the Python path, tagged with its number


def _mixed_script():
    x = em.ones(8, 16)
    w = em.ones(16, 4)
    y = x @ w
    z = y * 2.0 + 1  # operators with a float and an int
    z = z * True - (-0.0)
    z = z - np.float32(0.5)  # a NumPy scalar: the ring hands it to the Python path
    with em.named_scope("block"), em.named_scope("inner"):
        s = em.sum(z, axis=1)  # attrs
        m = em.mean(z, axis=(0, 1), keepdims=True)
    r = em.reshape(x, (16, 8))  # a view: no bytes allocated
    c = em.astype(x, "float64")  # a dtype attribute
    t = x[1:3]  # a slice attribute: the Python path
    big = y * (2 ** 70)  # an int beyond int64: the Python path
    h = _helper(r)
    p = F.softmax(x, axis=-1)  # a scoped composite: its ops' lines are ours
    results = []
    thread = threading.Thread(target=_worker, args=(x, results), name="worker")
    thread.start()
    thread.join()
    for _ in range(20):  # the same sites again: rows enough for multi-row inserts
        y = x @ w
        y = y + y
    f = em.jit(lambda u: em.tanh(u * 2.0) + 1.0)  # graph-mode events and kernel rows too
    for _ in range(3):
        f(x)
    del z, s, m, r, c, t, big, h, p, results, y


def _record(path, monkeypatch, *, ring: str):
    """Record the mixed script with ``ring`` "off", "sqlite" (the C writer) or "rows"."""
    with monkeypatch.context() as patch:
        if ring == "off":
            patch.setenv("EXECMODE_NATIVE_RECORDER", "0")
        elif ring == "rows":
            patch.setattr(native, "sqlite_library", lambda: None)
        rec = Recorder(path, calibrate=False)
        rec.memory.interval_ns = 0  # a memory row per change: the rows compare exactly
        with rec:
            expected = {"off": "python (EXECMODE_NATIVE_RECORDER=0)",
                        "sqlite": "ring (C writer)", "rows": "ring (Python rows)"}[ring]
            assert rec.op_path == expected
            assert (dispatch._native_general is not None) == (ring != "off")
            _mixed_script()
            stats = [r.ring.stats() for r in rec.writer._rings]
    return stats


def _contents(path) -> dict:
    conn = sqlite3.connect(path)
    try:
        ops = conn.execute(
            "SELECT seq, op, scope, file, line, function, bytes, inputs, output, device, "
            "attrs, v_min, v_max, v_mean, v_std, v_nan, v_inf, thread FROM ops ORDER BY seq"
        ).fetchall()
        first = ops[0][0]
        memory = conn.execute(
            "SELECT device, live_bytes, peak_bytes, source FROM memory ORDER BY id").fetchall()
        meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('threads')"))
        events = conn.execute("SELECT kind, graph_id FROM events ORDER BY id").fetchall()
        # Locations are interned: their ids may be numbered in another order (the ring's
        # sites are formatted when the writer drains them), what they name is the same.
        # The kernel clock's sums (per-run rows only with kernel_rows), without their
        # times and the plans' process-wide clock numbers.
        kernels = conn.execute(
            "SELECT graph_id, step_index, kernel, step_kind, member_nodes, member_ops, calls, "
            "bytes, output, device, scope, l.file, l.line, l.function FROM kernel_totals AS k "
            "LEFT JOIN locations AS l ON l.id = k.location "
            "ORDER BY graph_id, step_index").fetchall()
        locations = conn.execute("SELECT file, line, function FROM locations").fetchall()
    finally:
        conn.close()
    with open_session(path) as s:
        # Which path took the ops, and the ring's counts of them by path, differ by path.
        recorded = {k: v for k, v in s.meta["recorded"].items()
                    if k not in ("op_path", "ring_ops", "ring_sites", "ring_waited_ns")}
        ring_counts = (s.meta["recorded"].get("ring_ops"), s.meta["recorded"].get("ring_sites"))
    return {"ops": [(seq - first, *rest) for seq, *rest in ops], "memory": memory,
            "meta": meta, "recorded": recorded, "events": events, "kernels": kernels,
            "locations": sorted(locations), "ring_counts": ring_counts}


@contextlib.contextmanager
def _operators(kind):
    """Tensor's + - * / as "python" (dispatch.make_operator) or "c" (eager_operators)."""
    em.tensor(0.0)  # the engine loaded: its operators, not _tensor.py's placeholders, saved
    before = {name: Tensor.__dict__[name] for name in eager_operators.operator_names()}
    if eager_operators.install(Tensor, native=kind == "c") != (kind == "c"):
        pytest.skip(f"no C operators: {eager_operators.extension_status()['reason']}")
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(Tensor, name, value)


@pytest.mark.parametrize(("ring", "operators"), [("sqlite", "python"), ("rows", "python"),
                                                 ("sqlite", "c"), ("rows", "c"), ("off", "c")])
def test_both_paths_store_the_same_session(tmp_path, monkeypatch, ring, operators):
    with _operators("python"):
        python = _contents_of(tmp_path / "python.emsession", monkeypatch, "off")
    with _operators(operators):  # the C operators hand ops to the ring or to Python
        stats = _record(tmp_path / "ring.emsession", monkeypatch, ring=ring)
    native_ = _contents(tmp_path / "ring.emsession")
    ring_ops, ring_sites = native_.pop("ring_counts")
    assert python.pop("ring_counts") == (None, None)  # no ring: no counts by its paths
    assert native_ == python
    if ring == "off":
        return
    # Both paths were taken: the ring recorded most ops and declined the odd ones.
    assert stats[0]["sites"] >= 10 and stats[0]["declined"] >= 3
    # The ring counted what it recorded, by entry and by execmode's frames passed: the
    # operators from C pass none, from Python one; run_eager's ops two.
    assert ring_sites == stats[0]["sites"]
    assert stats[0]["recorded"] == {entry: tuple(n) for entry, n in ring_ops.items()}
    assert sum(map(sum, ring_ops.values())) + stats[0]["declined"] == len(python["ops"])
    assert ring_ops["binary"][0 if operators == "c" else 1] > 0 and ring_ops["general"][2] > 0
    ops = python["ops"]
    assert len(ops) > 30 and any(row[-1] == 1 for row in ops)  # the worker's op
    assert {row[2] for row in ops} >= {"", "block/inner", "softmax"}
    assert any(row[6] == 0 for row in ops)  # the view
    assert python["memory"] and python["memory"][-1][1] < max(m[1] for m in python["memory"])
    assert {"trace", "compile"} <= {kind for kind, _ in python["events"]}
    assert sum(row[6] for row in python["kernels"]) >= 3  # kernel runs


def _contents_of(path, monkeypatch, ring):
    _record(path, monkeypatch, ring=ring)
    return _contents(path)


def test_a_full_ring_waits_for_the_writer_and_says_how_long(tmp_path, monkeypatch):
    monkeypatch.setattr(native, "CAPACITY", 64)
    path = tmp_path / "full.emsession"
    a = em.ones(4)
    with Recorder(path, calibrate=False) as rec:
        ring = rec.writer._rings[0].ring
        for _ in range(2000):
            a + a
        assert rec.flush()
        stats = ring.stats()
        # the writer could not keep 64 records free: the script waited, no op left the ring
        assert stats["declined"] == 0 and stats["waited_ns"] > 0
    with open_session(path) as s:
        seqs = [o.seq for o in s.ops()]
        assert len(seqs) == 2000 and seqs == sorted(seqs) and len(set(seqs)) == 2000
        assert s.meta["recorded"]["ops"] == 2000
        assert s.meta["recorded"]["ring_waited_ns"] == stats["waited_ns"]
        assert s.summary()["profiler_cost"].waited_ns == stats["waited_ns"]


def test_a_flush_commits_every_op_recorded_before_it(tmp_path):
    path = tmp_path / "flush.emsession"
    a = em.ones(4)
    done = 0
    with Recorder(path, calibrate=False, memory=False) as rec, open_session(path) as reader:
        for n in (1, 7, 500, 40_000, 3):
            for _ in range(n):
                em.exp(a)
            done += n
            assert rec.flush()
            assert reader.count("op_events") == done
            assert rec.writer.backlog() == 0


def test_ops_after_the_last_flush_are_written_at_close(tmp_path):
    path = tmp_path / "close.emsession"
    a = em.ones(4)
    rec = Recorder(path, calibrate=False).start()
    for _ in range(1000):
        a * 2.0
    rec.close()  # no flush before: close writes what the ring holds, then the end stamps
    with open_session(path) as s:
        assert s.count("op_events") == 1000 and s.meta["recorded"]["ops"] == 1000
        assert s.status == "finished"


def test_a_session_that_reaches_its_cap_is_partial_and_the_script_goes_on(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("EXECMODE_SESSION_MAX_MB", "0.25")
    path = tmp_path / "capped.emsession"
    a = em.ones(4)
    with Recorder(path, calibrate=False, memory=False) as rec:
        for _ in range(10):  # batches of 2,000 ops: the first ones fit under the cap
            for _ in range(2000):
                a + a
            assert rec.flush()
    with open_session(path) as s:
        partial = s.meta["partial"]
        assert "full" in partial["reason"] and partial["dropped"] > 0
        written = s.count("op_events")
        assert 0 < written < 20_000
        assert written + partial["dropped"] == 20_000


def test_the_ring_gives_way_to_a_second_listener(tmp_path):
    class Collect:
        def __init__(self):
            self.events = []

        def on_op(self, ev, output):
            self.events.append(ev)

    path = tmp_path / "two.emsession"
    a = em.ones(4)
    with Recorder(path, calibrate=False) as rec:
        a + a
        assert dispatch._native_binary is not None
        other = Collect()
        with instrument.listening(other):
            assert dispatch._native_binary is None  # both listeners get OpEvents
            a + a
        assert dispatch._native_binary is not None
        a + a
        assert rec.op_path == "ring (C writer)"
    assert [e.op for e in other.events] == ["add"]
    with open_session(path) as s:
        assert s.count("op_events") == 3
    assert dispatch._native_binary is None  # closed: nobody listens


def test_memory_is_counted_through_numpys_allocator_while_recording(tmp_path):
    from numpy._core.multiarray import get_handler_name

    before = get_handler_name()
    path = tmp_path / "alloc.emsession"
    n = 1000
    with Recorder(path, calibrate=False) as rec:
        counters = rec.memory.native_cpu
        assert get_handler_name() == "execmode_op_ring"  # NumPy allocates through ours
        a = em.ones(n)
        b = a + 1.0  # counted by its buffer
        assert counters.tracked[0] >= 1 and counters.live == rec.memory.live_bytes("cpu")
        live = counters.live
        b._data.resize(2 * n, refcheck=False)  # realloc: the count follows the buffer
        del b
        assert counters.live == live - 4 * n
        results = []
        thread = threading.Thread(target=lambda: results.append(em.ones(n) * 2.0))
        thread.start()
        thread.join()
        assert counters.tracked[1] >= 1  # another thread's arrays: a weak reference each
        assert counters.live == live  # its product lives (its em.ones was freed), b not
        results.clear()
        del a
        assert counters.live == 0 and counters.tracked == (0, 0)
    assert get_handler_name() == before  # put back at stop
    with open_session(path) as s:
        assert s.peak_memory()["cpu"] >= 2 * 4 * n
