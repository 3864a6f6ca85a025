"""A script whose deepest op sits just above Python's recursion limit: the debugger's own
work (pausing, summarising, evaluating a condition) must not push it over.

The engine's listener path (dispatch) needs a few frames more than the plain fast path,
and that is not the agent's to change; so the test first finds the smallest margin below
the limit at which the script runs under `execmode run` without breakpoints, then pauses
and evaluates conditions at that same depth (+2 frames of slack).
"""

from __future__ import annotations

import os

import pytest
from fault_helpers import SCRIPTS, run_execmode

from execmode.debug.conditions import MAX_DEPTH

# Slow tier: faults injected into real processes.
pytestmark = pytest.mark.slow

SCRIPT = os.path.join(SCRIPTS, "deep_op.py")
PLAIN_OUTPUT = "ok [3.0, 3.0, 3.0] 1000"


def runs(*options, margin: int):
    result = run_execmode("run", *options, SCRIPT, str(margin), timeout=60)
    return result.returncode == 0 and PLAIN_OUTPUT in result.stdout, result


@pytest.fixture(scope="module")
def margin():
    """The smallest margin (frames below the limit) that the engine's own listener path
    allows, by bisection over real runs; plus 2."""
    low, high = 1, 64
    assert runs(margin=high)[0], runs(margin=high)[1].stderr
    while low < high:
        middle = (low + high) // 2
        if runs(margin=middle)[0]:
            high = middle
        else:
            low = middle + 1
    return low + 2


def test_pausing_at_the_bottom_of_a_deep_recursion(margin):
    """Before: the agent raised RecursionError while pausing 20 frames below the limit."""
    ok, result = runs("--keep-going", "--break", "op:multiply", margin=margin)
    assert ok, result.stderr
    assert "[execmode] breakpoint 1: op:multiply" in result.stderr
    assert "RecursionError" not in result.stderr


def test_a_deep_condition_at_the_bottom_of_a_deep_recursion(margin):
    """A condition nested to the depth limit needs ~2 frames per level, all of them the
    agent's: they come from the headroom, not from the script's stack."""
    condition = "not (" * (MAX_DEPTH - 2) + "max > 1e30" + ")" * (MAX_DEPTH - 2)
    ok, result = runs("--break", condition, margin=margin)
    assert ok, result.stderr
    assert "disabled" not in result.stderr and "RecursionError" not in result.stderr


def test_the_script_keeps_its_own_recursion_limit(margin):
    """The headroom is lent while a hook runs and given back: the script sees its limit."""
    ok, result = runs("--keep-going", "--break", "nan", margin=margin)
    assert ok, result.stderr
