"""Shrink a mismatching program: drop parts while the same kind of mismatch persists.

Greedy, one part at a time, until nothing more can go (or the budget is spent): run
options first (threads, listener, backend, passes), then whole calls, the statements
between calls, the function's statements, returned values, parameters (with their
arguments) and set-up statements. "The same kind" is the mismatch's key (check and
category, compare.Mismatch.key), so shrinking never slides into a different bug.
"""

from __future__ import annotations

import time

from execmode.passes.manager import ALL

from .check import check as check_program
from .program import Program


class Minimizer:
    def __init__(self, keys, check=check_program, budget_s: float = 120.0,
                 max_runs: int = 400):
        self.keys = set(keys)
        self.check = check
        self.deadline = time.monotonic() + budget_s
        self.runs_left = max_runs

    def out_of_budget(self) -> bool:
        return time.monotonic() > self.deadline or self.runs_left <= 0

    def fails_once(self, program: Program) -> bool:
        self.runs_left -= 1
        try:
            return any(m.key in self.keys for m in self.check(program))
        except Exception:  # noqa: BLE001 - a candidate the harness cannot run is no repro
            return False

    def still_fails(self, program: Program) -> bool:
        # Twice: some mismatches (a buffer read before it is written) come and go, and one
        # lucky run must not let the minimizer drop what the mismatch needs.
        return self.fails_once(program) and self.fails_once(program)

    def try_change(self, make) -> bool:
        """Apply ``make(copy of current)`` (which returns False when not applicable) and
        keep it when the mismatch persists."""
        if self.out_of_budget():
            return False
        q = self.current.copy()
        if make(q) is False:
            return False
        if self.still_fails(q):
            self.current = q
            return True
        return False

    def sweep(self) -> bool:
        """One pass over every part; True when something went."""
        changed = False
        p = self.current
        for attr, empty in (("threads", False), ("listener", None), ("backend", None)):
            if getattr(self.current, attr) != empty:
                changed |= self.try_change(lambda q, a=attr, e=empty: setattr(q, a, e))
        if self.current.passes is None:
            changed |= self.try_change(lambda q: setattr(q, "passes", []))
            for name in ALL:  # the one pass that makes the difference, when one does
                if self.current.passes is None:
                    changed |= self.try_change(lambda q, n=name: setattr(q, "passes", [n]))
        else:
            for i in reversed(range(len(self.current.passes))):
                changed |= self.try_change(lambda q, i=i: q.passes.pop(i) and None)
        for i in reversed(range(len(self.current.calls))):
            if len(self.current.calls) > 1:
                changed |= self.try_change(lambda q, i=i: q.calls.pop(i) and None)
        for c in range(len(self.current.calls)):
            for j in reversed(range(len(self.current.calls[c].before))):
                changed |= self.try_change(lambda q, c=c, j=j: q.calls[c].before.pop(j) and None)
        for i in reversed(range(len(self.current.body))):
            changed |= self.try_change(lambda q, i=i: q.body.pop(i) and None)
        for i in reversed(range(len(self.current.returns))):
            changed |= self.try_change(lambda q, i=i: q.returns.pop(i) and None)

        def drop_param(q, i):
            q.params.pop(i)
            for call in q.calls:
                if i < len(call.args):
                    call.args.pop(i)

        for i in reversed(range(len(self.current.params))):
            changed |= self.try_change(lambda q, i=i: drop_param(q, i))
        for i in reversed(range(len(self.current.setup))):
            changed |= self.try_change(lambda q, i=i: q.setup.pop(i) and None)
        if not self.current.single_return and len(self.current.returns) == 1:
            changed |= self.try_change(lambda q: setattr(q, "single_return", True))
        del p
        return changed

    def run(self, program: Program) -> Program:
        self.current = program
        while not self.out_of_budget() and self.sweep():
            pass
        return self.current


def minimize(program: Program, keys, check=check_program, budget_s: float = 120.0) -> Program:
    """The smallest program found that still shows a mismatch with one of ``keys``."""
    return Minimizer(keys, check, budget_s).run(program)
