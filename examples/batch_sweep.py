"""Larger batches amortise the dispatch overhead per item: a batch sweep.

The same MLP forward pass at growing batch sizes: time per item, eager and jit.

    python examples/batch_sweep.py
"""

from _common import QUICK, size, timeit

import execmode as em

em.random.seed(0)
net = em.nn.MLP([128, 128, 10])
fast = em.jit(net)
batches = [1, 8, 64] if QUICK else [1, 4, 16, 64, 256, 1024]
print(f"{'batch':>6} {'eager us/item':>14} {'jit us/item':>12}  per-item eager")
per_item = []
for batch in batches:
    x = em.randn(batch, 128)
    fast(x)
    calls = size(max(20, 2000 // batch), 5)
    e = timeit(lambda x=x: net(x), calls) / batch
    j = timeit(lambda x=x: fast(x), calls) / batch
    per_item.append(e)
    print(f"{batch:>6} {e * 1e6:14.2f} {j * 1e6:12.2f}  " + "#" * min(int(e * 1e6), 60))
drop = per_item[0] / per_item[-1]
verdict = "confirmed" if drop > 5 else "depends"
print(f"VERDICT: {verdict} - eager time per item falls {drop:.0f}x from batch {batches[0]} "
      f"to {batches[-1]}: the per-op dispatch is paid once per batch, not per item.")
