"""A jitted function with a graph break, CSE and fusion, called with two shapes."""
import execmode as em


def step(x, w):
    h = x @ w
    a = em.relu(h) * 2.0 + 1.0
    b = em.relu(h) * 2.0 + 1.0    # CSE merges this into a
    if (a + b).sum().item() > 0:  # a graph break: Python needs the value
        a = a * 0.5
    return (a + b).mean()


fast = em.jit(step)
w = em.ones(8, 4) * 0.1
for n in (16, 16, 32):            # the third call retraces: a new shape
    loss = fast(em.ones(n, 8), w)
print("loss", round(float(loss.item()), 4))
