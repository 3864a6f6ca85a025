"""A jitted CUDA kernel's scalar inputs (a changing Python number read at each call) are
put on the device anew whenever their value changes, including only a zero's sign, and
reused while it does not: every call gives eager's numbers.

Marked ``gpu`` and skipped, with the reason, where no GPU is usable.
"""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.backend import cuda_problem

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not em.cuda_is_available(),
                       reason=f"needs a CUDA GPU with CuPy: {cuda_problem() or 'unavailable'}"),
]


class Schedule:
    scale = 2.0


def test_a_changing_scalar_attribute_gives_eager_values_at_every_call():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 33)).astype(np.float32)
    x = em.tensor(a, device="cuda")
    schedule = Schedule()

    def fn(x):
        # 1 / (x * 0 + s): +inf or -inf for s = +-0.0, so a reused zero of the wrong sign
        # shows; the tanh keeps the kernel fused around the scalar.
        return em.tanh(x) * schedule.scale + 1.0 / (x * 0.0 + schedule.scale)

    jitted = em.jit(fn)
    for value in (2.0, 2.0, 3.5, 3.5, -0.0, 0.0, 0.0, -0.0, 1e-3, 7):
        schedule.scale = value
        got = jitted(x).cpu().numpy()
        want = fn(x).cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
        assert np.array_equal(np.signbit(got), np.signbit(want)), value
    assert jitted.trace_count <= 2  # the scalar is an input, not a constant per value
