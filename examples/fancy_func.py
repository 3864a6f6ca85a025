"""The seeds' first example (d2l's "hybridize"): a fancy function of three adds.

Eagerly, every add runs on its own; under em.jit the three adds become one fused kernel.

    python examples/fancy_func.py
"""

from _common import compare_times
from execmode.profilers.measure import context_line, decide

import execmode as em

print(context_line())  # what the times below were measured on


def add(a, b):
    return a + b


def fancy_func(a, b, c, d):
    e = add(a, b)
    f = add(c, d)
    g = add(e, f)
    return g


a, b, c, d = (em.tensor([v]) for v in (1.0, 2.0, 3.0, 4.0))
print("eager:", fancy_func(a, b, c, d))

fast = em.jit(fancy_func)
print("jit:  ", fast(a, b, c, d))
print()
print(fast.trace(a, b, c, d).graph)
print()
print(fast.lower(a, b, c, d).graph)

print()
times = compare_times({"eager": lambda: fancy_func(a, b, c, d), "jit": lambda: fast(a, b, c, d)})
print(f"per call: eager {times['eager'].text()}, jit {times['jit'].text()}")
# A ratio only when the rounds carry one; otherwise the reason.
print("eager / jit:", decide(times["eager"], times["jit"], a_name="eager", b_name="jit"))
