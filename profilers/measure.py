"""One measurement protocol for every time execmode shows: ``em.compare``, the profiler's
calibration and the benchmarks all measure through here.

    spreads = measure({"eager": f, "graph": g})
    verdict = decide(spreads["eager"], spreads["graph"])   # "1.84x" or "undecided: ..."
    print(context_line())                                  # threads, load, machine, commit

* **Warm-up.** Every candidate runs a few calls first (caches, lazy imports, a jit's
  first call), and those calls size the rounds.
* **Interleaved rounds.** Round ``r`` runs every candidate once, in an order rotated by
  ``r``: a slow spell of the machine lands on all candidates alike, not on whichever ran
  last. Each round runs a candidate's calls back to back for about ``round_s`` seconds.
* **Medians with their spread.** A :class:`Spread` holds the per-call time of every
  round: median, quartiles, min and max. Never the best round: a best-of hides exactly
  the contention a person's own run will meet.
* **A verdict only when the numbers can carry one.** :func:`decide` gives a ratio when
  there are at least :data:`MIN_ROUNDS` rounds, each side's rounds agree (the middle half
  within :data:`MAX_RELATIVE_IQR` of the median) and the two middle halves do not
  overlap; otherwise it says *undecided* and why. A busy machine is never an error.
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import time
from dataclasses import dataclass

MIN_ROUNDS = 5
DEFAULT_ROUNDS = 7
# The middle half of a side's rounds may span at most this fraction of its median before
# the rounds are said to disagree (a contended machine: other work, spinning threads).
MAX_RELATIVE_IQR = 0.25
ROUND_SECONDS = 0.01
WARMUP_CALLS = 2

_perf_ns = time.perf_counter_ns


@dataclass(frozen=True)
class Spread:
    """Per-call times (ns) of one candidate, one sample per round."""

    samples: tuple
    calls: int  # calls per round

    @classmethod
    def of(cls, samples, calls: int = 1) -> Spread:
        return cls(tuple(float(s) for s in samples), int(calls))

    @property
    def rounds(self) -> int:
        return len(self.samples)

    @property
    def median(self) -> float:
        return _quantile(sorted(self.samples), 0.5)

    @property
    def q1(self) -> float:
        return _quantile(sorted(self.samples), 0.25)

    @property
    def q3(self) -> float:
        return _quantile(sorted(self.samples), 0.75)

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    @property
    def relative_iqr(self) -> float:
        """The middle half's width over the median (0: every round agreed)."""
        median = self.median
        return (self.q3 - self.q1) / median if median > 0 else math.inf

    def text(self, scale: float = 1e3, unit: str = "us") -> str:
        """``"12.3 us (IQR 12.1-12.9, 7 rounds)"``."""
        return (f"{self.median / scale:.4g} {unit} (IQR {self.q1 / scale:.4g}-"
                f"{self.q3 / scale:.4g}, {self.rounds} rounds)")

    def to_json(self) -> dict:
        return {"median_ns": self.median, "q1_ns": self.q1, "q3_ns": self.q3,
                "min_ns": self.low, "max_ns": self.high, "rounds": self.rounds,
                "calls_per_round": self.calls}


@dataclass(frozen=True)
class Verdict:
    """``ratio`` = a's median over b's when decided; else None and ``reason`` says why."""

    ratio: float | None
    reason: str = ""

    @property
    def decided(self) -> bool:
        return self.ratio is not None

    def __str__(self) -> str:
        return f"{self.ratio:.2f}x" if self.decided else f"undecided: {self.reason}"


def measure(candidates: dict, *, rounds: int = DEFAULT_ROUNDS, round_s: float = ROUND_SECONDS,
            warmup: int = WARMUP_CALLS, calls: int | None = None,
            after_round=None) -> dict:
    """Time each ``candidates[name]()`` over ``rounds`` interleaved rounds; returns
    ``{name: Spread}``.

    ``calls``: calls per round for every candidate (default: sized from the warm-up so a
    round lasts about ``round_s``). ``after_round(name, round_index, calls)`` runs after
    each candidate's round, outside its timing (em.compare reads its listeners there).
    """
    names = list(candidates)
    per_round = {}
    for name in names:
        fn = candidates[name]
        t0 = _perf_ns()
        for _ in range(max(int(warmup), 1)):
            fn()
        one = (_perf_ns() - t0) / max(int(warmup), 1)
        per_round[name] = int(calls) if calls else _calls_for(one, round_s)
    samples: dict = {name: [] for name in names}
    for r in range(int(rounds)):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            fn, n = candidates[name], per_round[name]
            t0 = _perf_ns()
            for _ in range(n):
                fn()
            samples[name].append((_perf_ns() - t0) / n)
            if after_round is not None:
                after_round(name, r, n)
    return {name: Spread.of(samples[name], per_round[name]) for name in names}


