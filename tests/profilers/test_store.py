"""The session store: round trip, schema identity and versioning, and bad files."""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from execmode.profilers import store
from execmode.profilers.errors import SessionError
from execmode.profilers.session import open_session
from profiler_fixtures import (
    BREAK_LINE,
    HERE,
    T0,
    fixed_events,
    fixed_ops,
    write_fixed_session,
)


@pytest.fixture(scope="module")
def fixed(tmp_path_factory):
    return write_fixed_session(tmp_path_factory.mktemp("store") / "fixed.emsession")


def test_round_trip_of_every_table(fixed):
    with open_session(fixed) as s:
        assert s.schema_version == store.SCHEMA_VERSION
        assert s.meta["script"] == "/work/train.py"
        assert s.meta["format"] == store.FORMAT_NAME
        assert s.t0_ns == T0 and s.status == "finished"

        ops = list(s.ops())
        assert [o.op for o in ops] == [e.op for e in fixed_ops()]
        matmul = ops[1]
        assert matmul.inputs == "f32[32,64], f32[64,128]"
        assert matmul.output == "f32[32,128]" and matmul.device == "cpu"
        assert (matmul.scope, matmul.file, matmul.line, matmul.function) == \
            ("mlp/fc1", HERE, 30, "train_step")
        assert (matmul.start_ns, matmul.dur_ns, matmul.bytes) == (T0 + 20_000, 5000, 16384)
        assert matmul.attrs is None and matmul.v_min is None  # no summary for this op
        assert ops[2].inputs == "f32[32,128], 0.5"
        assert ops[4].attrs == "axis=(1,), keepdims=False"
        log = ops[5]
        assert (log.v_min, log.v_max, log.v_mean, log.v_std, log.v_nan, log.v_inf) == \
            (-2.0, 3.5, 0.25, 1.5, 2, 1)

        kernels = list(s.kernels())
        assert [(k.kernel, k.step_kind) for k in kernels] == [("matmul0", "library"),
                                                             ("k0", "fused")]
        assert kernels[1].member_ops == ["add", "maximum", "sum"]
        assert kernels[1].member_nodes == [1, 2, 3]
        assert kernels[1].output == "f32[32]" and kernels[1].line == 30

        kinds = [e.kind for e in s.events()]
        expected = [e.kind for e in fixed_events() if e.kind not in ("kernel", "memory")]
        assert sorted(kinds) == sorted(expected)
        brk = s.events("graph_break")[0]
        assert brk.graph_id == "train_step#0"
        assert brk.data["location"] == {"filename": HERE, "lineno": BREAK_LINE,
                                        "function": "train_step"}
        assert s.events("pass")[1].data["rewrites"] == ["fused %1,%2,%3 into k0"]

        memory = s.memory()
        assert [m.source for m in memory].count("graph") == 1
        assert s.peak_memory() == {"cpu": 40960}
        assert [o.text for o in s.output()] == ["step 0 loss 1.234", "warning: <b>not html</b>"]
        assert s.category_totals() == {"user": 40, "kernels": 35, "execmode": 25}
        assert s.samples()[2].frames[-1] == "exec_blas (/lib/libopenblas.so)"
        comparisons = s.comparisons()
        assert comparisons[1].eager_ops == ["add", "maximum", "sum"]
        assert comparisons[1].speedup == pytest.approx(4000 / 1500)


def test_aggregates(fixed):
    with open_session(fixed) as s:
        totals = s.op_totals()
        assert totals[0].name == "matmul" and totals[0].total_ns == 5000
        assert sum(t.share for t in totals) == pytest.approx(1.0)
        assert [t.name for t in s.op_totals(sort_by="name")][:2] == ["add", "log"]
        assert s.op_totals(group_by="scope")[0].name in ("mlp/fc1", "(no scope)")
        assert s.op_totals(group_by="location")[0].name == f"{HERE}:30"
        assert s.op_time() == (6, 12_500, 57_600)
        assert [k.name for k in s.kernel_totals()] == ["train_step#0/matmul0", "train_step#0/k0"]
        summary = s.summary()
        assert summary["ops"] == 6 and summary["kernels"] == 2
        assert summary["profiler_ns"] == 6 * 8000
        with pytest.raises(SessionError, match="unknown sort_by"):
            s.op_totals(sort_by="speed")


def test_the_file_is_created_whole_and_never_overwritten(tmp_path):
    path = write_fixed_session(tmp_path / "a.emsession")
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary name was renamed away
    with pytest.raises(SessionError, match="already there"):
        write_fixed_session(path)


def test_a_finished_session_is_one_file(tmp_path):
    path = write_fixed_session(tmp_path / "one.emsession")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.emsession"]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert conn.execute("PRAGMA application_id").fetchone()[0] == store.APPLICATION_ID
    conn.close()


# --- bad files: a clear SessionError, never an sqlite3 traceback ------------------------------
def _newer(path):
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                 (str(store.SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _foreign(path):
    path.unlink()
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    conn.commit()
    conn.close()


def _damaged_page(path):
    data = bytearray(path.read_bytes())
    data[4096:8192] = b"\xff" * 4096  # the second page: table data, header intact
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("spoil, message", [
    (lambda p: p.unlink(), "no such session file"),
    (lambda p: p.write_bytes(b""), "empty"),
    (lambda p: p.write_text("step,loss\n0,1.5\n"), "not an SQLite database"),
    (_foreign, "not an execmode session"),
    (_truncate, "truncated"),
    (_newer, "newer execmode"),
    (lambda p: (p.unlink(), p.mkdir()), "is a folder"),
])
def test_bad_files_are_named(tmp_path, fixed, spoil, message):
    path = tmp_path / "bad.emsession"
    shutil.copy(fixed, path)
    spoil(path)
    with pytest.raises(SessionError, match=message) as info:
        open_session(path)
    assert str(path) in str(info.value)


def test_a_damaged_page_is_reported_when_read(tmp_path, fixed):
    path = tmp_path / "damaged.emsession"
    shutil.copy(fixed, path)
    _damaged_page(path)
    with pytest.raises(SessionError, match="damaged|not an execmode session"):
        with open_session(path) as s:
            list(s.ops())
            s.summary()
