"""``.grad`` on the GPU as on the CPU (grad_accumulation.py): the first gradient stored in
the parameter's layout, later ones added in place (the same object), values equal to the
CPU's. Marked ``gpu`` and skipped, with the reason, where no GPU is usable."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.backend import cuda_problem

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not em.cuda_is_available(),
                       reason=f"needs a CUDA GPU with CuPy: {cuda_problem() or 'unavailable'}"),
]


def test_grads_accumulate_in_place_on_the_gpu_with_the_cpus_values():
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((5, 4)).astype(np.float32)
    xs = [rng.standard_normal((3, 5)).astype(np.float32) for _ in range(2)]
    grads = {}
    for device in ("cpu", "cuda"):
        w = em.tensor(w0, device=device, requires_grad=True)
        (em.tensor(xs[0], device=device) @ w).tanh().sum().backward()
        first = w.grad
        assert first._data.flags.c_contiguous
        (em.tensor(xs[1], device=device) @ w).tanh().sum().backward()
        assert w.grad is first  # accumulated in place
        grads[device] = w.grad.cpu().numpy()
    np.testing.assert_allclose(grads["cuda"], grads["cpu"], rtol=2e-5, atol=2e-6)
