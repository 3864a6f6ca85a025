"""The per-pass record: rewrites name real node ids, diffs add up, it prints."""

from __future__ import annotations

import pytest

import execmode as em


def _tour(x):
    c = em.full((4,), 2.0) * 3.0            # foldable
    a = em.tanh(x * 0.5) + em.tanh(x * 0.5)  # duplicated subexpression
    em.exp(x * 7.0)                          # dead
    return (a * 1.0 + c).sum()               # x*1, fusable chain into a reduction


@pytest.fixture(scope="module")
def record():
    return em.jit(_tour).lower(em.randn(3, 4)).record


def test_rewrite_sentences_name_ids_in_the_snapshots(record):
    before = record.initial
    for result in record.results:
        ids = {n.id for n in before.nodes} | {n.id for n in result.graph.nodes}
        for rewrite in result.rewrites:
            assert rewrite.nodes, rewrite.sentence
            for node_id in rewrite.nodes:
                assert node_id in ids, (result.name, rewrite.sentence)
                assert f"%{node_id}" in rewrite.sentence or rewrite.kind == "fuse"
        before = result.graph


def test_diffs_add_up(record):
    before = record.initial
    for result in record.results:
        d = result.diff
        assert len(before.nodes) == len(d.kept) + len(d.removed) + len(d.merged) + len(d.fused)
        assert len(result.graph.nodes) == len(d.kept) + len(d.added)
        before = result.graph


def test_every_pass_did_something_on_the_tour(record):
    kinds = {r.kind for r in record.rewrites}
    assert {"fold", "simplify", "cse", "dce", "fuse"} <= kinds
    assert [r.name for r in record.results] == [
        "fold_constants", "simplify", "eliminate_common_subexpressions",
        "eliminate_dead_code", "fuse", "plan_memory"]


def test_record_prints_pass_by_pass(record):
    text = str(record)
    for name in ("fold_constants", "simplify", "fuse", "plan_memory", "memory: planned peak"):
        assert name in text
    assert "CSE: %" in text and "DCE: removed %" in text and "into k0" in text


def test_record_to_json_has_snapshots(record):
    data = record.to_json()
    assert len(data["passes"]) == 6
    assert all("ir_text" in p and p["rewrites"] is not None for p in data["passes"])
