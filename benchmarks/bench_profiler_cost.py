"""What the profiler says it costs, against what it costs: every example, and a jitted MLP.

Each example runs in fresh processes, in interleaved rounds, plainly (its wall time taken
around ``runpy``, in a process that first recorded an empty script, so that both begin the
script with the same modules, libraries and probes loaded: WALL) and under ``execmode
profile`` (the session's recorded wall time, and the cost the report states for it:
profilers/profiler_cost.py).
The measured cost is the difference of the two medians; the stated one is the sessions'
median. "stated/measured" is printed, and judged against the goal (within 25%) only when
the two walls' spreads separate: a cost smaller than the rounds' own spread is undecided.
Kernel caches are warm (one untimed run of each first): compiling is not the profiler's.
Every run does the same work: the examples size their timing rounds by time, so the first,
untimed run's sizes are replayed by the others (EXECMODE_MEASURE_SIZES,
profilers/measure_sizes.py); a recorded run would otherwise make fewer, slower calls in
about the same wall time.

The jitted MLP (scripts/jitted_mlp.py) times its own calls in both processes: the goal is
a profiled call at most 1.3x a plain one, and the stated cost per call within 30% of the
measured difference.

    python benchmarks/bench_profiler_cost.py [--quick] [--only mlp_forward ...] [--full]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import timing
from execmode.profilers import measure
from execmode.profilers.measure import Spread

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
# The plain run's clock starts where a recording's does: in a process that has already
# recorded (an empty script, as execmode profile records one, into a scratch session:
# the runner's modules imported, the calibration read, the op ring's library loaded, the
# toolchain probed), after a full garbage collection as the recorder's start makes one
# (which generations are due decides whether a full collection, ~13 ms on the engine's
# heap, lands inside a short script's clock). Otherwise a plain script paid inside its
# clock for what the recorded one's start had done before its clock (importing the
# measurement modules, loading libraries, probing the compiler), and the recorded run
# looked cheaper than it is, python_overhead even cheaper than plain. The start's cost is
# stated apart, outside both clocks.
WALL = """
import gc, json, os, runpy, sys, tempfile, time
from execmode.profilers.runner import record_script
with tempfile.TemporaryDirectory() as scratch:
    empty = os.path.join(scratch, "empty.py")
    open(empty, "w").close()
    record_script(empty, session=os.path.join(scratch, "empty.emsession"))
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
gc.collect()
t0 = time.perf_counter_ns()
runpy.run_path(script, run_name="__main__")
wall = time.perf_counter_ns() - t0
with open(os.environ["EXECMODE_BENCH_WALL"], "w") as f:
    json.dump({"wall_ns": wall}, f)
