"""An MLP trained eagerly on a synthetic dataset: the loss goes down.

    python examples/mlp_train.py
"""

from _common import size

import execmode as em

em.random.seed(0)
n, features = size(512, 128), 16
x = em.randn(n, features)
true_w = em.randn(features, 1)
y = em.tanh(x @ true_w) + 0.1 * em.randn(n, 1)   # a smooth target with noise

model = em.nn.MLP([features, 64, 64, 1])
opt = em.optim.Adam(model.parameters(), lr=1e-2)

epochs = size(200, 40)
for epoch in range(epochs):
    opt.zero_grad()
    loss = em.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    if epoch % max(epochs // 10, 1) == 0 or epoch == epochs - 1:
        print(f"epoch {epoch:4d}  loss {loss.item():.5f}")
