"""The in-code API: ``with profile() as prof``, ``prof.table()``, ``prof.export()``."""

from __future__ import annotations

import json

import pytest
from execmode.profilers.api import profile

import execmode as em


def _work():
    x = em.ones(32, 32)
    for _ in range(3):
        x = em.tanh(x @ x)
    return em.sum(x)


def test_profile_table_and_export(tmp_path):
    with profile(tmp_path / "p.emsession", calibrate=False) as prof:
        _work()
        prof.mark("after work")
        partial = prof.table()  # readable while still recording
    assert {r.name for r in partial.rows} >= {"matmul", "tanh"}

    table = prof.table(sort_by="count")
    text = str(table)
    assert text.splitlines()[0] == "eager ops by op, sorted by count"
    assert [r.name for r in table.rows][:2] == ["matmul", "tanh"]
    assert [r.count for r in table.rows][:2] == [3, 3]
    assert "matmul" in text and "calls" in text

    by_line = prof.table(group_by="location")
    assert by_line.rows[0].name.startswith(__file__)

    trace = json.loads(prof.export(tmp_path / "p.trace.json").read_text())
    assert trace["traceEvents"] and any(e.get("cat") == "mark" for e in trace["traceEvents"])
    assert prof.export(tmp_path / "p.report", "html").read_text().startswith("<!DOCTYPE")
    summary = prof.summary()
    assert summary["ops"] == 3 * 2 + 2 and summary["profiler_ns"] is None  # not calibrated
    prof.close()


def test_default_path_is_a_temporary_file():
    with profile(calibrate=False) as prof:
        em.ones(4) + 1
    assert prof.path.exists() and prof.path.suffix == ".emsession"
    assert prof.summary()["ops"] == 2
    prof.close()
    prof.path.unlink()


def test_misuse_is_explained(tmp_path):
    prof = profile(tmp_path / "x.emsession")
    with pytest.raises(RuntimeError, match="nothing recorded yet"):
        prof.table()
    with pytest.raises(Exception, match="unknown sort_by"):
        with profile(tmp_path / "y.emsession", calibrate=False) as done:
            pass
        done.table(sort_by="fastest")
