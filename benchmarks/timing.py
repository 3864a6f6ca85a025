"""What the benchmark scripts share: the measurement protocol, the cells of their tables,
first calls in fresh processes, and the report each prints. Imported as ``timing`` (a
script run as ``python benchmarks/X.py`` has this folder first on ``sys.path``).

The protocol itself is ``execmode.profilers.measure`` (em.compare and the profiler use it
too): interleaved rounds, medians with their spread, a ratio only when the rounds allow
one, goals judged on the median. This module adds what only benchmarks need:

* **Cells.** A time is its median and interquartile range over the rounds,
  ``"2.36 ms (2.30-2.41)"``; a ratio is :func:`measure.decide`'s verdict (``"0.90x"`` or
  ``"undecided (overlap)"``); a goal is met, missed or undecided, on the median.
* **First calls** run in a fresh process with an empty kernel cache (``EXECMODE_CACHE_DIR``
  pointing at a new temporary folder: no kernel, no fast-entry or operator extension
  built before), so the C compiler's time is in them, as it is in the user's wait; one
  process per round, rounds interleaved (:func:`first_call_spreads`).
* **The report.** Every script prints :func:`measure.context_line` first (machine, load,
  threads, commit), then its tables; with ``--markdown FILE`` the same tables go to FILE,
  stamped with that context and the date, for ``run_all.py --write-docs`` to put into
  docs/performance.md.
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np
from execmode.profilers.measure import (  # noqa: F401 - re-exported for the scripts
    MIN_ROUNDS,
    Spread,
    context,
    context_line,
    decide,
    judge_ratio,
    judge_value,
    load_text,
    measure,
    run_interleaved,
)

N_LARGE = 16 * 1024 * 1024
ROUNDS = 7
# Quick mode (a smoke test of the script) keeps the protocol's minimum: fewer calls per
# round, never fewer rounds than a verdict needs.
QUICK_ROUNDS = MIN_ROUNDS
RESULT_TAG = "benchmark-child-result:"


def add_arguments(parser, *, rounds: int = ROUNDS) -> None:
    """The options every benchmark takes: --quick, --rounds, --markdown."""
    parser.add_argument("--quick", action="store_true",
                        help=f"fewer calls per round and {QUICK_ROUNDS} rounds (a smoke test)")
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"interleaved rounds (default {rounds}, quick {QUICK_ROUNDS}; "
                             f"at least {MIN_ROUNDS})")
    parser.add_argument("--markdown", metavar="FILE",
                        help="also write the tables, stamped with the machine, to FILE")


def rounds_of(args, default: int = ROUNDS) -> int:
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else default)
    if rounds < MIN_ROUNDS:
        raise SystemExit(f"--rounds {rounds}: a median and its spread need at least "
                         f"{MIN_ROUNDS} rounds")
    return rounds


# --- cells ------------------------------------------------------------------------------

def fmt_time(seconds: float) -> str:
    if seconds >= 1e-1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.1f} us"
    return f"{seconds * 1e9:.0f} ns"


def time_cell(spread: Spread | None) -> str:
    """A spread of ns: ``"2.36 ms (2.30-2.41)"``, the median and the interquartile range."""
    if spread is None:
        return "-"
    return (f"{fmt_time(spread.median / 1e9)} "
            f"({_bare(spread.q1 / 1e9, spread.median)}-{_bare(spread.q3 / 1e9, spread.median)})")


def _bare(seconds: float, median_ns: float) -> str:
    """``seconds`` in the unit :func:`fmt_time` gives the median, without the unit."""
    unit = fmt_time(median_ns / 1e9).split()[-1]
    scale = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}[unit]
    digits = 0 if unit == "ns" else (1 if unit == "us" else 2)
    return f"{seconds * scale:.{digits}f}"


def ratio_cell(a: Spread | None, b: Spread | None, a_name: str = "a", b_name: str = "b") -> str:
    """a over b as :func:`measure.decide` allows: a ratio, or undecided and why."""
    if a is None or b is None:
        return "-"
    return decide(a, b, a_name=a_name, b_name=b_name).cell()


def goal_cell(*verdicts) -> str:
    """Goal verdicts (:class:`measure.GoalVerdict`) in a cell: **missed** when any is
    missed, undecided (why) when any is undecided, met when all are met."""
    verdicts = [v for v in verdicts if v is not None]
    if not verdicts:
        return "-"
    if any(v.state == "missed" for v in verdicts):
        return "**missed**"
    undecided = [v for v in verdicts if v.state == "undecided"]
    if undecided:
        return f"undecided ({_short(undecided[0].reason)})"
    return "met"


def _short(reason: str) -> str:
    if "fewer than" in reason:
        return "few rounds"
    if "disagree" in reason:
        return "rounds disagree"
    return reason.split(" (")[0]


def paired_difference(a: Spread, b: Spread) -> Spread:
    """a - b round by round (rounds are interleaved, so round r of each shared the
    machine's state): what a listener, a recorder, a loop's own cost adds."""
    return Spread.of([x - y for x, y in zip(a.samples, b.samples)], a.calls)


def scaled(spread: Spread, factor: float) -> Spread:
    return Spread.of([s * factor for s in spread.samples], spread.calls)


def column(samples: list, key) -> Spread:
    """One column of self-timed results (tuples or dicts per round) as a Spread."""
    return Spread.of([sample[key] for sample in samples])


def steady_state_operators() -> None:
    """Tensor's C operators replace the Python ones after ``dispatch.HOT_CALLS`` calls, as
    in any loop a person times: install them before measuring eager code, whatever the
    call counts of a quick run."""
    import execmode as em
    from execmode import dispatch

    a = em.tensor(np.ones(1, np.float32))
    for _ in range(dispatch.HOT_CALLS + 1):
        a + a


# --- first calls in fresh processes -----------------------------------------------------

def report_child_result(value) -> None:
    """In a child process: hand ``value`` (JSON) to :func:`fresh_process_result`."""
    print(f"{RESULT_TAG} {json.dumps(value)}", flush=True)


def report_first_call(fn) -> None:
    """In a child process: time ``fn()`` once and hand the seconds to the parent."""
    t0 = time.perf_counter()
    fn()
    report_child_result(time.perf_counter() - t0)


def fresh_process_result(argv: list, env: dict | None = None):
    """Run ``argv`` (a script's child mode, which ends with :func:`report_child_result`) in
    a fresh process whose kernel cache is a new, empty folder; what it reported."""
    with tempfile.TemporaryDirectory(prefix="execmode-cold-cache-") as cache:
        run_env = dict(os.environ, **(env or {}), EXECMODE_CACHE_DIR=cache)
        done = subprocess.run(argv, env=run_env, capture_output=True, text=True)
    for line in reversed(done.stdout.splitlines()):
        if done.returncode == 0 and line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG):])
    raise RuntimeError(f"{shlex.join(argv)} exited {done.returncode} without a result:\n"
                       f"{done.stdout[-2000:]}{done.stderr[-4000:]}")


def fresh_process_seconds(argv: list, env: dict | None = None) -> float:
    return float(fresh_process_result(argv, env))


def first_call_spreads(commands: dict, rounds: int, env: dict | None = None) -> dict:
    """``{name: argv}`` -> ``{name: Spread}`` of ns: one fresh process per name and round,
    the names interleaved round by round."""
    found = run_interleaved({name: (lambda argv=argv: fresh_process_seconds(argv, env))
                             for name, argv in commands.items()}, rounds=rounds)
    return {name: Spread.of([s * 1e9 for s in seconds]) for name, seconds in found.items()}


def child_argv(script: str, *args: str) -> list:
    return [sys.executable, os.path.abspath(script), *args]


# --- bandwidth ----------------------------------------------------------------------------

def copy_candidate(n: int = N_LARGE):
    """A one-thread ``np.copyto`` of ``n`` float32 (one read, one write): time it among a
    benchmark's candidates, and the bandwidth floor shares their rounds."""
    src = np.random.default_rng(5).standard_normal(n, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    return lambda: np.copyto(dst, src)


def copy_bytes(n: int = N_LARGE) -> int:
    return 2 * n * 4


# --- the report ---------------------------------------------------------------------------

class Report:
    """What a benchmark prints: the context line first, then its tables and notes; with
    ``--markdown FILE`` the same, stamped with the date, the command and the context
    (load at the start and at the end), written to FILE when the script finishes."""

    def __init__(self, args=None):
        self.markdown = getattr(args, "markdown", None)
        self.context = context()
        self.items: list[str] = []
        print(f"# {context_line(self.context)}", flush=True)

    def table(self, headers: list, rows: list, title: str = "") -> None:
        lines = [f"**{title}**", ""] if title else []
        lines.append("| " + " | ".join(headers) + " |")
        lines.append("|---|" + "---:|" * (len(headers) - 1))
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        text = "\n".join(lines)
        self.items.append(text)
        print(f"\n{text}", flush=True)

    def note(self, text: str) -> None:
        """A sentence that belongs with the tables (a goal's verdict, what a column means)."""
        self.items.append(text)
        print(text, flush=True)

    def finish(self) -> None:
        end = load_text()
        print(f"\n# at the end: {end}", flush=True)
        if not self.markdown:
            return
        when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        stamp = (f"*{when}, `{_command()}`: {context_line(self.context)}; at the end "
                 f"{end}.*")
        with open(self.markdown, "w", encoding="utf-8") as f:
            f.write("\n\n".join([stamp, *self.items]) + "\n")


def _command() -> str:
    argv, shown, skip = sys.argv[1:], [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--markdown":
            skip = True
        elif not arg.startswith("--markdown="):
            shown.append(arg)
    script = os.path.relpath(os.path.abspath(sys.argv[0]),
                             os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return shlex.join(["python", script, *shown])
