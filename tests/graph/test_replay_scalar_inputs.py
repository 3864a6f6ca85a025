"""A Python number that became a graph input (an attribute that changed between calls, an
optimizer's lr) on every replay tier: the generated replay keeps last call's 0-d array
while the number is the same (jit_driver/fastcall.py ``_scalar_lines``), so every value it
can take must still give eager's bits, signed zeros and NaNs included."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.jit_driver import paths

# Equal numbers in new objects, a zero after its negative, NaN twice, an int after the
# float equal to it, a bool.
VALUES = (3.0, 3.0, 0.5 + 2.5, 0.0, -0.0, -0.0, 0.0, float("nan"), float("nan"), 5, 5.0, 5,
          True, 1, 1.0, 7.0, 7.0)  # (not 2.0: the first trace, with 2.0 as a constant, takes it)


class Holder:
    scale = 2.0


@pytest.mark.parametrize("tier", ("general", "generated", "native"))
def test_every_value_of_a_scalar_input_gives_eagers_bits(tier):
    holder = Holder()

    def f(x):
        return x * holder.scale * 3.0  # one fused kernel reading the number (and its sign)

    x = em.tensor(np.array([1.0, -2.0, 0.0], np.float32))
    with paths.pinned(replay=tier):
        jitted = em.jit(f)
        for value in (2.0, 4.0):  # a second value: the number becomes a graph input
            holder.scale = value
            jitted(x)
        cf = jitted.concrete_functions[-1]
        assert "scalar" in [source.kind for source in cf.segments[0].sources]
        calls = cf.calls
        for value in VALUES:
            holder.scale = value
            got, want = jitted(x), f(x)
            assert got.dtype == want.dtype
            assert got.numpy().tobytes() == want.numpy().tobytes(), value
        assert len(jitted.concrete_functions) == 2
        # The fast replays took every call (the general path counts the ones it takes).
        assert cf.calls == calls + (len(VALUES) if tier == "general" else 0)
