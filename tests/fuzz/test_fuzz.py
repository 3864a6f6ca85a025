"""The differential fuzzer in the test suite: eager against em.jit on random programs.

* ``test_fast_tier``: a few hundred programs from a fixed seed, in the default run (CI);
  every fourth one also through the path matrix (every eager path and jit replay tier
  against the others, fuzz/check.py).
* ``test_slow_tier``: >= 10,000 programs, only with ``pytest -m fuzz``; the seed is
  ``EXECMODE_FUZZ_SEED`` or a fresh one, printed with any failure.
* The rest tests the fuzzer itself: generation is deterministic and respects the feature
  toggles, programs survive a render/parse round trip, the comparator catches planted
  bugs, the minimizer shrinks.

A failure prints the seed, the mismatches and a minimized program; paste the program into
a regression test as ``assert_agrees('''...''')`` (fuzz/check.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import execmode as em
from fuzz.campaign import Campaign, seed_from_env
from fuzz.check import assert_agrees, check, check_source
from fuzz.features import CHECKS, FEATURES, all_on
from fuzz.generator import generate
from fuzz.known import KNOWN_MISMATCHES
from fuzz.minimize import minimize
from fuzz.program import parse
from fuzz.runner import run_mode

FAST_SEED = 20240613
FAST_PROGRAMS = int(os.environ.get("EXECMODE_FUZZ_FAST", "400"))
SLOW_PROGRAMS = int(os.environ.get("EXECMODE_FUZZ_PROGRAMS", "10000"))
SLOW_CHUNKS = 20
SLOW_SEED = seed_from_env()  # one seed for every chunk of this session


def _fail(camp: Campaign, how_to_rerun: str) -> None:
    lines = [camp.summary(), "", f"reproduce: {how_to_rerun}",
             f"one program: python -m tests.fuzz --program {camp.failures[0].seed}", ""]
    for key, fail in list(camp.minimize_groups(budget_s=45, max_groups=3).items()):
        lines.append(f"--- {key[0]} / {key[1]} ---")
        lines.append(fail.report())
        lines.append("")
    pytest.fail("\n".join(lines), pytrace=False)


# Slow tier: 400 random programs, eager against jit, on every path.
@pytest.mark.slow
def test_fast_tier():
    seed = seed_from_env(FAST_SEED)
    camp = Campaign(seed, FAST_PROGRAMS, matrix_every=4).run(stop_after=10)
    if camp.failures:
        _fail(camp, f"EXECMODE_FUZZ_SEED={seed} python -m pytest tests/fuzz -k fast_tier")


@pytest.mark.fuzz
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("chunk", range(SLOW_CHUNKS))
def test_slow_tier(chunk):
    per_chunk = -(-SLOW_PROGRAMS // SLOW_CHUNKS)
    camp = Campaign(SLOW_SEED, per_chunk, start=chunk * per_chunk).run(stop_after=20)
    if camp.failures:
        _fail(camp, f"EXECMODE_FUZZ_SEED={SLOW_SEED} python -m pytest -m fuzz tests/fuzz "
                    f"-k 'slow_tier and {chunk}'")


# --- the fuzzer itself ------------------------------------------------------------------

def test_generation_is_deterministic():
    for i in range(20):
        assert generate(f"7-{i}").render() == generate(f"7-{i}").render()
    assert generate("7-1").render() != generate("7-2").render()
    # and in another process (--program rebuilds a campaign's program there): a hash of
    # an object's address once made a quarter of the programs differ between processes
    here = [generate(f"7-{i}").render() for i in range(40)]
    code = ("import json, sys; from fuzz.generator import generate; "
            "json.dump([generate(f'7-{i}').render() for i in range(40)], sys.stdout)")
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=Path(__file__).parent.parent, timeout=120, check=True)
    assert json.loads(child.stdout) == here


def test_features_that_are_off_never_appear():
    on = {name for name, enabled in FEATURES.items() if enabled}
    for i in range(300):
        program = generate(f"3-{i}")
        assert program.tags() <= on, (program.tags() - on, program.render())


def test_every_feature_can_appear_when_on():
    seen = set()
    for i in range(400):
        seen |= generate(f"5-{i}", all_on()).tags()
    assert seen == set(FEATURES), set(FEATURES) - seen


def test_render_parse_round_trip():
    for i in range(50):
        program = generate(f"9-{i}", all_on())
        again = parse(program.render())
        assert again.render() == program.render()


def test_an_agreeing_program_passes():
    assert_agrees("""
