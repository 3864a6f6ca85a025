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
  there are at least :data:`MIN_ROUNDS` rounds, the machine was not busier than its CPUs
  while they ran (the scheduler's account of how long this process's threads waited for
  a CPU during each round, as far as other processes held it (:func:`others_share`: not
  a framework's own threads queueing for the one CPU a benchmark pinned): more than
  :data:`MAX_WAIT_SHARE` in most rounds means the candidate had a share of a core, which
  can hold steady for a second and change the next; where the kernel does not keep it,
  the tasks ready to run against the machine's CPUs), each side's rounds agree (the middle half within
  :data:`MAX_RELATIVE_IQR` of the median) and the two middle halves do not overlap;
  otherwise it says *undecided* and why. A busy machine is never an error.
* **Goals on the median.** :func:`judge_ratio` and :func:`judge_value` say whether a goal
  ("<= 1.2x", "<= 1.0 s") is met, missed or undecided (too few rounds, rounds that
  disagree): the median decides, never the best round.
* **Self-timed candidates.** :func:`run_interleaved` keeps the rounds and their order for
  what cannot be timed as a loop of calls here: a first call in a fresh process (the C
  compiler's time included), a terminal's answer to a key.
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import time
from dataclasses import dataclass

from execmode.profilers import measure_sizes

MIN_ROUNDS = 5
DEFAULT_ROUNDS = 7
# The middle half of a side's rounds may span at most this fraction of its median before
# the rounds are said to disagree (a contended machine: other work, spinning threads).
MAX_RELATIVE_IQR = 0.25
# A round whose threads waited for a CPU that other processes held more than this share
# of its time ran on a share of a core (on an idle machine: under 1%; with one more busy
# process than cores: ~50%).
MAX_WAIT_SHARE = 0.10
ROUND_SECONDS = 0.01
WARMUP_CALLS = 2

_perf_ns = time.perf_counter_ns


@dataclass(frozen=True)
class Spread:
    """Per-call times (ns) of one candidate, one sample per round."""

    samples: tuple
    calls: int  # calls per round
    # Tasks ready to run on the machine after each round (this process's included), where
    # measure() could read it: more than the usable CPUs means the rounds shared them.
    runnable: tuple = ()
    # The share of each round this process's threads spent ready to run but waiting for a
    # CPU (the scheduler's own account, /proc/<pid>/task/*/schedstat), where measure()
    # could read it: the direct sign of a share of a core, container or not.
    waited: tuple = ()

    @classmethod
    def of(cls, samples, calls: int = 1, runnable=(), waited=()) -> Spread:
        return cls(tuple(float(s) for s in samples), int(calls), tuple(runnable),
                   tuple(waited))

    @property
    def crowded(self) -> bool:
        """In most rounds, the threads timed waited for a CPU more than MAX_WAIT_SHARE of
        the round; where that is not known, more tasks were ready to run than the machine
        has CPUs."""
        if self.waited:
            return _quantile(sorted(self.waited), 0.5) > MAX_WAIT_SHARE
        return bool(self.runnable) and _quantile(sorted(self.runnable), 0.5) > machine_cpus()

    def crowding_text(self) -> str:
        if self.waited:
            return (f"other work held the CPUs its threads waited for "
                    f"{_quantile(sorted(self.waited), 0.5):.0%} of the time, by the median round")
        return (f"a median of {_quantile(sorted(self.runnable), 0.5):.0f} tasks were ready "
                f"to run on {machine_cpus()} CPUs")

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
        return (f"{_number(self.median / scale)} {unit} (IQR {_number(self.q1 / scale)}-"
                f"{_number(self.q3 / scale)}, {self.rounds} rounds)")

    def to_json(self) -> dict:
        return {"median_ns": self.median, "q1_ns": self.q1, "q3_ns": self.q3,
                "min_ns": self.low, "max_ns": self.high, "rounds": self.rounds,
                "calls_per_round": self.calls}


@dataclass(frozen=True)
class Verdict:
    """``ratio`` = a's median over b's when decided; else None and ``reason`` says why."""

    ratio: float | None
    reason: str = ""
    # Why, in a word or two, for a table cell: "few rounds", "busy machine",
    # "rounds disagree", "overlap".
    kind: str = ""

    @property
    def decided(self) -> bool:
        return self.ratio is not None

    def __str__(self) -> str:
        return f"{self.ratio:.2f}x" if self.decided else f"undecided: {self.reason}"

    def cell(self) -> str:
        """The verdict in a table cell: ``"1.84x"`` or ``"undecided (overlap)"``."""
        return f"{self.ratio:.2f}x" if self.decided else f"undecided ({self.kind})"


def measure(candidates: dict, *, rounds: int = DEFAULT_ROUNDS, round_s: float = ROUND_SECONDS,
            warmup: int = WARMUP_CALLS, calls: int | None = None,
            after_round=None, before_round=None, sync=None,
            replay_sizes: bool = True) -> dict:
    """Time each ``candidates[name]()`` over ``rounds`` interleaved rounds; returns
    ``{name: Spread}``.

    ``calls``: calls per round for every candidate (default: sized from the warm-up so a
    round lasts about ``round_s``). ``after_round(name, round_index, calls)`` runs after
    each candidate's round, outside its timing (em.compare reads its listeners there).
    ``before_round(name)`` runs before each candidate's warm-up and round, outside the
    timing: a setting the candidate needs (a thread count, which operators are installed).
    ``sync()`` runs at the end of each round *inside* its timing: work the calls only
    queued (a GPU stream) belongs to the round that queued it. ``replay_sizes=False``
    leaves EXECMODE_MEASURE_SIZES alone (measure_sizes.py): the profiler's calibration,
    which runs in some processes of a comparison and not in others.
    """
    names = list(candidates)
    per_round, warmed = {}, {}
    # A run compared with another run of the same script makes that run's calls
    # (measure_sizes.py); None: sized here, by time.
    sizes = measure_sizes.current() if replay_sizes else None
    written = sizes.take(names) if sizes is not None else None
    for i, name in enumerate(names):
        fn = candidates[name]
        if before_round is not None:
            before_round(name)
        count = written["warmup"][i] if written else None
        one, warmed[name] = _warm_up(fn, warmup, round_s, sync, count)
        per_round[name] = (written["calls"][i] if written else
                           int(calls) if calls else _calls_for(one, round_s))
    if sizes is not None and written is None:
        sizes.put(names, [warmed[n] for n in names], [per_round[n] for n in names])
    samples: dict = {name: [] for name in names}
    runnable: dict = {name: [] for name in names}
    waited: dict = {name: [] for name in names}
    for r in range(int(rounds)):
        for name in _round_order(names, r):
            fn, n = candidates[name], per_round[name]
            if before_round is not None:
                before_round(name)
            cpu0 = threads_cpu_ns()
            t0 = _perf_ns()
            for _ in range(n):
                fn()
            if sync is not None:
                sync()
            elapsed = _perf_ns() - t0
            cpu1 = threads_cpu_ns()
            samples[name].append(elapsed / n)
            if cpu0 is not None and cpu1 is not None and elapsed > 0:
                waited[name].append(others_share(cpu0, cpu1, elapsed))
            ready = runnable_tasks()
            if ready is not None:
                runnable[name].append(ready)
            if after_round is not None:
                after_round(name, r, n)
    return {name: Spread.of(samples[name], per_round[name], runnable[name], waited[name])
            for name in names}


def paired(candidates: dict, pairs: dict, *, rounds: int = DEFAULT_ROUNDS,
           before_round=None) -> dict:
    """``{pair name: Spread}`` of ``candidates[second]()``'s time less
    ``candidates[first]()``'s, for ``pairs`` ``{name: (first, second)}``, one difference
    per round.

    For a difference smaller than the rounds' own spread: the two runs of a pair are
    adjacent, which goes first alternates, and each round takes the pairs in an order
    rotated as :func:`measure` rotates its candidates. ``before_round(candidate name)``
    runs before each run, outside its timing."""
    names = list(pairs)
    differences: dict = {name: [] for name in names}
    runnable: dict = {name: [] for name in names}
    for r in range(int(rounds)):
        for name in _round_order(names, r):
            took = {}
            for which in (pairs[name] if r % 2 else pairs[name][::-1]):
                if before_round is not None:
                    before_round(which)
                t0 = _perf_ns()
                candidates[which]()
                took[which] = _perf_ns() - t0
            first, second = pairs[name]
            differences[name].append(took[second] - took[first])
            ready = runnable_tasks()
            if ready is not None:
                runnable[name].append(ready)
    return {name: Spread.of(differences[name], 1, runnable[name]) for name in names}


def _warm_up(fn, warmup: int, round_s: float, sync, count: int | None = None) -> tuple:
    """Run ``fn`` at least ``warmup`` + 1 times and for about a round (or exactly
    ``count`` times); (the ns of the median call after the first, the calls made). The
    first is left out (a jit's first call compiles), and the median, not the mean: one
    call stalled by another process must not size every round to a single call."""
    times, spent = [], 0
    while (len(times) < count if count is not None else
           len(times) < max(int(warmup), 1) + 1 or (spent < round_s * 1e9 and len(times) < 1000)):
        t0 = _perf_ns()
        fn()
        if sync is not None:
            sync()
        times.append(_perf_ns() - t0)
        spent += times[-1]
    return _quantile(sorted(times[1:] or times), 0.5), len(times)


def run_interleaved(candidates: dict, *, rounds: int = DEFAULT_ROUNDS,
                    runnable: dict | None = None) -> dict:
    """Call each ``candidates[name]()`` once per round, rounds interleaved and rotated as
    :func:`measure` does; returns ``{name: [result of round 0, round 1, ...]}``.

    For candidates that time themselves, where a loop of calls in this process cannot:
    a first call in a fresh process with an empty kernel cache, a terminal's answer to a
    key. A result may be a number (``Spread.of(results)``) or several (a tuple or dict per
    round, one :class:`Spread` per column).

    ``runnable``, when given, receives ``{name: [tasks ready to run after each round]}``
    for ``Spread.of(results, 1, runnable[name])``, so a busy machine can be told.
    """
    names = list(candidates)
    results: dict = {name: [] for name in names}
    for r in range(int(rounds)):
        for name in _round_order(names, r):
            results[name].append(candidates[name]())
            ready = runnable_tasks()
            if runnable is not None and ready is not None:
                runnable.setdefault(name, []).append(ready)
    return results


def _round_order(names: list, round_index: int) -> list:
    """Round ``r`` starts ``r`` places further along: no candidate always runs first
    (cold caches) or last (whatever the machine began doing meanwhile)."""
    shift = round_index % len(names) if names else 0
    return names[shift:] + names[:shift]


@dataclass(frozen=True)
class GoalVerdict:
    """Whether a goal ("<= 1.2x", "<= 1.0 s") is met, judged on the median.

    ``state``: "met", "missed" or "undecided"; ``value``: the median (or the ratio of two
    medians) the goal was judged on, None when undecided; ``reason`` says why undecided."""

    state: str
    value: float | None
    goal: float
    reason: str = ""

    @property
    def met(self) -> bool:
        return self.state == "met"

    def __str__(self) -> str:
        return self.state if self.state != "undecided" else f"undecided: {self.reason}"


def judge_ratio(a: Spread, b: Spread, goal: float, *, a_name: str = "the first",
                b_name: str = "the second",
                max_relative_iqr: float = MAX_RELATIVE_IQR) -> GoalVerdict:
    """Is a's median over b's at most ``goal``? A goal is met by the median or not at all
    (never by the best round); with too few rounds, or rounds that disagree (a busy
    machine), the answer is undecided. Overlapping spreads do not make it undecided: the
    goal is a threshold, not a claim that a and b differ."""
    problem = _too_few_or_disagreeing(((a_name, a), (b_name, b)), max_relative_iqr)
    if problem:
        return GoalVerdict("undecided", None, goal, problem)
    ratio = a.median / b.median if b.median > 0 else math.inf
    return GoalVerdict("met" if ratio <= goal else "missed", ratio, goal)


def judge_value(spread: Spread, goal: float, *, name: str = "the measurement",
                max_relative_iqr: float = MAX_RELATIVE_IQR) -> GoalVerdict:
    """Is the median of ``spread`` at most ``goal`` (same unit)? Undecided as in
    :func:`judge_ratio`."""
    problem = _too_few_or_disagreeing(((name, spread),), max_relative_iqr)
    if problem:
        return GoalVerdict("undecided", None, goal, problem)
    return GoalVerdict("met" if spread.median <= goal else "missed", spread.median, goal)


def _too_few_or_disagreeing(named_spreads, max_relative_iqr: float) -> str:
    rounds = min(s.rounds for _, s in named_spreads)
    if rounds < MIN_ROUNDS:
        return f"{rounds} rounds, fewer than the {MIN_ROUNDS} a verdict needs"
    return _crowded(named_spreads) or _disagreeing(named_spreads, max_relative_iqr)


def _crowded(named_spreads) -> str:
    for name, s in named_spreads:
        if s.crowded:
            # Rounds can agree and still be wrong: a share of a core that holds for a
            # second is steady within the rounds and not the next second.
            return (f"the machine was busier than its CPUs during {name}'s rounds "
                    f"({s.crowding_text()}; {load_text()})")
    return ""


def _disagreeing(named_spreads, max_relative_iqr: float) -> str:
    for name, s in named_spreads:
        if s.relative_iqr > max_relative_iqr:
            return (f"{name}'s rounds disagree (the middle half spans {s.relative_iqr:.0%} "
                    f"of the median; a busy machine? {load_text()})")
    return ""


def decide(a: Spread, b: Spread, *, a_name: str = "the first", b_name: str = "the second",
           max_relative_iqr: float = MAX_RELATIVE_IQR) -> Verdict:
    """a's median over b's, or undecided with the reason (see the module docstring)."""
    rounds = min(a.rounds, b.rounds)
    if rounds < MIN_ROUNDS:
        return Verdict(None, f"{rounds} rounds, fewer than the {MIN_ROUNDS} a ratio needs",
                       "few rounds")
    crowded = _crowded(((a_name, a), (b_name, b)))
    if crowded:
        return Verdict(None, crowded, "busy machine")
    disagreeing = _disagreeing(((a_name, a), (b_name, b)), max_relative_iqr)
    if disagreeing:
        return Verdict(None, disagreeing, "rounds disagree")
    if a.q1 <= b.q3 and b.q1 <= a.q3:
        return Verdict(None, f"the two spreads overlap ({a_name} {a.text()}, {b_name} "
                             f"{b.text()}): no difference this measurement can resolve",
                       "overlap")
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


def _number(x: float) -> str:
    """Four significant digits without an exponent: 12.34, 1234, 12,340."""
    if not math.isfinite(x):
        return str(x)
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    return f"{x:.4g}"


def _quantile(sorted_samples, q: float) -> float:
    """Linear interpolation between the closest ranks (NumPy's default method)."""
    if not sorted_samples:
        return math.nan
    pos = (len(sorted_samples) - 1) * q
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_samples) - 1)
    return sorted_samples[lo] + (sorted_samples[hi] - sorted_samples[lo]) * (pos - lo)


def _thread_schedstats(leave_out=()) -> dict | None:
    """{native id: (ran, waited)} of this process's threads but those in ``leave_out``:
    how long each has run on a CPU and waited, ready to run, for one (ns,
    /proc/self/task/*/schedstat's first two fields), or None where the kernel does not
    say."""
    stats = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for task in tasks:
        if not task.isdigit() or int(task) in leave_out:
            continue
        try:
            with open(f"/proc/self/task/{task}/schedstat", encoding="ascii") as f:
                fields = f.read().split()
            stats[int(task)] = (int(fields[0]), int(fields[1]))
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
        except (OSError, ValueError, IndexError):
            return None
    return stats


def threads_cpu_ns() -> tuple[int, int] | None:
    """(ran, waited): how long this process's threads have run on a CPU and waited, ready
    to run, for one (ns, summed over its threads), or None where the kernel does not say."""
    stats = _thread_schedstats()
    if stats is None:
        return None
    return sum(r for r, _ in stats.values()), sum(w for _, w in stats.values())


def threads_waits(leave_out=()) -> dict | None:
    """How long each of this process's threads, less those whose native ids are in
    ``leave_out``, has waited, ready to run, for a CPU: {native id: ns}, or None where the
    kernel does not say."""
    stats = _thread_schedstats(leave_out)
    return None if stats is None else {tid: w for tid, (_, w) in stats.items()}


def waited_since(before: dict, after: dict) -> int:
    """What the threads of ``after`` waited since ``before`` (a thread started meanwhile
    from 0; one that ended meanwhile is not counted: its total is gone)."""
    return sum(max(0, ns - before.get(tid, 0)) for tid, ns in after.items())


def threads_waiting_ns() -> int | None:
    """How long this process's threads have waited for a CPU (ns; threads_cpu_ns)."""
    both = threads_cpu_ns()
    return None if both is None else both[1]


def others_share(before: tuple, after: tuple, elapsed_ns: int) -> float:
    """The share of ``elapsed_ns`` that other processes took from this one, as far as
    the scheduler says (``threads_cpu_ns`` before and after): its threads' wait for a
    CPU, but at most the part of the CPUs it may use that its own threads left unused.
    A framework's threads queueing for the one CPU a benchmark pinned wait behind each
    other (that is their cost), not behind another process."""
    ran, waited = after[0] - before[0], after[1] - before[1]
    unused = max(0.0, 1.0 - ran / (elapsed_ns * usable_cpus()))
    return min(max(0, waited) / elapsed_ns, unused)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity), else the machine's."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return machine_cpus()


def runnable_tasks() -> int | None:
    """Tasks ready to run right now, this one included (/proc/loadavg's fourth field), or
    None where the system does not say."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


@functools.cache
def machine_cpus() -> int:
    """The machine's CPUs: /proc/loadavg counts tasks on all of them, whatever this
    process's affinity or container allows it."""
    return os.cpu_count() or 1


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