def decide(a: Spread, b: Spread, *, a_name: str = "the first", b_name: str = "the second",
           max_relative_iqr: float = MAX_RELATIVE_IQR) -> Verdict:
    """a's median over b's, or undecided with the reason (see the module docstring)."""
    rounds = min(a.rounds, b.rounds)
    if rounds < MIN_ROUNDS:
        return Verdict(None, f"{rounds} rounds, fewer than the {MIN_ROUNDS} a ratio needs")
    for name, s in ((a_name, a), (b_name, b)):
        if s.relative_iqr > max_relative_iqr:
            return Verdict(None, f"{name}'s rounds disagree (the middle half spans "
                                 f"{s.relative_iqr:.0%} of the median; a busy machine? "
                                 f"{load_text()})")
    if a.q1 <= b.q3 and b.q1 <= a.q3:
        return Verdict(None, f"the two spreads overlap ({a_name} {a.text()}, {b_name} "
                             f"{b.text()}): no difference this measurement can resolve")
    return Verdict(a.median / b.median if b.median > 0 else math.inf)


def context() -> dict:
    """What the numbers were measured on: threads, load, machine, versions, commit."""
    import platform

    import numpy as np
    from execmode.profilers.machine import machine_info

    info = machine_info()
    return {
        "cpu": info.get("cpu"), "cpus": info.get("cpus"),
        "load_average": _load_average(),
        "threads": _thread_settings(),
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
        "python": platform.python_version(), "numpy": np.__version__,
        "commit": commit(),
    }


def context_line(ctx: dict | None = None) -> str:
    """One line of :func:`context` to print beside the numbers."""
    ctx = context() if ctx is None else ctx
    parts = [f"{ctx['cpu']}, {ctx['cpus']} CPUs", _load_words(ctx["load_average"])]
    parts.append(_threads_text(ctx["threads"]))
    if ctx.get("openblas_coretype"):
        parts.append(f"OPENBLAS_CORETYPE={ctx['openblas_coretype']}")
    parts.append(f"Python {ctx['python']}, NumPy {ctx['numpy']}, commit {ctx['commit']}")
    return "; ".join(parts)


def load_text() -> str:
    return _load_words(_load_average())


@functools.cache
def commit() -> str:
    """The checkout's short commit (``+dirty`` with uncommitted changes), or the package
    version when execmode is not run from a git checkout."""
    import execmode

    root = os.path.dirname(os.path.dirname(os.path.abspath(execmode.__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            raise OSError(head.stderr)
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=5).stdout.strip()
        return head.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return f"version {getattr(execmode, '__version__', '?')}"


def _calls_for(one_call_ns: float, round_s: float) -> int:
    if one_call_ns <= 0:
        return 1000
    return max(1, min(1_000_000, int(round_s * 1e9 / one_call_ns)))


def _quantile(sorted_samples, q: float) -> float:
    """Linear interpolation between the closest ranks (NumPy's default method)."""
    if not sorted_samples:
        return math.nan
    pos = (len(sorted_samples) - 1) * q
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_samples) - 1)
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (pos - lo)


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _load_words(load: float | None) -> str:
    return "load average unknown" if load is None else f"load average {load:.2f}"


def _thread_settings() -> dict:
    from execmode.codegen import threads

    settings = getattr(threads, "thread_settings", None)
    if settings is not None:
        return settings()
    return {"threads": threads.num_threads(), "source": "EXECMODE_NUM_THREADS or usable CPUs"}


def _threads_text(settings: dict) -> str:
    from execmode.codegen import threads

    text = getattr(threads, "thread_settings_text", None)
    if text is not None:
        return text(settings)
    return f"threads: {settings.get('threads')} ({settings.get('source')})"