"""


def _plain(script: Path, env: dict, folder: Path) -> dict:
    out = folder / "wall.json"
    _run([sys.executable, "-c", WALL, str(script)], env | {"EXECMODE_BENCH_WALL": str(out)})
    return json.loads(out.read_text())


def _profiled(script: Path, env: dict, folder: Path, index: list) -> dict:
    from execmode.profilers.session import open_session

    index[0] += 1
    session = folder / f"{script.stem}-{index[0]}.emsession"
    _run([sys.executable, "-m", "execmode", "profile", "--session", str(session),
          "--format", "md", "-o", str(folder / "report.md"), str(script)], env)
    with open_session(session) as s:
        summary = s.summary()
    cost = summary["profiler_cost"]
    return {"wall_ns": summary["wall_ns"], "stated_ns": cost.total_ns or 0,
            "graph_ns": cost.graph_ns or 0, "graph_runs": cost.counts.graph_runs,
            "fixed_ns": (cost.start_ns or 0) + (cost.stop_ns or 0)}


def _run(command: list, env: dict) -> None:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"{' '.join(command[:4])}... failed: {last}")


def compare_example(script: Path, rounds: int, env: dict, folder: Path) -> dict:
    index = [0]
    # Examples time themselves in rounds sized by time: a recorded run would make fewer
    # calls. Every run makes the calls of the first, untimed one (measure_sizes.py).
    sizes = folder / f"{script.stem}-sizes.jsonl"
    sizes.unlink(missing_ok=True)
    env = env | {"EXECMODE_MEASURE_SIZES": str(sizes)}
    _plain(script, env, folder)  # warm the kernel and calibration caches; sizes the rounds
    _profiled(script, env, folder, index)
    busy: dict = {}
    results = measure.run_interleaved(
        {"plain": lambda: _plain(script, env, folder),
         "profiled": lambda: _profiled(script, env, folder, index)}, rounds=rounds,
        runnable=busy)
    plain = Spread.of([r["wall_ns"] for r in results["plain"]], 1, busy.get("plain", ()))
    recorded = Spread.of([r["wall_ns"] for r in results["profiled"]], 1,
                         busy.get("profiled", ()))
    stated = Spread.of([r["stated_ns"] for r in results["profiled"]])
    return {"plain": plain, "recorded": recorded, "stated": stated,
            "verdict": measure.decide(recorded, plain, a_name="profiled", b_name="plain")}


def compare_jitted_mlp(rounds: int, env: dict, folder: Path) -> dict:
    script = HERE / "scripts" / "jitted_mlp.py"
    result = folder / "mlp.json"
    env = env | {"EXECMODE_BENCH_RESULT": str(result)}

    def plain():
        _run([sys.executable, str(script)], env)
        return json.loads(result.read_text())

    index = [0]

    def profiled():
        session = _profiled(script, env, folder, index)
        return json.loads(result.read_text()) | session

    plain()
    profiled()
    busy: dict = {}
    runs = measure.run_interleaved({"plain": plain, "profiled": profiled}, rounds=rounds,
                                   runnable=busy)
    plain_call = Spread.of([r["per_call_ns"] for r in runs["plain"]], 1, busy.get("plain", ()))
    profiled_call = Spread.of([r["per_call_ns"] for r in runs["profiled"]], 1,
                              busy.get("profiled", ()))
    stated_call = Spread.of([r["graph_ns"] / max(r["graph_runs"], 1) for r in runs["profiled"]])
    # The same cost measured inside each profiled process: short chunks with the recorder
    # detached and attached side by side (scripts/jitted_mlp.py), one median per process.
    inside = Spread.of([r["inside_ns"] for r in runs["profiled"]])
    return {"plain": plain_call, "profiled": profiled_call, "stated": stated_call,
            "inside": inside,
            "ratio": measure.judge_ratio(profiled_call, plain_call, 1.3, a_name="profiled",
                                         b_name="plain")}


def _inside_verdict(spread: Spread, profiled: Spread) -> SimpleNamespace:
    """The in-process differences carry a cost when their middle half is above 0, and
    only from processes that had their CPUs (a descheduled chunk decides nothing)."""
    if profiled.crowded:
        return SimpleNamespace(decided=False, kind="busy machine")
    return SimpleNamespace(decided=spread.q1 > 0, kind="overlap")


def _share(stated: float, measured: float, verdict, tolerance: float) -> str:
    if not verdict.decided:
        return f"undecided ({verdict.kind})"
    if measured <= 0:
        return "measured <= 0"
    share = stated / measured
    judged = "met" if abs(share - 1) <= tolerance else "**missed**"
    return f"{share:.2f} ({judged})"


QUICK_EXAMPLES = ("mlp_forward", "matpow", "fusion", "autograd")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="*", help="example names (without .py)")
    p.add_argument("--full", action="store_true", help="examples at full size (slow)")
    p.add_argument("--no-mlp", action="store_true")
    timing.add_arguments(p, rounds=measure.MIN_ROUNDS)
    args = p.parse_args(argv)
    rounds = timing.rounds_of(args, measure.MIN_ROUNDS)
    report = timing.Report(args)
    with tempfile.TemporaryDirectory(prefix="execmode-bench-cost-") as tmp:
        folder = Path(tmp)
        env = dict(os.environ, EXECMODE_CACHE_DIR=str(folder / "cache"),
                   EXECMODE_SESSION_DIR=str(folder))
        if not args.full:
            env["EXECMODE_QUICK"] = "1"
        if not args.no_mlp:
            if args.quick:
                env["EXECMODE_BENCH_CALLS"] = "500"
            mlp = compare_jitted_mlp(rounds, env, folder)
            measured = mlp["profiled"].median - mlp["plain"].median
            ratio = mlp["ratio"]
            inside = mlp["inside"]
            report.table(
                ["plain", "under execmode profile", "profiled/plain (goal <= 1.3x)",
                 "cost per call: between processes", "in one process", "stated",
                 "stated/measured in one process (goal within 30%)"],
                [[timing.time_cell(mlp["plain"]), timing.time_cell(mlp["profiled"]),
                  f"{ratio.value:.2f}x: {ratio}" if ratio.value is not None else str(ratio),
                  f"{measured:.0f} ns", f"{inside.median:.0f} ns ({inside.q1:.0f}-{inside.q3:.0f})",
                  f"{mlp['stated'].median:.0f} ns",
                  _share(mlp["stated"].median, inside.median,
                         _inside_verdict(inside, mlp["profiled"]), 0.30)]],
                title=f"A jitted MLP 512-256-128-2, batch 1, per call: medians (IQR) of "
                      f"{rounds} interleaved process pairs, timed by the script itself; "
                      "in one process: the recorder detached and attached in alternating "
                      "chunks of calls inside each profiled process (two processes' "
                      "layouts differ by more than the cost)")
        default = QUICK_EXAMPLES if args.quick else sorted(
            f.stem for f in EXAMPLES.glob("*.py") if not f.name.startswith("_"))
        rows = []
        for name in args.only or default:
            try:
                r = compare_example(EXAMPLES / f"{name}.py", rounds, env, folder)
            except RuntimeError as exc:
                rows.append([name, f"failed: {exc}", "", "", "", ""])
                continue
            measured = r["recorded"].median - r["plain"].median
            rows.append([name, timing.time_cell(r["plain"]), timing.time_cell(r["recorded"]),
                         f"{measured / 1e6:.1f} ms", f"{r['stated'].median / 1e6:.1f} ms",
                         _share(r["stated"].median, measured, r["verdict"], 0.25)])
        report.table(["example", "plain", "recorded", "measured cost", "stated cost",
                      "stated/measured (goal within 25%)"], rows,
                     title=f"Every example ({'full' if args.full else 'quick'} size): the "
                           f"script's wall time plainly and under execmode profile, medians "
                           f"(IQR) of {rounds} interleaved process pairs, warm caches")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
