"""d2l's MLP (512-256-128-2, batch 1) under em.jit, timing its own calls: what
bench_profiler_cost.py runs plainly and under ``execmode profile``.

Writes {"per_call_ns": median of 7 chunks of calls} to the file named by
EXECMODE_BENCH_RESULT.
"""

import json
import os
import statistics
import time

import execmode as em

em.random.seed(0)
net = em.nn.MLP([512, 256, 128, 2])
x = em.randn(1, 512)
step = em.jit(net)
for _ in range(500):  # trace, compile, warm the fast entry and the caches
    step(x)
chunks = []
calls = int(os.environ.get("EXECMODE_BENCH_CALLS", "3000"))
for _ in range(7):
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        step(x)
    chunks.append((time.perf_counter_ns() - t0) / calls)
with open(os.environ["EXECMODE_BENCH_RESULT"], "w", encoding="utf-8") as f:
    json.dump({"per_call_ns": statistics.median(chunks), "calls": calls * 7 + 500}, f)