import execmode as em

# --- setup ---
g0 = em.tensor([1.0, -2.0, 0.5])

# --- function ---
def f(x):
    y = x * 2.0 + g0
    x += 1.0
    return y, x

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([0.25, 0.5, 0.75])
out1 = F(x1)
# --- call 2 ---
g0 += 1.0
x2 = em.tensor([1.0, 2.0, 3.0])
out2 = F(x2)
""")


TWO_CALLS = """
import execmode as em

# --- setup ---
g0 = em.tensor([1.0, -2.0, 0.5])

# --- function ---
def f(x):
    y = x * 2.0 + g0
    return y

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([0.25, 0.5, 0.75])
out1 = F(x1)
# --- call 2 ---
x2 = em.tensor([1.0, 2.0, 3.0])
out2 = F(x2)
"""


@pytest.mark.parametrize("wrong, pair", [
    ({"eager": "c"}, "eager/c vs eager/python"),
    ({"replay": "generated"}, "jit/generated vs jit/native"),
    ({"replay": "general"}, "jit/general vs jit/native"),
])
def test_the_path_matrix_names_the_two_paths(monkeypatch, wrong, pair):
    # A path that computes x * 2.5: the matrix runs the program on it and names the pair.
    import fuzz.check as fuzz_check
    from execmode.jit_driver import paths

    if not paths.eager_c_available():
        pytest.skip("the C paths cannot be built here")
    real = fuzz_check.run_on

    def one_path_wrong(program, mode, pins, jit=fuzz_check.default_jit):
        if all(pins.get(k) == v for k, v in wrong.items()):
            program = parse(program.render().replace("x * 2.0", "x * 2.5"))
        return real(program, mode, pins, jit)

    monkeypatch.setattr(fuzz_check, "run_on", one_path_wrong)
    mismatches = check_source(TWO_CALLS)
    assert mismatches and all(m.run == pair for m in mismatches), mismatches
    assert {m.key for m in mismatches} <= {("values", f"output [{pair}]"),
                                           ("values", f"earlier output [{pair}]")}
    other, reference = pair.split(" vs ")
    assert f"[{pair}]" in str(mismatches[0])
    assert mismatches[0].detail.startswith(f"[0] {reference} ") and f" {other} " in \
        mismatches[0].detail


# Planted bugs: stand-ins for em.jit that get one thing wrong, each of which the comparator
# must name.

def _copies_arguments(f, program):
    return lambda *args: f(*[a.clone() for a in args])       # in-place writes are lost


def _returns_copies(f, program):
    def call(*args):
        out = f(*args)
        if isinstance(out, tuple):
            return tuple(o.clone() if isinstance(o, em.Tensor) else o for o in out)
        return out.clone() if isinstance(out, em.Tensor) else out
    return call


def _perturbs(f, program):
    def call(*args):
        out = f(*args)
        return tuple(o + 1e-3 if isinstance(o, em.Tensor) and o.dtype.kind == "f" else o
                     for o in out)
    return call


def _raises_other_type(f, program):
    def call(*args):
        try:
            return f(*args)
        except Exception as exc:
            raise RuntimeError("wrapped") from exc
    return call


PLANTED = """
import execmode as em

# --- setup ---
g0 = em.tensor([1.0, -2.0, 0.5])

