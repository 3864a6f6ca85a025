"""em.compare: rows line up eager ops with the steps that replaced them, and add up."""

from __future__ import annotations

import pytest
from execmode.profilers.recorder import Recorder

import execmode as em


def _function():
    em.random.seed(0)
    w, b = em.randn(16, 16), em.randn(16)

    def f(x):
        c = em.full((16,), 2.0) * 3.0              # folded away: a "removed" row
        h = em.relu(x @ w + b)                      # matmul + epilogue
        return (em.tanh(h * 0.5) + c).sum(axis=1)  # fused into a reduction

    return f, em.randn(8, 16)


def test_rows_cover_every_eager_op_and_add_up_to_the_totals():
    f, x = _function()
    cmp = em.compare(f, x, repeat=3)
    assert cmp.eager_op_count == 9
    matched = [op for row in cmp.rows for op in row.eager_ops]
    assert len(matched) == cmp.eager_op_count
    totals = cmp.totals
    assert totals["eager_ns"] == pytest.approx(sum(r.eager_ns for r in cmp.rows))
    assert totals["kernel_ns"] == pytest.approx(sum(r.kernel_ns for r in cmp.rows))
    kinds = {r.step_kind for r in cmp.rows}
    assert "removed" in kinds and "fused" in kinds
    assert cmp.kernel_count == sum(1 for r in cmp.rows if r.step_kind != "removed")
    assert cmp.kernel_count < cmp.eager_op_count
    assert cmp.eager_peak_bytes > 0 and cmp.planned_peak_bytes > 0
    text = str(cmp)
    assert "wall time per call" in text and "removed" in text


def test_rows_are_stored_in_the_session(tmp_path):
    f, x = _function()
    path = tmp_path / "cmp.emsession"
    with Recorder(path, calibrate=False) as rec:
        cmp = em.compare(f, x, repeat=2)
        rec.flush()
    import sqlite3

    con = sqlite3.connect(path)
    (count,) = con.execute("select count(*) from comparisons").fetchone()
    assert count == len(cmp.rows)
