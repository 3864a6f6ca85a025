"""One program through both modes: the list of mismatches (empty when they agree)."""

from __future__ import annotations

import warnings

from execmode import dispatch

from .compare import Mismatch, compare_runs
from .program import Program, parse
from .rounding import drop_rounding
from .runner import default_jit, run_both, run_mode


def check(program: Program, jit=default_jit, checks: dict | None = None) -> list:
    """Every mismatch between eager and each jitted run of ``program`` (``checks``:
    features.CHECKS by default)."""
    return check_runs(program, jit, checks)[0]


def check_runs(program: Program, jit=default_jit, checks: dict | None = None):
    """(mismatches, the eager run): ``check`` that also says what eager did."""
    with warnings.catch_warnings():
        # NumPy warns about the NaN/Inf the programs make on purpose (in both modes).
        warnings.simplefilter("ignore", RuntimeWarning)
        eager, others = run_both(program, jit)
    out = []
    leaked = dispatch.current_tracer()
    if leaked is not None:
        # A tracer left installed (threads tracing at once, class 10) would trace every
        # later eager op of the process: report it, and uninstall it so that the next
        # program starts clean.
        dispatch.set_tracer(None)
        out.append(Mismatch(len(eager.calls), "leaked tracer", "",
                            f"a tracer stayed installed after the program: {leaked!r}",
                            "process", "jit"))
    for other in others:
        out.extend(compare_runs(program, eager, other, checks))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # Values that differ by no more than the program's own sensitivity to how its
        # transcendentals round are rounding, not mismatches (rounding.py).
        out = drop_rounding(program, eager, others, out, run_mode)
    return out, eager


def check_source(text: str, jit=default_jit, checks: dict | None = None) -> list:
    """``check`` for a program's text (a repro pasted into a regression test)."""
    return check(parse(text), jit, checks)


def assert_agrees(text: str, jit=default_jit, checks: dict | None = None) -> None:
    """Fail with every mismatch when eager and jit disagree on the program ``text``."""
    mismatches = check_source(text, jit, checks)
    if mismatches:
        raise AssertionError("eager and em.jit disagree:\n" + "\n".join(
            f"  {m}" for m in mismatches) + "\n\nprogram:\n" + text)
