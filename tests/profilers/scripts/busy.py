"""About a second of eager work (small matmuls and elementwise ops), for py-spy tests."""

import time

import execmode as em


def step(x, w):
    return em.tanh(x @ w) * 0.5 + em.relu(x @ w)


x = em.ones(64, 128)
w = em.ones(128, 128) * 0.01
end = time.perf_counter() + 1.0
while time.perf_counter() < end:
    y = step(x, w)
print("done")
