"""The fuzzer's rounding oracle (fuzz/rounding.py): a values difference that the program's
own sensitivity to how its transcendentals round explains is no mismatch; a wrong value is
still one, in an ill-conditioned program as in a well-conditioned one."""

from __future__ import annotations

import numpy as np

import execmode as em
from execmode.codegen import matmul_policy
from fuzz.check import check, check_source
from fuzz.compare import compare_runs
from fuzz.program import parse
from fuzz.runner import default_jit, run_mode

# A saturating tanh's gradient, divided by: one ulp of tanh in the fused kernel is 1.5e-4
# of the result (slow tier, program 1795574896-3397). rounding.py measures the program's
# own sensitivity instead of widening the tolerance for every program.
SATURATED = """
import numpy as np

import execmode as em

# --- setup ---
w = em.tensor([[2.0, 0.25, 2.0], [-0.75, -1.5, 1.5], [-1.0, 2.0, 2.0], [-2.75, -0.5, -3.0]], dtype=em.float32, requires_grad=True)
b = em.tensor([-2.75, -2.75, 3.0], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x):
    v0 = em.tanh(x @ w + b).sum()
    v0.backward()
    v2 = w / b.grad
    return v2

F = em.jit(f, passes=['fuse'])
# --- call 1 ---
x1 = em.tensor([[-2.5, 1.75, 2.75, -2.75]], dtype=em.float32)
out1 = F(x1)
"""

# The same kind of program with a NaN elsewhere in the result (program 20261133-2012,
# minimized by hand). The sum of tanh'(z) = 1 - tanh(z)**2 over z = 9.16, -8.06, -4.25,
# 6.19, 11.3 is 8.3088e-4 in float64; NumPy's tanh (each value within 0.9 ulp) gives
# 8.3095e-4, the fused kernel's (within 0.4 ulp) 8.3083e-4: a 1.4e-4 difference that the
# nudged runs bracket. The oracle compared the non-finite places with NaN != NaN and
# called every result holding a NaN a mismatch.
NAN_BESIDE_SATURATED = """
import numpy as np

import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---
g = em.tensor([nan, 1.0, 1.0], dtype=em.float32)
w = em.tensor([[-2.5, 2.25, 2.75], [-3.0, -2.451, -1.5], [1.5, -2.5, -1.25], [2.804, -1.0, 0.0]], dtype=em.float32, requires_grad=True)
b = em.tensor([-0.75, -1.536, 0.0], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x):
    v0 = em.tanh(x @ w + b).sum()
    v0.backward()
    return g / b.grad

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([[1.25, -2.5, -1.576, 0.75], [-2.25, 2.75, -1.8, 2.5], [-1.5, -0.75, 1.0, 1.5], [1.5, -0.75, -0.75, 2.0], [2.934, -0.5, -2.0, -1.25]], dtype=em.float32)
out1 = F(x1)
"""

# Well-conditioned: tanh far from saturation (z within +-1), its gradients near 0.7, the
# same NaN beside them. Rounding moves the result by a few 1e-7 of it here.
NAN_BESIDE_WELL_CONDITIONED = """
import numpy as np

import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---
g = em.tensor([nan, 1.0, 1.0], dtype=em.float32)
w = em.tensor([[0.5, -0.25, 0.75], [0.25, 0.5, -0.5], [-0.5, 0.25, 0.25], [0.75, -0.5, 0.5]], dtype=em.float32, requires_grad=True)
b = em.tensor([0.25, -0.25, 0.5], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x):
    v0 = em.tanh(x @ w + b).sum()
    v0.backward()
    return g / b.grad

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([[0.5, -0.25, 0.75, 0.25], [-0.5, 0.5, 0.25, -0.75]], dtype=em.float32)
out1 = F(x1)
"""


def _scales_output(factor: float):
    """A stand-in for em.jit whose result is off by ``factor``: a planted wrong value."""
    def jit(f, program):
        jitted = default_jit(f, program)

        def call(*args):
            out = jitted(*args)
            return out * factor if isinstance(out, em.Tensor) else out
        return call
    return jit


def _beyond_the_fixed_tolerance(text: str) -> set:
    program = parse(text)
    eager, jitted = run_mode(program, "eager"), run_mode(program, "jit")
    return {m.key for m in compare_runs(program, eager, jitted)}


def test_rounding_amplified_by_the_program_is_not_a_mismatch():
    assert _beyond_the_fixed_tolerance(SATURATED) == {("values", "output")}
    assert check(parse(SATURATED)) == []                     # within its own sensitivity


def test_amplified_rounding_beside_a_nan_is_not_a_mismatch():
    assert _beyond_the_fixed_tolerance(NAN_BESIDE_SATURATED) == {("values", "output")}
    assert check(parse(NAN_BESIDE_SATURATED)) == []


