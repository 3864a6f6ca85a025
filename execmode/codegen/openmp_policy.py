"""The OpenMP runtime's wait policy, set before anything of execmode's loads the runtime.

A module of its own, below the modules that load libgomp (the toolchain's probe, the
kernel libraries, blas_workers.py's callback) and threads.py, so that each can set it
first without importing the others.
"""

from __future__ import annotations

import os


def prefer_passive_openmp() -> None:
    """Idle OpenMP workers sleep instead of spinning, unless the user chose a policy.

    Kernels share the cores with NumPy and BLAS between parallel regions: spinning workers
    (libgomp's default: 300,000 spins, ~7 ms on the 2-vCPU VM) made an MLP training step
    10x slower on 2 cores. Read by libgomp once, when it loads: so this runs before
    anything of execmode's loads it (the toolchain's OpenMP probe, the first kernel
    library, blas_workers.py's callback). Measured: idle after a kernel, a process used
    ~0.05 ms of CPU in 50 ms with it, 3-7 ms without.
    """
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
