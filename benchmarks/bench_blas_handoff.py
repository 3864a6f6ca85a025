"""Who should run OpenBLAS's parallel jobs: OpenBLAS's own threads or execmode's OpenMP
team (blas_workers.py)? The same work each way, side by side in one run.

    python benchmarks/bench_blas_handoff.py              # as the machine is
    python benchmarks/bench_blas_handoff.py --busy 1     # one busy process of ours beside
    python benchmarks/bench_blas_handoff.py --busy 2     # two

Each way is a process of its own, as a user's script would be (OpenMP's wait policy is
read once, when its runtime loads):

* ``own``: OpenBLAS's own threads (the default), execmode's OpenMP workers sleeping
  between regions (``OMP_WAIT_POLICY=PASSIVE``, threads.py);
* ``team``: ``EXECMODE_BLAS_CALLBACK=1``, OpenBLAS's jobs on execmode's sleeping team;
* ``team+spin``: the same, the team's workers spinning ``--spin`` times (``GOMP_SPINCOUNT``,
  ~23 ns a spin on the 2-vCPU VM) before they sleep.

Rows, at the default thread count: eager matmuls back to back (``np.matmul(a, b,
out=c)`` in a loop, as a NumPy script does; float32) of several sizes; a jitted
``tanh(x*2+1)*0.5 + relu(x)`` over 512K float32 (threaded from 2 threads) alone and right
after a 64x512 @ 512x256 matmul ("pair"); an MLP training step (512-256-128-10, ReLU,
MSE, SGD) jitted at batch 64 and 1024, eager at batch 64; and a control, the pair at one
thread (no jobs: the same code every way).

The parent runs the rounds (profilers/measure.py's ``run_interleaved``: every candidate
once a round, the order rotated by the round): it asks a process for one round of a row
(``calls`` back-to-back calls, sized from the warm-up so a round lasts ``--round-s``) and
gets its time back. Before it turns to another process it waits ``SETTLE_S``: OpenBLAS's
idle workers spin for ~2^28 cycles (~0.1 s) after their last job, and a process's spinning
workers must not slow another's round. Medians and quartiles of the rounds' per-call
times: the third quartile is the column to read for stalls (a sleeping worker must be
woken, and on a busy machine a woken thread may wait a scheduler slice for a core).
``--busy N`` starts N busy-loop processes of ours for the run and stops them after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from execmode.profilers.measure import Spread, context_line, run_interleaved, threads_waiting_ns

SETTLE_S = 0.3
WARMUP_S = 0.2
MATMULS = ((64, 512, 256), (1, 512, 256), (16, 256, 256), (256, 512, 512),
           (256, 1024, 1024))
SPIN = 10000
# The processes (+spin: GOMP_SPINCOUNT=--spin, set in main()).
WAYS = {
    "own": {"EXECMODE_BLAS_CALLBACK": "0"},
    "team": {"EXECMODE_BLAS_CALLBACK": "1"},
    "team+spin": {"EXECMODE_BLAS_CALLBACK": "1"},
    "own+spin": {"EXECMODE_BLAS_CALLBACK": "0"},
}
DEFAULT_WAYS = "own,team,team+spin"
WAY_VARIABLES = ("EXECMODE_BLAS_CALLBACK", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


# --- a process that runs rounds when asked ---------------------------------------------

def _mlp_step(em, batch: int, jit: bool, seed: int):
    rng = np.random.default_rng(seed)
    x = em.tensor(rng.standard_normal((batch, 512), dtype=np.float32))
    y = em.tensor(rng.standard_normal((batch, 10), dtype=np.float32))
    em.random.seed(seed)
    model = em.nn.Sequential(em.nn.Linear(512, 256), em.nn.ReLU(), em.nn.Linear(256, 128),
                             em.nn.ReLU(), em.nn.Linear(128, 10))
    opt = em.optim.SGD(model.parameters(), lr=1e-4)

    def step(x, y):
        loss = em.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    fn = em.jit(step) if jit else step
    return lambda: fn(x, y)


def _rows(em) -> dict:
    """row name -> (function, thread count: None for the default)."""
    rng = np.random.default_rng(0)
    rows = {}
    for m, k, n in MATMULS:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        out = np.empty((m, n), np.float32)
        rows[f"matmul {m}x{k} @ {k}x{n}"] = (
            lambda a=a, b=b, out=out: np.matmul(a, b, out=out), None)
    x = em.tensor(rng.standard_normal(1 << 19, dtype=np.float32))
    kernel = em.jit(lambda x: em.tanh(x * 2.0 + 1.0) * 0.5 + em.relu(x))
    a = rng.standard_normal((64, 512), dtype=np.float32)
    b = rng.standard_normal((512, 256), dtype=np.float32)
    out = np.empty((64, 256), np.float32)

    def pair():
        np.matmul(a, b, out=out)
        kernel(x)

    rows["kernel alone (512K, threaded)"] = (lambda: kernel(x), None)
    rows["pair: 64x512 matmul, then kernel"] = (pair, None)
    rows["MLP step, jitted, batch 64"] = (_mlp_step(em, 64, True, 1), None)
    rows["MLP step, jitted, batch 1024"] = (_mlp_step(em, 1024, True, 2), None)
    rows["MLP step, eager, batch 64"] = (_mlp_step(em, 64, False, 3), None)
    rows["control: the pair at 1 thread"] = (pair, 1)
    return rows


def serve() -> None:
    """Answer the parent's requests, one JSON line each: ``rows``, ``warm NAME`` (ns of
    the median call after the first), ``run NAME CALLS`` (ns in all, and how long this
    process's threads waited for a CPU meanwhile), ``settings``."""
    import execmode as em
    from execmode.codegen import blas_workers, threads

    threads.set_num_threads(None)  # as a kernel library's load does: the BLAS's count
    rows = _rows(em)

    def use(name):
        fn, count = rows[name]
        threads.set_num_threads(count)
        return fn

    for line in sys.stdin:
        words = line.rstrip("\n").split("\t")
        if words[0] == "rows":
            answer = list(rows)
        elif words[0] == "warm":
            fn, times, spent = use(words[1]), [], 0
            while len(times) < 3 or (spent < WARMUP_S * 1e9 and len(times) < 1000):
                t0 = time.perf_counter_ns()
                fn()
                times.append(time.perf_counter_ns() - t0)
                spent += times[-1]
            answer = sorted(times[1:])[len(times[1:]) // 2]
        elif words[0] == "run":
            fn, calls = use(words[1]), int(words[2])
            wait0 = threads_waiting_ns()
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            elapsed = time.perf_counter_ns() - t0
            wait1 = threads_waiting_ns()
            waited = None if wait0 is None or wait1 is None else (wait1 - wait0) / elapsed
            answer = [elapsed, waited]
        elif words[0] == "settings":
            threads.set_num_threads(None)
            answer = [threads.thread_settings_text(), blas_workers.status(),
                      list(blas_workers.calls())]
        else:
            break
        print(json.dumps(answer), flush=True)


# --- the parent ----------------------------------------------------------------------------

class Way:
    def __init__(self, name: str, variables: dict):
        env = {k: v for k, v in os.environ.items() if k not in WAY_VARIABLES}
        env.update(variables)
        self.name, self.variables = name, variables
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"],
                                     env=env, text=True, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)

    def ask(self, *words):
        self.proc.stdin.write("\t".join(map(str, words)) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.name} process stopped (its stderr above)")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--round-s", type=float, default=0.05)
    parser.add_argument("--busy", type=int, default=0,
                        help="busy-loop processes of ours beside the run")
    parser.add_argument("--spin", type=int, default=SPIN,
                        help="GOMP_SPINCOUNT of the team+spin process")
    parser.add_argument("--ways", default=DEFAULT_WAYS,
                        help=f"which processes, of {', '.join(WAYS)}")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve()
    for name in WAYS:
        if name.endswith("+spin"):
            WAYS[name] = dict(WAYS[name], GOMP_SPINCOUNT=str(args.spin))
    ways = [Way(name, WAYS[name]) for name in args.ways.split(",")]
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.busy)]
    try:
        rows = ways[0].ask("rows")
        calls = {}
        for way in ways:
            for row in rows:
                one = way.ask("warm", row)
                calls[(way.name, row)] = max(1, min(100_000, int(args.round_s * 1e9 / one)))
            time.sleep(SETTLE_S)
        last, waited = {"way": None}, {}

        def candidate(way, row):
            def one_round():
                if last["way"] is not way:
                    time.sleep(SETTLE_S)
                    last["way"] = way
                n = calls[(way.name, row)]
                elapsed, share = way.ask("run", row, n)
                if share is not None:
                    waited.setdefault((way.name, row), []).append(share)
                return elapsed / n
            return one_round

        candidates = {(way.name, row): candidate(way, row) for way in ways for row in rows}
        start = context_line()
        runnable = {}
        results = run_interleaved(candidates, rounds=args.rounds, runnable=runnable)
        end = context_line()
        settings = {way.name: way.ask("settings") for way in ways}
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
        for way in ways:
            way.close()
    spreads = {key: Spread.of(samples, calls[key], runnable.get(key, ()),
                              waited.get(key, ()))
               for key, samples in results.items()}
    _print(args, ways, rows, spreads, settings, start, end)


