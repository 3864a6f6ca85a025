"""Which programs the fuzzer compares bit for bit (``Program.exact``): those whose values
stay small dyadic rationals, which every summation order adds exactly. A statement that
makes any other value (a transcendental, a division, an FFT ...) makes the program one
that may round, compared within compare.py's tolerance and rounding.py's oracle."""

from __future__ import annotations

import pytest

from fuzz.check import check_source
from fuzz.program import is_inexact_text, parse
from fuzz.program_model import EXACT_UNARY, FLOAT_EXACT_UNARY, INEXACT_UNARY
from fuzz.runner import default_jit

# Program 20261198-2573, minimized: atan's values are not dyadic, and the jit's generated
# 4x4 matmul kernel adds each dot product's four terms in another order than NumPy's
# matmul, so the Gram matrix differed in its last bit (1.3761173 against 1.3761172; the
# float64 product rounds to the jit's). The program was taken for exact because the
# oracle's list of rounding functions had no atan (the generator's had).
ATAN_GRAM = """
import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---

# --- function ---
def f(z):
    v0 = em.atan(z)
    v1 = v0 @ v0.T
    return v1, v0

F = em.jit(f, passes=[])
# --- call 1 ---
z1 = em.tensor([[-0.5, -0.25, 0.5, -1.0], [0.0, -2.5, 3.0, -0.75], [-2.75, 1.0, 1.5, -0.25], [0.0, 2.75, 0.75, 0.5]], dtype=em.float32)
out1 = F(z1)
"""


@pytest.mark.parametrize("op", INEXACT_UNARY)
def test_every_unary_function_the_generator_draws_as_inexact_makes_a_program_round(op):
    # One table, the generator's: the oracle's own list had drifted from it.
    assert is_inexact_text(f"v0 = em.{op}(x)")


@pytest.mark.parametrize("op", EXACT_UNARY + FLOAT_EXACT_UNARY)
def test_exact_unary_functions_keep_a_program_bit_exact(op):
    assert not is_inexact_text(f"v0 = em.{op}(x)")


@pytest.mark.parametrize("text", [
    "v0 = em.fft.fft((x.astype(em.complex64)))",
    "v0 = em.abs(((x.astype(em.complex128)) * 2j))",
])
def test_transforms_and_complex_moduli_make_a_program_round(text):
    assert is_inexact_text(text)


def test_a_matmul_of_atan_values_rounds_in_either_order():
    program = parse(ATAN_GRAM)
    assert not program.exact
    assert check_source(ATAN_GRAM) == []


def _scales_first_output(factor: float):
    """A stand-in for em.jit whose first result is off by ``factor``: a planted wrong
    value."""
    def jit(f, program):
        jitted = default_jit(f, program)

        def call(*args):
            out = jitted(*args)
            return (out[0] * factor,) + tuple(out[1:])
        return call
    return jit


@pytest.mark.parametrize("factor", [1 + 1e-3, -1.0])
def test_a_wrong_matmul_of_atan_values_is_still_a_mismatch(factor):
    # 1e-3 relative is ten times compare.py's tolerance and thousands of float32 ulps: the
    # summation order of four terms moves the result by a few.
    keys = {m.key for m in check_source(ATAN_GRAM, jit=_scales_first_output(factor))}
    assert ("values", "output") in keys, keys