# --- function ---
def f(x):
    y = x * 2.0
    x += g0
    return y, x, g0

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([0.25, 0.5, 0.75])
out1 = F(x1)
"""


@pytest.mark.parametrize("fake, check_name, category", [
    (_copies_arguments, "values", "argument"),
    (_returns_copies, "identity", "argument ~ output"),
    (_perturbs, "values", "output"),
])
def test_the_comparator_names_a_planted_bug(fake, check_name, category):
    keys = {m.key for m in check_source(PLANTED, jit=fake)}
    assert (check_name, category) in keys, keys


def test_the_comparator_checks_exception_types():
    text = PLANTED.replace("y = x * 2.0", "y = x[7]")
    assert check_source(text) == [] or all(m.check != "exception" for m in check_source(text))
    keys = {m.key for m in check_source(text, jit=_raises_other_type)}
    assert ("exception", "type") in keys


def test_the_comparator_checks_aliasing_and_grads():
    text = """
import execmode as em

# --- setup ---
w = em.tensor([1.0, 2.0], requires_grad=True)

# --- function ---
def f(x):
    (x * w).sum().backward()
    return x[1:]

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([3.0, 4.0])
out1 = F(x1)
"""
    def detached_copy(f, program):
        def call(*args):
            out = f(*args).clone()
            f.__globals__["w"].grad = None
            return out
        return call

    keys = {m.key for m in check_source(text, jit=detached_copy)}
    assert ("aliasing", "argument ~ output") in keys, keys
    assert ("grad", "parameter .grad") in keys, keys


def test_integer_tolerance_only_where_the_program_rounds():
    # A rounded float stored into an int64 (k *= em.exp(x)): 1 ulp of exp(2) times 2**31
    # is 1024 units (program 1795533063-6709). Exact programs still compare integers exactly.
    from .compare import compare_values
    e = np.array([-15867876359, 8, 3], dtype=np.int64)
    j = np.array([-15867877383, 8, 3], dtype=np.int64)
    assert compare_values(e, j, exact=False) is None
    assert compare_values(e, j, exact=True)[0] == "values"
    off_by_two = np.array([-15867876359, 10, 3], dtype=np.int64)
    assert compare_values(e, off_by_two, exact=False)[0] == "values"
    flags = np.array([True, False])
    assert compare_values(flags, ~flags, exact=False)[0] == "values"


def test_an_infinity_of_the_other_sign_is_named_in_the_detail():
    # Program 20261144-0 reported "values x1.grad: " with no element: +inf against -inf
    # in the same place failed the check but was left out of the places it lists.
    from .compare import compare_values
    e = np.array([np.inf, 1.0, np.nan], dtype=np.float32)
    j = np.array([-np.inf, 1.0, np.nan], dtype=np.float32)
    assert compare_values(e, j, exact=False) == ("values", "[0] eager inf jit -inf")
    assert compare_values(e, e.copy(), exact=False) is None


def test_the_minimizer_keeps_the_mismatch_and_shrinks():
    program = None
    for i in range(200):
        candidate = generate(f"4-{i}")
        if any(m.key == ("values", "argument") for m in check(candidate, _copies_arguments)):
            program = candidate
            break
    assert program is not None
    small = minimize(program, [("values", "argument")],
                     check=lambda p: check(p, _copies_arguments), budget_s=30)
    assert len(small.render()) < len(program.render())
    assert any(m.key == ("values", "argument") for m in check(small, _copies_arguments))


@pytest.mark.parametrize("name", sorted(KNOWN_MISMATCHES))
def test_known_repros_run_eagerly(name):
    """The repros of the known mismatch classes (fuzz/known.py) stay valid programs; the
    engine fixer turns each into ``assert_agrees(...)`` once its class is fixed."""
    result = run_mode(parse(KNOWN_MISMATCHES[name]), "eager")
    assert result.setup_error is None
    assert result.calls and all(c.exception is None for c in result.calls)
    # ... and still show their class with the check turned on, none with it off.
    checks = dict(CHECKS, **{name: True})
    assert check_source(KNOWN_MISMATCHES[name], checks=checks), name
    assert check_source(KNOWN_MISMATCHES[name]) == []


def test_checks_are_all_known():
    assert set(CHECKS) == {"exceptions", "values", "signed_zero", "requires_grad", "grads",
                           "identity", "aliasing", "output_aliasing", "jit_result_backward",
                           "int_extremes_sum_order"}