def _print(args, ways, rows, spreads, settings, start, end) -> None:
    print(f"busy-loop processes of ours beside: {args.busy}; {args.rounds} interleaved "
          f"rounds of ~{args.round_s * 1e3:.0f} ms; OPENBLAS_THREAD_TIMEOUT="
          f"{os.environ.get('OPENBLAS_THREAD_TIMEOUT', 'unset')}")
    print(f"start: {start}")
    print(f"end:   {end}")
    for way in ways:
        text, status, (team_sets, fresh) = settings[way.name]
        extra = ", ".join(f"{k}={v}" for k, v in way.variables.items())
        print(f"{way.name}: {extra}; {text}; jobs: {status}, {team_sets} job sets on the "
              f"team, {fresh} on threads started for them")
    print("per call in us: median (q1-q3) max over the rounds; waited: the median round's "
          "share of time the process's threads waited for a CPU")
    header = "".join(f" {w.name:>28} |" for w in ways)
    print(f"| {'row':<34} |{header}")
    print(f"|{'-' * 36}|" + "".join(f"{'-' * 30}|" for _ in ways))
    for row in rows:
        cells = "".join(f" {_cell(spreads[(w.name, row)]):>28} |" for w in ways)
        print(f"| {row:<34} |{cells}")


def _cell(spread) -> str:
    waited = sorted(spread.waited)
    share = f" w{waited[len(waited) // 2]:.0%}" if waited else ""
    return (f"{spread.median / 1e3:,.0f} ({spread.q1 / 1e3:,.0f}-{spread.q3 / 1e3:,.0f}) "
            f"{spread.high / 1e3:,.0f}{share}")


if __name__ == "__main__":
    main()
