"""Per-op overhead dominates small ops and vanishes for large ones: a size sweep.

For each size, one elementwise add: NumPy vs execmode eager; the ratio falls toward 1 as
the arithmetic outgrows the fixed dispatch cost.

    python examples/size_sweep.py
"""

import numpy as np
from _common import QUICK, timeit

import execmode as em

sizes = [1, 100, 10_000, 1_000_000] if QUICK else [1, 10, 100, 1_000, 10_000, 100_000,
                                                    1_000_000, 10_000_000]
print(f"{'elements':>10} {'NumPy us':>10} {'eager us':>10} {'overhead':>10}  ratio")
ratios = []
for n in sizes:
    a, b = np.ones(n, np.float32), np.ones(n, np.float32)
    ta, tb = em.tensor(a), em.tensor(b)
    calls = max(3, min(20000, 2_000_000 // n)) if not QUICK else max(2, min(2000,
                                                                              200_000 // n))
    t_np = timeit(lambda a=a, b=b: np.add(a, b), calls)
    t_em = timeit(lambda ta=ta, tb=tb: ta + tb, calls)
    ratios.append(t_em / t_np)
    bar = "#" * min(int(t_em / t_np * 10), 60)
    print(f"{n:>10} {t_np * 1e6:10.2f} {t_em * 1e6:10.2f} {(t_em - t_np) * 1e6:10.2f}  "
          f"{t_em / t_np:4.2f}x {bar}")
verdict = "confirmed" if ratios[0] > 1.5 and ratios[-1] < 1.2 else "depends"
print(f"VERDICT: {verdict} - eager costs {ratios[0]:.1f}x NumPy on 1 element but "
      f"{ratios[-1]:.2f}x on {sizes[-1]:,}: the fixed per-op cost is amortised by big ops.")
