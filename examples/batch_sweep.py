"""Larger batches amortise the dispatch overhead per item: a batch sweep.

The same MLP forward pass at growing batch sizes: time per item, eager and jit.

    python examples/batch_sweep.py
"""

from _common import QUICK, compare_times, per_item
from execmode.profilers.measure import context_line, decide

import execmode as em

print(context_line())  # what the times below were measured on
em.random.seed(0)
net = em.nn.MLP([128, 128, 10])
batches = [1, 8, 64] if QUICK else [1, 4, 16, 64, 256, 1024]
inputs = {batch: em.randn(batch, 128) for batch in batches}
# One jitted function per batch size, each compiled for its shape: a single jitted function
# called with a second batch size would make the batch dimension dynamic (one plan for
# every size), which is another measurement.
fast = {batch: em.jit(net) for batch in batches}
for batch, x in inputs.items():
    fast[batch](x)  # trace and compile now, outside the timing

# Every batch size and both modes in the same interleaved rounds: a slow spell of the
# machine lands on all of them alike, not on whichever batch happened to run then.
candidates = {}
for batch, x in inputs.items():
    candidates[("eager", batch)] = lambda x=x: net(x)
    candidates[("jit", batch)] = lambda x=x, f=fast[batch]: f(x)
times = {key: per_item(spread, key[1]) for key, spread in compare_times(candidates).items()}

print("per item (median and IQR of the rounds):")
print(f"{'batch':>6}  {'eager':<38}  {'jit':<38}")
for batch in batches:
    eager, jit = times[("eager", batch)], times[("jit", batch)]
    print(f"{batch:>6}  {eager.text():<38}  {jit.text():<38}  "
          + "#" * min(int(eager.median / 1e3), 60))

first, last = times[("eager", batches[0])], times[("eager", batches[-1])]
drop = decide(first, last, a_name=f"eager at batch {batches[0]}",
              b_name=f"eager at batch {batches[-1]}")
if not drop.decided:
    print(f"VERDICT: undecided - {drop.reason}")
else:
    verdict = "confirmed" if drop.ratio > 5 else "depends"
    print(f"VERDICT: {verdict} - eager time per item falls {drop.ratio:.0f}x by the medians "
          f"from batch {batches[0]} to {batches[-1]} (confirmed above 5x): the per-op "
          "dispatch is paid once per batch, not per item.")
