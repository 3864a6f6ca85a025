"""Per-op overhead dominates small ops and vanishes for large ones: a size sweep.

For each size, one elementwise add: NumPy vs execmode eager. The ratio (eager / NumPy)
falls toward 1 as the arithmetic outgrows the fixed dispatch cost. Each ratio is measured
several times; the table shows its median, min and interquartile range, and the verdict is
called only when those ranges clear the thresholds (a shared machine's noise moves single
measurements across them, which made a one-shot verdict flip between runs).

    python examples/size_sweep.py
"""

import numpy as np
from _common import QUICK, above, ratios

import execmode as em

SMALL_OVER, LARGE_UNDER = 1.5, 1.2  # the claim: >1.5x NumPy on 1 element, <1.2x on the largest

sizes = [1, 100, 10_000, 1_000_000] if QUICK else [1, 10, 100, 1_000, 10_000, 100_000,
                                                    1_000_000, 10_000_000]
repeats = 5 if QUICK else 9
print(f"{'elements':>10}  eager / NumPy: median (min, IQR, repeats)")
spreads = []
for n in sizes:
    a, b = np.ones(n, np.float32), np.ones(n, np.float32)
    ta, tb = em.tensor(a), em.tensor(b)
    calls = max(3, min(20000, 2_000_000 // n)) if not QUICK else max(2, min(2000,
                                                                              200_000 // n))
    spread = ratios(lambda ta=ta, tb=tb: ta + tb, lambda a=a, b=b: np.add(a, b), calls,
                    repeats)
    spreads.append(spread)
    print(f"{n:>10}  {spread}  {'#' * min(int(spread.median * 10), 60)}")

small, large = above(spreads[0], SMALL_OVER), above(spreads[-1], LARGE_UNDER)
if small is True and large is False:
    verdict = "confirmed"
elif small is False or large is True:
    verdict = "refuted"
else:
    verdict = "undecided (the spread straddles a threshold: run again on a quieter machine)"
print(f"VERDICT: {verdict} - eager costs {spreads[0]} NumPy on 1 element and "
      f"{spreads[-1]} on {sizes[-1]:,} (thresholds: IQR above {SMALL_OVER}x, below "
      f"{LARGE_UNDER}x): the fixed per-op cost is amortised by big ops.")
