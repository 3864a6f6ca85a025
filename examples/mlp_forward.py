"""d2l's hybridize example: a 512-256-128-2 ReLU MLP on a (1, 512) input, 1000 calls.

The claim: jit is far faster for this small network, because every eager op pays
Python dispatch while the compiled plan pays it once per call.

    python examples/mlp_forward.py
"""

import numpy as np
from _common import size, timeit

import execmode as em

em.random.seed(0)
net = em.nn.MLP([512, 256, 128, 2])
x = em.randn(1, 512)
fast = em.jit(net)
np.testing.assert_allclose(fast(x).numpy(), net(x).numpy(), rtol=1e-4, atol=1e-6)

weights = [(layer.weight.numpy(), layer.bias.numpy()) for layer in net.layers[::2]]


def numpy_forward(a):
    for i, (w, b) in enumerate(weights):
        a = a @ w.T + b
        if i < len(weights) - 1:
            a = np.maximum(a, 0)
    return a


x_np = x.numpy()
calls = size(1000, 50)
numpy_s = timeit(lambda: numpy_forward(x_np), calls)
eager_s = timeit(lambda: net(x), calls)
jit_s = timeit(lambda: fast(x), calls)
print(f"{calls} calls of a 512-256-128-2 MLP on a (1, 512) input (per call):")
print(f"  NumPy op by op  {numpy_s * 1e6:8.1f} us")
print(f"  execmode eager  {eager_s * 1e6:8.1f} us")
print(f"  execmode jit    {jit_s * 1e6:8.1f} us   ({eager_s / jit_s:.1f}x faster than eager)")
ratio = eager_s / jit_s
verdict = "confirmed" if ratio >= 2 else "depends"
print(f"VERDICT: {verdict} - jit is {ratio:.1f}x faster than eager: the three matmuls "
      "dominate, and jit removes the per-op dispatch around them (matmul+bias+relu fused).")
