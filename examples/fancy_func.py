"""The seeds' first example (d2l's "hybridize"): a fancy function of three adds.

Eagerly, every add runs on its own; under em.jit the three adds become one fused kernel.

    python examples/fancy_func.py
"""

from _common import size, timeit

import execmode as em


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

calls = size(10_000, 500)
eager_s = timeit(lambda: fancy_func(a, b, c, d), calls)
jit_s = timeit(lambda: fast(a, b, c, d), calls)
print(f"\nper call: eager {eager_s * 1e6:.2f} us, jit {jit_s * 1e6:.2f} us "
      f"({eager_s / jit_s:.2f}x)")
