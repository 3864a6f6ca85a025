"""Ops in a named scope, a line with no op, and an Inf: for breakpoints that never hit."""
import execmode as em


def helper():
    return 3                                   # line 6: Python only, no op


x = em.ones(2, 3)
with em.named_scope("mlp"), em.named_scope("fc0"):
    y = x * 2.0                                # line 11
z = em.exp(y) * float("inf")                   # line 12: an Inf
n = helper()
print("done", n)
