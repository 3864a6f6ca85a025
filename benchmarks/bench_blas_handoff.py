"""A BLAS call followed by a threaded kernel, at each split of threads between them, with
OpenBLAS's jobs on execmode's OpenMP team (blas_workers.py) and on OpenBLAS's own threads.

    python benchmarks/bench_blas_handoff.py
    OPENBLAS_THREAD_TIMEOUT=4 python benchmarks/bench_blas_handoff.py

After a call, OpenBLAS's idle workers keep spinning (about 2^28 cycles by default,
``OPENBLAS_THREAD_TIMEOUT`` read when NumPy loads it) while execmode's OpenMP workers sleep
at once (``OMP_WAIT_POLICY=PASSIVE``, threads.py). On the team, OpenBLAS's jobs run on
those sleeping workers instead. This times ``x @ w`` (64x512 @ 512x256, NumPy's BLAS) then
a jitted ``tanh(x*2+1)*0.5 + relu(x)`` over 512K float32 (threaded from 2 threads), each
alone and one after the other, for BLAS/kernel thread counts 2/2 (the default on 2
cores), 1/2, 2/1 and 1/1, each with the jobs on the team ("team") and on OpenBLAS's own
threads ("own"), in interleaved rounds (profilers/measure.py). At one BLAS thread OpenBLAS
starts no jobs, so "team" and "own" run the same code there: a control.
"pair - parts" is what running them back to back adds over their separate times.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from execmode.profilers.measure import context_line, measure

import execmode as em
from execmode.codegen import blas, blas_workers, threads

SPLITS = ((2, 2), (1, 2), (2, 1), (1, 1))
WORKERS = ("team", "own")
# OpenBLAS's idle workers spin for 2^28 cycles after their last job before they sleep
# (~0.1 s at 2.5 GHz): a round on the team waits that long after a round on them, as a
# process that always uses the team never has them spinning.
SETTLE_S = 0.3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    control = blas.thread_control()
    if control is None:
        raise SystemExit(f"no BLAS thread control: {blas.thread_control_reason()}")
    if threads.thread_settings()["blas_workers"] != blas_workers.TEAM:
        print(f"the team is not available, every row runs on OpenBLAS's own threads: "
              f"{blas_workers.status()}")
    rng = np.random.default_rng(0)
    x = em.tensor(rng.standard_normal(1 << 19, dtype=np.float32))
    kernel = em.jit(lambda x: em.tanh(x * 2.0 + 1.0) * 0.5 + em.relu(x))
    a = rng.standard_normal((64, 512), dtype=np.float32)
    b = rng.standard_normal((512, 256), dtype=np.float32)
    out = np.empty((64, 256), np.float32)

    def matmul():
        np.matmul(a, b, out=out)

    def pair():
        np.matmul(a, b, out=out)
        kernel(x)

    candidates, setting_of = {}, {}
    for blas_n, kernel_n in SPLITS:
        for workers in WORKERS:
            for part, fn in (("matmul", matmul), ("kernel", lambda: kernel(x)),
                             ("pair", pair)):
                name = f"{part} {blas_n}/{kernel_n} {workers}"
                candidates[name], setting_of[name] = fn, (blas_n, kernel_n, workers)

    current = {"workers": None}

    def set_split(name):
        blas_n, kernel_n, workers = setting_of[name]
        threads.set_num_threads(kernel_n)
        control.set(blas_n)
        if workers != current["workers"]:
            blas_workers.use_team(workers == "team")
            current["workers"] = workers
            time.sleep(SETTLE_S)

    print(context_line())
    print(f"OPENBLAS_THREAD_TIMEOUT={os.environ.get('OPENBLAS_THREAD_TIMEOUT', 'unset')}, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}")
    spreads = measure(candidates, rounds=args.rounds, round_s=0.05, before_round=set_split)
    threads.set_num_threads(None)
    blas_workers.use_team(True)
    print("per call in us, median (interquartile range) over interleaved rounds; "
          "BLAS jobs on execmode's team or on OpenBLAS's own threads")
    print(f"{'BLAS/kernel threads':<25} {'matmul':>20} {'kernel':>20} {'pair':>20} "
          f"{'pair - parts':>13}")
    for blas_n, kernel_n in SPLITS:
        for workers in WORKERS:
            s = {part: spreads[f"{part} {blas_n}/{kernel_n} {workers}"]
                 for part in ("matmul", "kernel", "pair")}
            extra = (s["pair"].median - s["matmul"].median - s["kernel"].median) / 1e3
            cells = " ".join(f"{_cell(s[p]):>20}" for p in ("matmul", "kernel", "pair"))
            print(f"{f'{blas_n}/{kernel_n} {workers}':<25} {cells} {extra:>13,.0f}")
    team, fresh = blas_workers.calls()
    print(f"job sets run on the team: {team}, on threads started for them: {fresh}")
    print(context_line())


def _cell(spread) -> str:
    return f"{spread.median / 1e3:,.0f} ({spread.q1 / 1e3:,.0f}-{spread.q3 / 1e3:,.0f})"


if __name__ == "__main__":
    main()
