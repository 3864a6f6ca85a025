"""A tour of the optimization passes, one rewrite at a time.

The function has a foldable constant, a duplicated subexpression, a dead branch and a
fusable chain; the pass record shows what each pass did, and the memory plan its peaks.

    python examples/passes_tour.py
"""

import execmode as em

em.random.seed(0)
w = em.randn(64, 64)


def tour(x):
    scale = em.full((64,), 2.0) * 0.25            # foldable: built from constants
    h = x @ w
    a = em.tanh(h * 0.5) + em.tanh(h * 0.5)       # the same subexpression twice
    unused = em.exp(h) * 3.0                      # dead: nothing uses it
    del unused
    y = (a * 1.0 + scale) * em.sigmoid(h)         # x*1 and a fusable chain
    return y.sum(axis=1)


x = em.randn(32, 64)
lowered = em.jit(tour).lower(x)
print(lowered.record)
print()
print("the optimized graph:")
print(lowered.graph)
mem = lowered.record.memory
print(f"\npeak memory: planned {mem.planned_peak} B, unplanned {mem.unplanned_peak} B, "
      f"eager (simulated) {mem.eager_peak} B")
kinds = {r.kind for r in lowered.record.rewrites}
seen = {"fold", "cse", "dce"} <= kinds
print(f"VERDICT: {'confirmed' if seen else 'refuted'} - constant folding, CSE and DCE each "
      "left rewrites in the pass record (see the sentences above).")
