"""separate_merged_outputs finds the output another one was merged with through an index
(passes/outputs.py); the answer must be the one of a scan over every earlier output, the
definition it replaced. Checked on random pairings of traced and lowered outputs."""

from __future__ import annotations

import random

import pytest

from execmode.passes.outputs import _EarlierOutputs


def _scan(j, was, now, traced_outputs, lowered_outputs, before_root, after_root, inputs):
    """The original quadratic definition."""
    for i in range(j):
        if lowered_outputs[i] == now and traced_outputs[i] != was:
            return f"is output {i}"
        if after_root[lowered_outputs[i]] == after_root[now] and \
                before_root[traced_outputs[i]] != before_root[was]:
            return f"shares the buffer of output {i}"
    root = after_root[now]
    if root in inputs and before_root[was] != root:
        return f"is (a view of) input %{root}"
    return None


@pytest.mark.parametrize("seed", range(40))
def test_the_index_answers_as_the_scan(seed):
    rng = random.Random(seed)
    n_nodes = rng.randint(1, 12)
    ids = list(range(n_nodes))
    # Roots: each node its own buffer or a view of a smaller-numbered node.
    before_root = {i: (i if rng.random() < 0.6 else rng.choice(ids[:i + 1])) for i in ids}
    after_root = {i: (i if rng.random() < 0.5 else rng.choice(ids[:i + 1])) for i in ids}
    for roots in (before_root, after_root):
        for i in ids:  # a root is its own root
            roots[i] = roots[roots[i]]
    inputs = set(rng.sample(ids, rng.randint(0, n_nodes)))
    n_out = rng.randint(1, 30)
    traced = [rng.choice(ids) for _ in range(n_out)]
    lowered = [rng.choice(ids) for _ in range(n_out)]
    earlier = _EarlierOutputs()
    for j, (was, now) in enumerate(zip(traced, lowered)):
        want = _scan(j, was, now, traced, lowered, before_root, after_root, inputs)
        assert earlier.merged_with(was, now, before_root, after_root, inputs) == want
        earlier.add(j, was, now, before_root, after_root)
