"""Oracles for gradients through complex values (PyTorch's convention: for a real loss L of
z = x + iy, z.grad = dL/dx + i dL/dy): torch's autograd on the same inputs, and central
finite differences along the real and the imaginary axis of every element."""

from __future__ import annotations

import numpy as np

import execmode as em


def loss_of(ns, y, weights):
    """sum(real(y * weights)): a real loss that every element of ``y`` moves (its real and
    imaginary parts with different weights)."""
    w = em.asarray(weights) if ns is em else ns.tensor(weights)
    prod = y * w
    is_complex = prod.dtype.kind == "c" if ns is em else prod.dtype.is_complex
    if is_complex:
        prod = ns.real(prod)
    return ns.sum(prod)


def weights_for(shape, complex_out, seed=1):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape)
    if complex_out:
        w = w + 1j * rng.standard_normal(shape)
    return w


def em_gradients(fn, arrays, weights):
    leaves = [em.tensor(a, requires_grad=True) for a in arrays]
    loss_of(em, fn(em, *leaves), weights).backward()
    return [x.grad for x in leaves]


def torch_gradients(torch, fn, arrays, weights):
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    loss_of(torch, fn(torch, *leaves), weights).backward()
    return [x.grad.resolve_conj().numpy() for x in leaves]


def finite_differences(fn, arrays, weights, step=1e-6):
    """The gradient of loss_of(fn) by central differences (float64/complex128 inputs)."""
    def loss(values):
        with em.no_grad():
            return float(loss_of(em, fn(em, *(em.tensor(v) for v in values)), weights).item())

    grads = []
    for i, a in enumerate(arrays):
        grad = np.zeros_like(a)
        directions = (1.0, 1j) if a.dtype.kind == "c" else (1.0,)
        for idx in np.ndindex(a.shape):
            for d in directions:
                values = [v.copy() for v in arrays]
                values[i][idx] += step * d
                up = loss(values)
                values[i][idx] -= 2 * step * d
                down = loss(values)
                grad[idx] += d * (up - down) / (2 * step)
        grads.append(grad)
    return grads


def assert_jitted_backward_is_eagers(fn, arrays, tol):
    """``fn(*tensors)`` (a loss) under em.jit gives eager's loss and gradients: with
    ``backward()`` inside the call (traced, then replayed) and on its result outside."""
    def step(*tensors):
        loss = fn(*tensors)
        loss.backward()
        return (loss, *(t.grad for t in tensors))

    def leaves():
        return [em.tensor(a, requires_grad=True) for a in arrays]

    results = [run(*leaves()) for run in (step, em.jit(step), em.jit(step))]  # a replay too
    grads = []
    for run in (fn, em.jit(fn)):
        tensors = leaves()
        run(*tensors).backward()  # outside the call: through the jitted result
        grads.append([t.grad for t in tensors])
    for got, want in [(r, results[0]) for r in results[1:]] + [(grads[1], grads[0])]:
        for g, e in zip(got, want, strict=True):
            assert g.dtype == e.dtype
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=tol, atol=tol)
