"""For a single execution eager can be faster: graph mode pays tracing and compiling once.

    python examples/single_call.py
"""

import time

from _common import timeit

import execmode as em

em.random.seed(0)
net = em.nn.MLP([256, 256, 10])
x = em.randn(32, 256)

eager_once = timeit(lambda: net(x), 1)          # one execution (best of a few tries)
fast = em.jit(net)
t0 = time.perf_counter()
fast(x)                                          # trace + passes + compile + run
jit_first = time.perf_counter() - t0
jit_replay = timeit(lambda: fast(x), 1)
compiled = fast.concrete_functions[0].segments[0].compiled
print(f"eager, one call:            {eager_once * 1e3:8.3f} ms")
print(f"jit, first call:            {jit_first * 1e3:8.3f} ms  (of which passes + kernel "
      f"compile {compiled.compile_ns / 1e6:.1f} ms; the disk cache makes the next process "
      "cheaper)")
print(f"jit, a later call (replay): {jit_replay * 1e3:8.3f} ms")
saved = eager_once - jit_replay
if saved > 0:
    print(f"jit pays off after about {(jit_first - jit_replay) / saved:.0f} calls")
verdict = "confirmed" if jit_first > eager_once else "refuted"
print(f"VERDICT: {verdict} - one eager call takes {eager_once * 1e3:.3f} ms, the first jitted "
      f"call {jit_first * 1e3:.1f} ms: for a single execution, tracing and compiling cost "
      "more than graph mode saves.")
