"""Every benchmark, and the tables of docs/performance.md, from one command.

    python benchmarks/run_all.py --list                # what runs, and roughly how long
    python benchmarks/run_all.py --quick               # every benchmark as a smoke test
    python benchmarks/run_all.py --write-docs          # the full run: rewrites the tables
    python benchmarks/run_all.py --write-docs --only peers seeds

Each table of docs/performance.md sits between ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->``. Every benchmark below runs in its own process with ``--markdown``
(benchmarks/timing.py): its tables, stamped with the date, the command, the machine, its
load at the start and the end, the thread settings and the commit. With ``--write-docs``
each block is replaced by what its benchmark wrote; a benchmark that failed, or cannot
run here (no tmux, no GPU), leaves its block as it was, and the summary says so.

The GPU table is measured on a lent GPU machine: ``benchmarks/gpu_check.sh`` writes
``$OUT/bench_gpu.md`` there, and ``--table gpu=PATH`` puts that file into the page here
without running anything for it.

Run it on the final tree (the stamp says ``+dirty`` otherwise) and on a quiet machine:
rounds that disagree make verdicts undecided, and a loaded machine makes them disagree.
``--quick`` numbers never go into docs/performance.md (use ``--docs`` to try the splice on
a copy).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOCS = ROOT / "docs" / "performance.md"


@dataclass(frozen=True)
class Bench:
    name: str          # the marker: <!-- bench:NAME -->
    script: str
    args: tuple = ()
    minutes: float = 1.0  # the full run's rough length on the 2-vCPU dev VM
    needs: str = ""    # "tmux" or "gpu": skipped, with the reason, where missing


BENCHES = [
    Bench("peers", "bench_peers.py", minutes=9),
    Bench("seeds", "bench_seeds.py", minutes=4),
    Bench("seeds-steps", "bench_seeds.py", ("--steps",), minutes=1.5),
    Bench("compile-scaling", "bench_compile_scaling.py", minutes=4),
    Bench("first-call", "bench_first_call.py", minutes=3),
    Bench("graph-breaks", "bench_graph_breaks.py", minutes=0.3),
    Bench("example-first-calls", "bench_example_first_calls.py", minutes=6),
    Bench("single-op", "bench_single_op.py", minutes=0.2),
    Bench("torch-programs", "bench_torch_programs.py", minutes=12),
    Bench("dispatch", "bench_dispatch.py", minutes=0.3),
    Bench("recording", "bench_recording.py", minutes=3),
    Bench("profiler-cost", "bench_profiler_cost.py", minutes=12),
    Bench("distributed", "bench_distributed.py", minutes=1),
    Bench("threads", "bench_threads.py", minutes=1),
    Bench("threads-sweep", "bench_threads.py", ("--sweep",), minutes=3),
    Bench("fp-contract", "bench_fp_contract.py", minutes=1),
    Bench("gemm", "bench_gemm.py", minutes=0.5),
    Bench("small-matmul", "bench_small_matmul.py", minutes=0.5),
    Bench("output", "bench_output.py", minutes=2),
    Bench("tui-latency", "bench_tui_latency.py", minutes=4, needs="tmux"),
    Bench("gpu", "bench_gpu.py", minutes=2, needs="gpu"),
    Bench("torch-programs-gpu", "bench_torch_programs.py", ("--device", "cuda"), minutes=6,
          needs="gpu"),
]


def missing(need: str) -> str:
    """Why a benchmark cannot run here, or ""."""
    if need == "tmux" and shutil.which("tmux") is None:
        return "tmux is not installed"
    if need == "gpu":
        probe = subprocess.run([sys.executable, "-c", "import execmode as em; "
                                "print(em.cuda_is_available())"], capture_output=True,
                               text=True, cwd=ROOT)
        if probe.stdout.strip() != "True":
            return "no CUDA GPU here (benchmarks/gpu_check.sh runs it on a GPU machine)"
    return ""


def run(bench: Bench, quick: bool, folder: Path) -> tuple[str, str]:
    """(outcome, markdown or ""): runs one benchmark, its output going to the console."""
    why = missing(bench.needs)
    if why:
        return f"skipped: {why}", ""
    markdown = folder / f"{bench.name}.md"
    argv = [sys.executable, str(HERE / bench.script), *bench.args,
            *(["--quick"] if quick else []), "--markdown", str(markdown)]
    print(f"\n=== {bench.name}: {' '.join(argv[1:])}", flush=True)
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT)
    minutes = (time.perf_counter() - t0) / 60
    if done.returncode != 0 or not markdown.exists():
        return f"FAILED (exit {done.returncode}, {minutes:.1f} min)", ""
    return f"ok ({minutes:.1f} min)", markdown.read_text(encoding="utf-8")


def splice(text: str, name: str, block: str) -> str:
    """``text`` with the part between bench:NAME's markers replaced by ``block``."""
    pattern = re.compile(rf"(<!-- bench:{re.escape(name)} -->\n).*?(<!-- /bench:"
                         rf"{re.escape(name)} -->)", re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{DOCS.name} has no <!-- bench:{name} --> ... <!-- /bench:{name} "
                         "--> markers")
    return pattern.sub(lambda m: m.group(1) + block.rstrip("\n") + "\n" + m.group(2), text,
                       count=1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="benchmarks by marker name")
    parser.add_argument("--quick", action="store_true", help="every benchmark's --quick")
    parser.add_argument("--write-docs", action="store_true",
                        help="replace the tables between the markers in --docs")
    parser.add_argument("--docs", type=Path, default=None,
                        help=f"the page to rewrite (default {DOCS.relative_to(ROOT)})")
    parser.add_argument("--table", action="append", default=[], metavar="NAME=FILE",
                        help="a table measured elsewhere (gpu_check.sh's bench_gpu.md): "
                             "put FILE between NAME's markers instead of running NAME")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and stop")
    args = parser.parse_args(argv)
    given = dict(item.split("=", 1) for item in args.table)
    if args.table and not args.only:
        args.only = list(given)
    chosen = [b for b in BENCHES if not args.only or b.name in args.only]
    unknown = (set(args.only or ()) | set(given)) - {b.name for b in BENCHES}
    if unknown:
        parser.error(f"unknown benchmark(s) {sorted(unknown)}; --list shows them")
    if args.list:
        for b in chosen:
            print(f"{b.name:16s} ~{b.minutes:g} min  python benchmarks/{b.script} "
                  f"{' '.join(b.args)}{'  (needs ' + b.needs + ')' if b.needs else ''}")
        print(f"total ~{sum(b.minutes for b in chosen):g} min (full run, 2-vCPU dev VM)")
        return 0
    docs = args.docs or DOCS
    if args.write_docs and args.quick and args.docs is None:
        parser.error("--quick numbers do not go into docs/performance.md: give --docs PATH "
                     "to try the splice on a copy")
    if args.write_docs:
        text = docs.read_text(encoding="utf-8")
        for b in chosen:
            splice(text, b.name, "")  # every marker present, before an hour of running
    outcomes = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="execmode-bench-md-") as folder:
        for bench in chosen:
            if bench.name in given:
                block = Path(given[bench.name]).read_text(encoding="utf-8")
                outcomes[bench.name] = (f"from {given[bench.name]}", block)
            else:
                outcomes[bench.name] = run(bench, args.quick, Path(folder))
    print(f"\n=== {len(chosen)} benchmarks in {(time.perf_counter() - t0) / 60:.1f} min")
    if args.write_docs:
        text = docs.read_text(encoding="utf-8")
        for name, (_, block) in outcomes.items():
            if block:
                text = splice(text, name, block)
        docs.write_text(text, encoding="utf-8")
    for name, (outcome, block) in outcomes.items():
        where = "" if not args.write_docs else (
            f"; table written to {os.path.relpath(docs)}" if block else "; its table left as it was")
        print(f"  {name:16s} {outcome}{where}")
    return 1 if any(o.startswith("FAILED") for o, _ in outcomes.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
