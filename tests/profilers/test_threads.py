"""Eager ops from the script's threads are recorded with their thread: a number per
thread in op_events.thread (NULL for the main thread), their names in meta "threads", a
track per thread in the Chrome trace; sessions of schema version 1 (no thread column) read
as all main-thread ops."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading

import numpy as np
from execmode.profilers import store
from execmode.profilers.exporters import export
from execmode.profilers.recorder import Recorder
from execmode.profilers.session import open_session

import execmode as em


def _work(n: int) -> None:
    x = em.tensor(np.ones(4, np.float32))
    for _ in range(n):
        x = x * 2.0


def _record_with_threads(path, summaries=False):
    with Recorder(path, calibrate=False, summaries=summaries):
        _work(3)  # main thread: tensor + 3 muls
        workers = [threading.Thread(target=_work, args=(n,), name=f"worker-{n}")
                   for n in (1, 2)]
        for t in workers:  # one after the other: numbers in a known order
            t.start()
            t.join()
        _work(1)


def test_ops_carry_their_thread(tmp_path):
    for summaries in (False, True):
        path = tmp_path / f"threads-{summaries}.emsession"
        _record_with_threads(path, summaries)
        with open_session(path) as s:
            threads = [op.thread for op in s.ops()]
            assert s.meta["threads"] == {"1": "worker-1", "2": "worker-2"}
        assert threads == [None] * 4 + [1] * 2 + [2] * 3 + [None] * 2


def test_the_chrome_trace_gives_each_thread_its_track(tmp_path):
    path = tmp_path / "threads.emsession"
    _record_with_threads(path)
    with open_session(path) as s:
        out = export(s, tmp_path / "trace.json", "chrome")
    events = json.loads(out.read_text())["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    ops_by_track: dict[str, int] = {}
    for e in events:
        if e.get("cat") == "op":
            ops_by_track[names[e["tid"]]] = ops_by_track.get(names[e["tid"]], 0) + 1
    assert ops_by_track == {"eager ops": 6, "eager ops: worker-1": 2,
                            "eager ops: worker-2": 3}


def test_a_version_1_session_reads_as_main_thread_ops(tmp_path):
    path = tmp_path / "threads.emsession"
    _record_with_threads(path)
    old = tmp_path / "v1.emsession"
    shutil.copy(path, old)
    # What version 1 was: no thread column, and the ops view without it (readers read ops
    # through that view: profilers/store_queries.py).
    conn = sqlite3.connect(old, isolation_level=None)
    conn.execute("DROP VIEW ops")
    conn.execute("ALTER TABLE op_events DROP COLUMN thread")
    conn.execute("CREATE VIEW ops AS SELECT e.seq, e.op, e.scope, l.file, l.line, l.function, "
                 "e.start_ns, e.dur_ns, e.bytes, e.inputs, e.output, e.device, e.attrs, "
                 "e.v_min, e.v_max, e.v_mean, e.v_std, e.v_nan, e.v_inf FROM op_events AS e "
                 "LEFT JOIN locations AS l ON l.id = e.location")
    conn.execute("PRAGMA user_version = 1")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.close()
    assert 1 in store.OLDER_VERSIONS
    with open_session(old) as s:
        assert s.schema_version == 1
        ops = list(s.ops())
    assert len(ops) == 11 and {op.thread for op in ops} == {None}
    # The TUI reads the same rows through the same queries.
    from execmode.tui.data import SessionReader

    with SessionReader(old) as reader:
        page = reader.page("ops", reader.snapshot().ops, 0, 20)
    assert page == ops
