"""Many programs from one seed: run them, group the mismatches, minimize one per group.

Program ``i`` of a campaign with seed ``S`` is ``generate(f"{S}-{i}", features)``, so one
failing program is reproduced by its own seed string alone (``python -m tests.fuzz
--program S-i``).
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field

from .check import check, check_runs
from .features import FEATURES
from .generator import generate
from .minimize import minimize


def seed_from_env(default=None) -> int:
    """``EXECMODE_FUZZ_SEED`` if set, else ``default``, else a fresh random seed."""
    text = os.environ.get("EXECMODE_FUZZ_SEED", "").strip()
    if text:
        return int(text)
    if default is not None:
        return default
    return random.SystemRandom().randrange(1, 2**31)


@dataclass
class Failure:
    seed: str
    program: object
    mismatches: list
    minimized: object = None
    minimized_mismatches: list = field(default_factory=list)

    def report(self) -> str:
        shown = self.minimized or self.program
        ms = self.minimized_mismatches if self.minimized else self.mismatches
        lines = [f"program {self.seed}: {len(self.mismatches)} mismatch(es); "
                 f"first: {self.mismatches[0]}"]
        if self.minimized is not None:
            lines.append("minimized repro (tests/fuzz/check.py: assert_agrees(SOURCE)):")
        lines.append(shown.render().rstrip())
        lines.append("mismatches of this program:")
        lines.extend(f"  {m}" for m in ms[:8])
        if len(ms) > 8:
            lines.append(f"  ... {len(ms) - 8} more")
        return "\n".join(lines)


@dataclass
class Campaign:
    seed: int
    count: int
    features: dict = field(default_factory=lambda: dict(FEATURES))
    start: int = 0              # the first program's index (a chunk of a bigger campaign)
    failures: list = field(default_factory=list)
    programs_run: int = 0
    seconds: float = 0.0
    tag_counts: dict = field(default_factory=dict)
    calls_run: int = 0          # calls that returned, eagerly
    eager_errors: dict = field(default_factory=dict)   # exception type -> programs
    # Every how many programs also run the path matrix (check.py; 0: never): the fast
    # tier takes every fourth (+~20% of its time), the slow tier every one.
    matrix_every: int = 1

    def program_seed(self, i: int) -> str:
        return f"{self.seed}-{i}"

    def run(self, stop_after: int | None = None, time_budget_s: float | None = None,
            progress=None) -> Campaign:
        t0 = time.monotonic()
        for i in range(self.start, self.start + self.count):
            if time_budget_s is not None and time.monotonic() - t0 > time_budget_s:
                break
            seed = self.program_seed(i)
            program = generate(seed, self.features)
            for tag in program.tags():
                self.tag_counts[tag] = self.tag_counts.get(tag, 0) + 1
            matrix = self.matrix_every > 0 and i % self.matrix_every == 0
            mismatches, eager = check_runs(program, matrix=matrix)
            self.programs_run += 1
            for obs in eager.calls:
                err = obs.exception or obs.before_error
                if err is None:
                    self.calls_run += 1
                else:
                    self.eager_errors[err.type] = self.eager_errors.get(err.type, 0) + 1
            if eager.setup_error is not None:
                t = "setup " + eager.setup_error.type
                self.eager_errors[t] = self.eager_errors.get(t, 0) + 1
            if mismatches:
                self.failures.append(Failure(seed, program, mismatches))
                if stop_after is not None and len(self.failures) >= stop_after:
                    break
            if progress is not None:
                progress(i, self)
        self.seconds = time.monotonic() - t0
        return self

    def groups(self) -> dict:
        """key -> failures whose mismatches include it (a failure may be in several)."""
        out: dict = {}
        for fail in self.failures:
            for key in dict.fromkeys(m.key for m in fail.mismatches):
                out.setdefault(key, []).append(fail)
        return out

    def minimize_groups(self, budget_s: float = 60.0, max_groups: int | None = None) -> dict:
        """One minimized failure per mismatch key (the smallest original program first)."""
        out = {}
        for key, fails in sorted(self.groups().items()):
            if max_groups is not None and len(out) >= max_groups:
                break
            fail = min(fails, key=lambda f: len(f.program.render()))
            small = minimize(fail.program, [key], budget_s=budget_s)
            out[key] = Failure(fail.seed, fail.program, fail.mismatches, small,
                               [m for m in check(small)])
        return out

    def summary(self) -> str:
        lines = [f"{self.programs_run} programs from seed {self.seed} in {self.seconds:.1f} s: "
                 f"{len(self.failures)} with mismatches"]
        errors = ", ".join(f"{k} {v}" for k, v in sorted(self.eager_errors.items(),
                                                          key=lambda kv: -kv[1]))
        lines.append(f"  {self.calls_run} calls returned; programs ended by an eager "
                     f"exception: {sum(self.eager_errors.values())} ({errors or 'none'})")
        for key, fails in sorted(self.groups().items(), key=lambda kv: -len(kv[1])):
            lines.append(f"  {len(fails):5d}  {key[0]} / {key[1]}   e.g. program {fails[0].seed}")
        return "\n".join(lines)
