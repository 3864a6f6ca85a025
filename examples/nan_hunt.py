"""A debugging story: a training loop goes NaN inside a jitted, fused step.

The loss is a hand-written cross-entropy, -sum(y * log(softmax(z))). With a learning rate
that is too high the logits grow, softmax underflows to exactly 0 for some class, log(0)
is -inf, and 0 * -inf is NaN. Under em.jit the whole step (forward, backward, update) is
one graph whose softmax/log/multiply ops are fused into one C kernel, so no eager op ever
shows the NaN being born.

Find it:

    execmode run --break nan examples/nan_hunt.py       # headless: where and why
    execmode tui --break nan examples/nan_hunt.py       # then press c (continue)

The NaN breakpoint stops after the kernel whose output first holds a NaN; execmode re-runs
that segment op by op from its saved inputs and names the first op that produced a
non-finite value, with its source line (the log below).
"""

from _common import QUICK

import execmode as em

em.random.seed(7)
n, features, classes = 64, 20, 4
x = em.randn(n, features) * 3.0
labels = em.random.randint(0, classes, (n,))
y = em.astype(em.equal(em.expand_dims(labels, -1), em.arange(classes)), em.float32)

model = em.nn.MLP([features, 64, classes])
opt = em.optim.SGD(model.parameters(), lr=2.0)     # far too high: the logits explode


def naive_cross_entropy(logits, target):
    probs = em.softmax(logits, axis=-1)
    return -(target * em.log(probs)).sum(axis=-1).mean()   # log(0) = -inf; 0 * -inf = NaN


@em.jit
def train_step(x, y):
    opt.zero_grad()
    loss = naive_cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


for step in range(30 if not QUICK else 30):
    loss = train_step(x, y).item()
    print(f"step {step:3d}  loss {loss:.4f}")
    if loss != loss:  # NaN
        print("the loss is NaN: run `execmode run --break nan examples/nan_hunt.py` to see "
              "where it came from")
        break
