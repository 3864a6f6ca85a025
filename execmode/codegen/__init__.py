"""Kernel generation: fused graph nodes become compiled kernels.

The pipeline, in the order data flows through it::

    lower.py         fused Node -> kernel IR (kernel_ir.py; index math in layout.py)
    render_c.py      kernel IR -> C        render_cuda.py  kernel IR -> CUDA
    c_runtime.py     one compiler call per graph, disk cache, ctypes kernels
    interpreter.py   kernel IR over NumPy when there is no C compiler
    cuda_runtime.py  CUDA through CuPy (imported only when a GPU is used)
    factory.py       kernel_factory_for(graph): what the plan calls

Nothing here compiles or imports CuPy at import time.
"""

from .factory import compile_kernels, kernel_factory_for
from .status import BackendStatus, backend_status

__all__ = ["BackendStatus", "backend_status", "compile_kernels", "kernel_factory_for"]
