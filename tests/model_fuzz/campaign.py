"""Many models from one seed: check them, group the mismatches, minimize one per group.

Model ``i`` of a campaign with seed ``S`` is ``generate(f"{S}-{i}")``: one failing model is
reproduced by its own seed string alone (``python -m tests.model_fuzz --model S-i``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .check import check
from .generator import generate
from .minimize import minimize


@dataclass
class Failure:
    seed: str
    spec: object
    mismatches: list
    minimized: object = None

    def report(self) -> str:
        shown = self.minimized or self.spec
        lines = [f"model {self.seed}: {len(self.mismatches)} mismatch(es); first: "
                 f"{self.mismatches[0]}"]
        if self.minimized is not None:
            lines.append("minimized (run it with JIT = em.jit and JIT = lambda f: f):")
        lines.append(shown.render().rstrip())
        lines.append("mismatches:")
        lines.extend(f"  {m}" for m in self.mismatches[:8])
        if len(self.mismatches) > 8:
            lines.append(f"  ... {len(self.mismatches) - 8} more")
        return "\n".join(lines)


@dataclass
class Campaign:
    seed: int
    count: int
    start: int = 0
    backends: tuple = ("numpy", "c")
    failures: list = field(default_factory=list)
    models_run: int = 0
    steps_run: int = 0
    seconds: float = 0.0
    tag_counts: dict = field(default_factory=dict)

    def run(self, stop_after: int | None = None, progress=None) -> Campaign:
        t0 = time.monotonic()
        for i in range(self.start, self.start + self.count):
            seed = f"{self.seed}-{i}"
            spec = generate(seed)
            for tag in spec.tags:
                self.tag_counts[tag] = self.tag_counts.get(tag, 0) + 1
            mismatches = check(spec, self.backends)
            self.models_run += 1
            self.steps_run += len(spec.steps)
            if mismatches:
                self.failures.append(Failure(seed, spec, mismatches))
                if stop_after is not None and len(self.failures) >= stop_after:
                    break
            if progress is not None:
                progress(i, self)
        self.seconds = time.monotonic() - t0
        return self

    def groups(self) -> dict:
        out: dict = {}
        for fail in self.failures:
            for key in dict.fromkeys(m.key for m in fail.mismatches):
                out.setdefault(key, []).append(fail)
        return out

    def minimize_groups(self, budget_s: float = 60.0, max_groups: int = 3) -> dict:
        out = {}
        for key, fails in sorted(self.groups().items()):
            if len(out) >= max_groups:
                break
            fail = min(fails, key=lambda f: len(f.spec.render()))
            small = minimize(fail.spec, [key], budget_s=budget_s, backends=self.backends)
            out[key] = Failure(fail.seed, fail.spec, check(small, self.backends) or
                               fail.mismatches, small)
        return out

    def summary(self) -> str:
        lines = [f"{self.models_run} models ({self.steps_run} steps) from seed {self.seed} "
                 f"in {self.seconds:.1f} s: {len(self.failures)} with mismatches"]
        for key, fails in sorted(self.groups().items(), key=lambda kv: -len(kv[1])):
            lines.append(f"  {len(fails):5d}  {key[0]} / {key[1]}   e.g. model {fails[0].seed}")
        return "\n".join(lines)


__all__ = ["Campaign", "Failure"]
