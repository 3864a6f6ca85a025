"""d2l's MLP (512-256-128-2, batch 1) under em.jit, timing its own calls: what
bench_profiler_cost.py runs plainly and under ``execmode profile``.

Writes {"per_call_ns": median of 7 chunks of calls} to the file named by
EXECMODE_BENCH_RESULT. Under ``execmode profile`` it then also times pairs of short
chunks, each pair once with the recorder detached and once attached, which goes first
alternating ({"inside_ns": the median of the pairs' differences, "pairs"}): the recorder's
cost per call measured in one process, where two processes' layouts differ by more than
the ~100 ns it is. Short chunks side by side cancel the process's drift, and many of them
resolve a cost under 1% of a call (a pair's difference spreads +-200 ns here).
"""

import json
import os
import statistics
import time

from execmode.profilers import recorder as recording

import execmode as em
from execmode import instrument

em.random.seed(0)
net = em.nn.MLP([512, 256, 128, 2])
x = em.randn(1, 512)
step = em.jit(net)
for _ in range(500):  # trace, compile, warm the fast entry and the caches
    step(x)
calls = int(os.environ.get("EXECMODE_BENCH_CALLS", "3000"))


def chunk() -> float:
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        step(x)
    return (time.perf_counter_ns() - t0) / calls


result = {"per_call_ns": statistics.median(chunk() for _ in range(7)), "calls": calls * 7 + 500}
recorders = list(recording._active)
if recorders:
    rec, differences = recorders[0], []
    pair_calls = max(1, calls // 10)
    pairs = int(os.environ.get("EXECMODE_BENCH_PAIRS", "400"))
    for i in range(pairs):
        took = {}
        for attached in ((True, False) if i % 2 else (False, True)):
            if not attached:
                instrument.remove_listener(rec)
            t0 = time.perf_counter_ns()
            for _ in range(pair_calls):
                step(x)
            took[attached] = (time.perf_counter_ns() - t0) / pair_calls
            if not attached:
                instrument.add_listener(rec)
        differences.append(took[True] - took[False])
    result.update(inside_ns=statistics.median(differences), pairs=pairs)
with open(os.environ["EXECMODE_BENCH_RESULT"], "w", encoding="utf-8") as f:
    json.dump(result, f)
