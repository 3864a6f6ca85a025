"""execmode: a tensor engine with an eager and a graph mode, instrumented end to end.

    import execmode as em
    x = em.randn(64, 512)
    y = em.nn.functional.relu(x @ w)        # eager: runs now, recorded on the tape
    step = em.jit(train_step)               # graph: traced, optimized, compiled kernels

The core never imports Textual or CuPy at import time.
"""

from __future__ import annotations

from . import dtypes, ops  # noqa: F401 - registers the op table
from . import tensor_methods as _tensor_methods
from .tensor import Tensor

# Tensor's methods that call dispatch, autograd and the function API (which all build on
# Tensor) go onto the class once the engine below them is loaded.
_tensor_methods.install(Tensor)

from . import nn, optim, random  # noqa: E402
from .backend import Device, cuda_is_available  # noqa: E402
from .checkpoint import load, save  # noqa: E402
from .debug import breakpoint  # noqa: E402,A004
from .dtypes import bool_, float32, float64, int32, int64  # noqa: E402
from .errors import (  # noqa: E402
    ArgumentError,
    BackwardError,
    DeviceError,
    DTypeError,
    ExecmodeError,
    GraphBreakError,
    IndexingError,
    ShapeError,
)
from .functional import *  # noqa: E402,F403
from .functional import __all__ as _functional_all  # noqa: E402
from .grad_mode import enable_grad, is_grad_enabled, no_grad  # noqa: E402
from .jit_driver.cache_policy import JitWarning  # noqa: E402
from .jit_driver.explain import explain  # noqa: E402
from .jit_driver.jit import disable_jit, jit  # noqa: E402
from .nn.functional import (  # noqa: E402
    binary_cross_entropy_with_logits,
    cross_entropy,
    gelu,
    layer_norm,
    linear,
    log_softmax,
    logsumexp,
    mse_loss,
    nll_loss,
    relu,
    sigmoid,
    softmax,
    softplus,
)
from .scope import named_scope  # noqa: E402


def __getattr__(name):
    # em.profile and em.compare live in the profilers package, imported on first use so
    # that `import execmode` stays light.
    if name == "profile":
        from .profilers.api import profile

        return profile
    if name == "compare":
        from .profilers.compare import compare

        return compare
    from .aliases import module_attribute_error

    # em.foo says so; a name PyTorch or NumPy users type says what to use instead.
    raise module_attribute_error(name)


bool = bool_  # noqa: A001 - em.bool, as the issue asks; the builtin is untouched elsewhere
__version__ = "0.1.0"
