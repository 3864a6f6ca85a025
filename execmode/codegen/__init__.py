"""Kernel generation: fused graph nodes become compiled kernels.

The pipeline, in the order data flows through it::

    lower.py         fused Node -> kernel IR (kernel_ir.py; index math in layout.py)
    render_c.py      kernel IR -> C        render_cuda.py  kernel IR -> CUDA
    c_runtime.py     one compiler call per graph, disk cache, ctypes kernels
    threads.py       the thread count of kernels and NumPy's BLAS; threads across fork()
    interpreter.py   kernel IR over NumPy when there is no C compiler
    cuda_runtime.py  CUDA through CuPy (imported only when a GPU is used)
    factory.py       kernel_factory_for(graph): what the plan calls

Nothing here compiles or imports CuPy at import time.
"""

from __future__ import annotations

import importlib

# Loaded on first use (PEP 562): the factory pulls in the whole pipeline (~70 ms), and
# light users of this package (the disk cache's trust checks and the CPU identity, which
# the profiler's cached calibration reads) should not pay for it.
_LAZY = {"compile_kernels": "factory", "kernel_factory_for": "factory",
         "BackendStatus": "status", "backend_status": "status"}

__all__ = ["BackendStatus", "backend_status", "compile_kernels", "kernel_factory_for"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
