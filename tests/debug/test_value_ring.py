"""The agent's ring of the last ops' values (execmode/debug/value_ring.py)."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.debug.value_ring import ValueRing


def test_it_keeps_copies_of_the_output_and_the_tensor_inputs():
    ring = ValueRing(ops=4)
    x = em.ones(2, 3)
    y = x * 2.0
    ring.keep(7, y, (x, 2.0))
    y[0, 0] = 100.0                      # a later in-place write does not reach the copy
    np.testing.assert_array_equal(ring.value(7), np.full((2, 3), 2.0, np.float32))
    np.testing.assert_array_equal(ring.value(7, "input", 0), np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="1 tensor input"):
        ring.value(7, "input", 1)        # the scalar 2.0 is not a tensor input


def test_the_oldest_go_first_by_count_and_by_bytes():
    ring = ValueRing(ops=2)
    for seq in range(3):
        ring.keep(seq, em.ones(1), ())
    with pytest.raises(ValueError, match="no longer kept.*last 2.*oldest kept is op 1"):
        ring.value(0)
    assert ring.value(2).shape == (1,)
    small = ValueRing(ops=10, max_tensor_bytes=1024, max_total_bytes=2048)
    for seq in range(4):
        small.keep(seq, em.ones(200), ())  # 800 bytes each: two fit
    with pytest.raises(ValueError, match="no longer kept"):
        small.value(1)
    assert small.value(3).nbytes == 800


def test_a_tensor_over_the_size_limit_is_named_not_kept():
    ring = ValueRing(ops=4, max_tensor_bytes=64)
    ring.keep(0, em.ones(100), (em.ones(2),))
    with pytest.raises(ValueError, match="op 0's output: not kept: 400 bytes, over the 64"):
        ring.value(0)
    assert ring.value(0, "input", 0).shape == (2,)


def test_zero_ops_keeps_nothing_and_says_so():
    ring = ValueRing(ops=0)
    ring.keep(0, em.ones(1), ())
    with pytest.raises(ValueError, match="--keep-values 0 keeps none"):
        ring.value(0)
