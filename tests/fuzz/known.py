"""Minimized repros of the mismatch classes the fuzzer finds and that stay, each with the
check that stands for it in features.CHECKS (switched off by default, with the reason
there and in docs/graph-mode.md). A class that gets fixed leaves this table and becomes a
named regression test (tests/graph/test_fuzz_found.py)."""

KNOWN_MISMATCHES: dict[str, str] = {
    # check "jit_result_backward" (program 1795535866-5875): the second call's backward
    # reaches the history the first call left on g0; jit raises BackwardError.
    "jit_result_backward": '''
import execmode as em

# --- setup ---
g0 = em.tensor([0.0, 0.0])
w = em.tensor([1.0, -2.0], requires_grad=True)

# --- function ---
def f(x, y):
    y[...] = g0
    loss = ((x - y) * w).sum()
    loss.backward()
    g0[...] = loss
    return None

F = em.jit(f)
# --- call 1 ---
x1 = em.tensor([1.0, 1.0])
y1 = em.tensor([0.5, 0.5])
out1 = F(x1, y1)

# --- call 2 ---
x2 = em.tensor([1.0, 1.0])
y2 = em.tensor([0.5, 0.5])
out2 = F(x2, y2)
''',
    # check "int_extremes_sum_order" (program 20261129-3108): the mean of int64 values that
    # hold -2**63 and 2**63 - 1 sums them in float64, where the two cancel and absorb the
    # small values beside them in an order-dependent way: NumPy's pairwise sum gives -0.25,
    # a kernel's running sum 0.0.
    "int_extremes_sum_order": '''
import execmode as em

# --- setup ---

# --- function ---
def f(k):
    return k.mean()

F = em.jit(f)
# --- call 1 ---
k1 = em.tensor([[-4, -4, 2, 0], [3, -3, 4, 0], [4, -6, -4, 5], [-9223372036854775808, 4, 9223372036854775807, 0], [-6, 6, 1, 1]], dtype=em.int64)
out1 = F(k1)
''',
}
