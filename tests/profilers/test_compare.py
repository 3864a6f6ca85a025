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


def test_the_rows_and_what_they_leave_out_add_up_to_their_rounds():
    f, x = _function()
    cmp = em.compare(f, x, rounds=5, repeat=3)
    eager_out, graph_out = cmp.outside_rows()
    for timed, out, rows in ((cmp.eager_timed, eager_out, [r.eager for r in cmp.rows]),
                             (cmp.graph_timed, graph_out, [r.graph for r in cmp.rows])):
        rows = [r for r in rows if r is not None]
        for k in range(timed.rounds):  # round by round, exactly
            assert sum(r.samples[k] for r in rows) + out.samples[k] == \
                pytest.approx(timed.samples[k])
    assert cmp.rounds == 5 and cmp.calls_per_round == 3
    assert "outside the rows" in str(cmp) and "measured on:" in str(cmp)


def test_each_call_measures_afresh():
    f, x = _function()
    first = em.compare(f, x, rounds=5, repeat=2)
    second = em.compare(f, x, rounds=5, repeat=2)
    assert first.graph_wall is not second.graph_wall
    assert [r.kernel for r in first.rows] == [r.kernel for r in second.rows]
    assert second.first_call_ns > 0  # a fresh jit: it traced and compiled (or hit the cache)


def test_a_function_that_raises_is_named_and_nothing_is_timed():
    x = em.randn(4, 4)

    def bad(x):
        return x @ em.randn(3, 3)

    cmp = em.compare(bad, x)
    text = str(cmp)
    assert text.splitlines()[0].endswith(".bad: not measured")
    assert "ShapeError" in text and "(4, 4) @ (3, 3)" in text
    assert cmp.verdict.ratio is None and cmp.rows == []


def test_a_function_without_tensor_results_or_with_breaks_says_so():
    x = em.randn(4, 4)

    def to_float(x):
        return float((x * 2.0).sum())

    cmp = em.compare(to_float, x, rounds=5, repeat=2)
    notes = " ".join(cmp.problems)
    assert "returns float, not tensors" in notes
    assert "breaks its graph 1 time(s) per call" in notes and "float()" in notes
    assert cmp.eager_wall is not None and cmp.graph_wall is not None  # still measured