def test_a_wrong_value_in_an_ill_conditioned_program_is_still_a_mismatch():
    # The nudged runs move the output by a few 1e-4 of it; a 1% error is far outside.
    keys = {m.key for m in check_source(SATURATED, jit=_scales_output(1.01))}
    assert ("values", "output") in keys


def test_an_error_the_size_of_amplified_rounding_is_a_mismatch_where_well_conditioned():
    # 1.5e-4, what the saturated program's rounding came to, beside the same NaN: here
    # nothing amplifies rounding, so the oracle must not excuse it.
    assert check_source(NAN_BESIDE_WELL_CONDITIONED) == []
    keys = {m.key for m in check_source(NAN_BESIDE_WELL_CONDITIONED,
                                        jit=_scales_output(1 + 1.5e-4))}
    assert keys == {("values", "output")}


# Terms that cancel (after seed 20261145 program 1598, minimized by hand): the sum of x's
# 16 distinct values, -1.02e10 and 1.02e10 among them, is 2.5 exactly; NumPy's float32 sum
# (eight partial sums) loses the small ones to the large and gives 0.0, the fused kernel
# (its sum and the product in one, accumulating in float64) 2.5. Both are within the
# float32 sum's error bound (a few eps of sum |x|: 2e3 here): rounding.py nudges a sum by
# that bound, not by ulps of its result.
CANCELLING_SUM = """
import numpy as np

import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---

# --- function ---
def f(x):
    return em.sum(em.unique_values(em.reshape(x, (-1,)))) * 2.0

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([[0.25, 1.75, 2.25, -1.5], [-1.25, -1.75, 1.02e+10, -1.25], [2.0, 2.5, 0.5, 2.75], [-2.5, 0.0, -1.02e+10, 0.75], [2.5, -0.5, -2.75, 0.0]], dtype=em.float32)
out1 = F(x1)
"""

# The same sum over terms that do not cancel: its bound is ulps of the result again.
PLAIN_SUM = CANCELLING_SUM.replace("-1.02e+10", "3.25").replace("1.02e+10", "3.5")


def test_a_sum_of_cancelling_terms_rounded_in_another_order_is_not_a_mismatch():
    assert _beyond_the_fixed_tolerance(CANCELLING_SUM) == {("values", "output")}
    assert check(parse(CANCELLING_SUM)) == []


def test_an_error_in_a_sum_of_terms_that_do_not_cancel_is_a_mismatch():
    assert check_source(PLAIN_SUM) == []
    keys = {m.key for m in check_source(PLAIN_SUM, jit=_scales_output(1 + 1.5e-4))}
    assert keys == {("values", "output")}


# A gradient that is 0 in exact arithmetic (column 2 of w sums to 0; the mean scales it by
# 1/12 first) meets log's 1/x at x = +-0.0 (seed 20261144 program 0, minimized by hand):
# each order of the matmul's backward rounds the 0 to a residue of its own sign, so the
# infinities come out with opposite signs in eager and jit, and a nudged eager run gives
# jit's signs.
ZERO_OVER_ZERO = """
import numpy as np

import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---
w = em.tensor([[1.25, -1.25, 3.0], [-2.75, 0.5, 0.75], [-1.75, -1.0, 2.75], [-3.0, 1.0, -0.5]], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x):
    v2 = (em.log(x) @ w).mean()
    v2.backward()
    return v2

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([[2.5, 0.5, -0.0, 2.75], [1.25, 2.5, 0.0, 0.25], [1.5, 1.25, 1.25, 2.0]], dtype=em.float32, requires_grad=True)
out1 = F(x1)
"""


def test_an_infinity_whose_sign_a_nudged_run_gives_is_not_a_mismatch(monkeypatch):
    # The matmul's backward g @ w.T in the kernels' own dot products (the policy leaves a
    # transposed B to BLAS, eager's order: matmul_policy.py), so that jit rounds the 0 in
    # another order than eager
    inline = matmul_policy.inline_on_cpu
    monkeypatch.setattr(matmul_policy, "inline_on_cpu",
                        lambda m, n, k, dtype, b_strides=None: inline(m, n, k, dtype))
    assert _beyond_the_fixed_tolerance(ZERO_OVER_ZERO) == {("values", "argument .grad")}
    assert check(parse(ZERO_OVER_ZERO)) == []


def test_an_infinity_no_nudged_run_gives_is_a_mismatch():
    # A well-conditioned result turned infinite by the jit: no rounding explains it.
    keys = {m.key for m in check_source(PLAIN_SUM, jit=_scales_output(np.inf))}
    assert keys == {("values", "output")}
