"""A loop over variable sequence lengths: every new shape retraces (tf.function's
polymorphic functions), and the retrace log says why. From the second length on, the
length is a dynamic dimension: those traces skip compiling kernels (docs/graph-mode.md).

    python examples/varlen.py
"""

import execmode as em

em.random.seed(1)
w = em.randn(8, 8)


@em.jit
def encode(seq):
    h = em.tanh(seq @ w)
    return h.mean(axis=0)


for length in (5, 7, 5, 12, 7, 5):
    encode(em.randn(length, 8))

print(f"{encode.trace_count} traces for 6 calls over lengths 5, 7, 5, 12, 7, 5")
for r in encode.retraces:
    print(" ", r)
print("signatures:")
for cf in encode.concrete_functions:
    print("  ", cf.signature)
print(f"VERDICT: {'confirmed' if encode.trace_count == 3 else 'refuted'} - each new length "
      "retraced once; lengths seen before reused their compiled graph.")
