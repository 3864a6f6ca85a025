"""d2l's MLP (512-256-128-2, batch 1) under em.jit, timing its own calls: what
bench_profiler_cost.py runs plainly and under ``execmode profile``.

Writes {"per_call_ns": median of 7 chunks of calls} to the file named by
EXECMODE_BENCH_RESULT. Under ``execmode profile`` it then also times 7 more pairs of
chunks, each pair once with the recorder detached and once attached, in alternating
order ({"detached_ns", "attached_ns"}: medians): the recorder's cost per call measured in
one process, where two processes' layouts differ by more than the ~100 ns it is.
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
    rec, times = recorders[0], {True: [], False: []}
    for i in range(14):
        attached = (i % 4) in (0, 3)  # on off off on ...: each side first half the time
        if not attached:
            instrument.remove_listener(rec)
        times[attached].append(chunk())
        if not attached:
            instrument.add_listener(rec)
    result.update(attached_ns=statistics.median(times[True]),
                  detached_ns=statistics.median(times[False]))
with open(os.environ["EXECMODE_BENCH_RESULT"], "w", encoding="utf-8") as f:
    json.dump(result, f)
