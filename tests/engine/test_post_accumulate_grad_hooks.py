"""Tensor.register_post_accumulate_grad_hook: a leaf's hooks run once per backward, after
the last contribution to its .grad (DistributedDataParallel starts its buckets there)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import execmode as em
from execmode import tape


def _leaf(values):
    t = em.asarray(np.asarray(values, np.float32))
    t.requires_grad_()
    return t


def test_a_hook_sees_the_whole_gradient_of_a_leaf_used_twice():
    w, b = _leaf([1.0, 2.0]), _leaf([0.0, 0.0])
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(("w", t.grad.numpy().tolist())))
    b.register_post_accumulate_grad_hook(lambda t: seen.append(("b", t.grad.numpy().tolist())))
    ((w * w + b) * 2.0 + w).sum().backward()  # d/dw = 4w + 1 from two nodes
    assert seen == [("b", [2.0, 2.0]), ("w", [5.0, 9.0])]


def test_a_removed_hook_and_a_leaf_without_gradient_run_nothing():
    w, unused = _leaf([1.0]), _leaf([1.0])
    seen = []
    handle = w.register_post_accumulate_grad_hook(seen.append)
    unused.register_post_accumulate_grad_hook(seen.append)
    (w * em.asarray(np.float32(3.0)) + unused.detach()).sum().backward()
    assert seen == [w]  # unused got no gradient from this backward
    handle.remove()
    (w * 2.0).sum().backward()
    assert seen == [w] and w.grad.numpy().tolist() == [5.0]


def test_a_backward_through_a_jitted_call_runs_the_hooks_of_its_inputs():
    w = _leaf([1.0, -1.0])
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().tolist()))
    em.jit(lambda x: (x * x).sum())(w).backward()
    assert seen == [[2.0, -2.0]]


def test_only_leaves_that_require_grad_take_a_hook():
    with pytest.raises(em.BackwardError, match="only a leaf tensor that requires grad"):
        (_leaf([1.0]) * 2.0).register_post_accumulate_grad_hook(print)
    with pytest.raises(em.BackwardError, match="only a leaf tensor that requires grad"):
        em.asarray(np.ones(2, np.float32)).register_post_accumulate_grad_hook(print)


def test_backward_counts_leaves_only_while_a_hooked_leaf_lives():
    gc.collect()  # hooked leaves of earlier tests, in cycles with their hooks
    before = tape.hooked_leaves
    kept, dropped = _leaf([1.0]), _leaf([2.0])
    handle = kept.register_post_accumulate_grad_hook(print)
    dropped.register_post_accumulate_grad_hook(print)
    assert tape.hooked_leaves == before + 2
    handle.remove()
    del dropped
    gc.collect()
    assert tape.hooked_leaves == before
