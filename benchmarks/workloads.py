"""Workload pieces more than one benchmark script runs: the MLP training step as execmode
code, and the same SGD step written by hand in NumPy (the reference a step is checked and
timed against). Imported as ``workloads`` (a script run as ``python benchmarks/X.py`` has
this folder first on ``sys.path``)."""

from __future__ import annotations

import numpy as np

import execmode as em


def train_step(model, opt):
    """The training step every train-step workload times: MSE loss, backward, update."""
    def step(x, y):
        loss = em.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step


def numpy_mlp_sgd_step(weights, x, y, lr: float = 0.01):
    """One SGD step of an MLP (ReLU between layers, MSE loss) by hand in NumPy: forward,
    backward and the update of ``weights`` ([[w, b], ...], PyTorch's layout) in place.
    Returns the loss (before the update)."""
    acts, pre, h = [x], [], x
    for k, (w, b) in enumerate(weights):
        z = h @ w.T + b
        pre.append(z)
        h = np.maximum(z, 0) if k < len(weights) - 1 else z
        acts.append(h)
    diff = h - y
    g = 2.0 * diff / diff.size
    for k in range(len(weights) - 1, -1, -1):
        w, b = weights[k]
        if k < len(weights) - 1:
            g = g * (pre[k] > 0)
        gw, gb = g.T @ acts[k], g.sum(axis=0)
        g = g @ w
        w -= lr * gw
        b -= lr * gb
    return np.mean(diff * diff)
