"""One program through both modes and every path: the list of mismatches (empty when they
agree).

The path matrix (jit_driver/paths.py): eager runs on the Python operators (the
reference) and again on the C operators; jit runs with the C entry where the plan
qualifies (``native``), compared with eager as always, and again on the ``generated``
Python replay and the ``general`` path where its calls met those tiers. Two runs of one
mode on two paths use the same kernels, so they must agree bit for bit; a mismatch's
``run`` names the two paths ("eager/c vs eager/python"). Eager vs jit is compared once:
with every path exact against its mode's reference, that covers every pair.
"""

from __future__ import annotations

import warnings

from execmode import dispatch
from execmode.jit_driver import paths

from .compare import Mismatch, compare_runs
from .program import Program, parse
from .rounding import drop_rounding
from .runner import default_jit, run_both, run_mode, run_on


def check(program: Program, jit=default_jit, checks: dict | None = None) -> list:
    """Every mismatch between eager and each jitted run of ``program`` (``checks``:
    features.CHECKS by default)."""
    return check_runs(program, jit, checks)[0]


# The reference paths: what the eager vs jit comparison runs on.
REFERENCE = {"eager": "python", "replay": "native"}


def check_runs(program: Program, jit=default_jit, checks: dict | None = None,
               matrix: bool = True):
    """(mismatches, the eager run): ``check`` that also says what eager did; ``matrix``:
    every path compared as well (module docstring)."""
    with warnings.catch_warnings():
        # NumPy warns about the NaN/Inf the programs make on purpose (in both modes).
        warnings.simplefilter("ignore", RuntimeWarning)
        eager, others = run_both(program, jit, REFERENCE)
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
    if matrix:
        out.extend(path_matrix(program, eager, others, jit, checks))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # Values that differ by no more than the program's own sensitivity to how its
        # transcendentals round are rounding, not mismatches (rounding.py).
        out = drop_rounding(program, eager, others, out, run_mode)
    return out, eager


def path_matrix(program: Program, eager, others: list, jit=default_jit,
                checks: dict | None = None) -> list:
    """The mismatches between the reference runs (``eager``, ``others``) and the same
    program on the other paths: eager on the C operators; jit on each replay tier its
    calls met (a function whose calls never had a fast replay runs alike on all)."""
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if paths.eager_c_available():
            runs.append((eager, "eager/python", run_on(program, "eager", {"eager": "c"}),
                         "eager/c"))
        if not program.threads and others:
            reference = others[0]
            kinds = reference.fast_kinds
            tiers = (["generated"] if "FastEntry" in kinds else []) + \
                (["general"] if kinds - {"NoneType"} else [])
            for tier in tiers:
                pins = dict(REFERENCE, replay=tier)
                runs.append((reference, "jit/native", run_on(program, "jit", pins, jit),
                             f"jit/{tier}"))
    out = []
    for ref, ref_name, other, name in runs:
        other.label = f"{name} vs {ref_name}"
        out.extend(compare_runs(program, ref, other, checks, names=(ref_name, name),
                                exact=True))
    return out


def check_source(text: str, jit=default_jit, checks: dict | None = None) -> list:
    """``check`` for a program's text (a repro pasted into a regression test)."""
    return check(parse(text), jit, checks)


def assert_agrees(text: str, jit=default_jit, checks: dict | None = None) -> None:
    """Fail with every mismatch when eager and jit disagree on the program ``text``."""
    mismatches = check_source(text, jit, checks)
    if mismatches:
        raise AssertionError("eager and em.jit disagree:\n" + "\n".join(
            f"  {m}" for m in mismatches) + "\n\nprogram:\n" + text)
