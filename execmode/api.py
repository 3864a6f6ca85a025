"""The public names of ``import execmode as em``, in one place.

``execmode/__init__.py`` imports this module on the first ``em.<name>`` (PEP 562), so the
command line and the TUI, which run no tensor code, start without NumPy and the engine.
Importing it loads the whole engine: the op table, Tensor's methods, nn, optim, jit.
"""

import sys as _sys

from . import dtypes, ops  # noqa: F401 - registers the op table
from . import tensor_methods as _tensor_methods
from ._tensor import Tensor

# Tensor's methods that call dispatch, autograd and the function API (which all build on
# Tensor) go onto the class once the engine below them is loaded.
_tensor_methods.install(Tensor)

# After many plain eager operator calls, + - * / go to C (codegen/eager_operators.py).
from . import dispatch as _dispatch
from .codegen import eager_operators as _eager_operators

_dispatch.when_operators_hot(lambda: _eager_operators.install(Tensor))

from . import nn, optim, random
from .backend import Device, cuda_is_available
from .checkpoint import load, save
from .codegen.threads import get_num_threads, set_num_threads
from .debug import breakpoint  # noqa: A004
from .dtypes import (
    bool_,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .errors import (
    ArgumentError,
    BackwardError,
    DeviceError,
    DTypeError,
    ExecmodeError,
    GraphBreakError,
    IndexingError,
    ShapeError,
)
from .functional import *  # noqa: F403
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .jit_driver.cache_policy import JitWarning
from .jit_driver.explain import explain
from .jit_driver.jit import disable_jit, jit
from .nn.functional import (
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
from .scope import named_scope

# The Array API's constants (issue 36): Python floats, as the standard asks, and None for
# newaxis (x[em.newaxis] inserts an axis, as x[None] does).
e = 2.718281828459045
pi = 3.141592653589793
inf = float("inf")
nan = float("nan")
newaxis = None

_ARRAY_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def _array_namespace(self, /, *, api_version=None):
    """The Array API namespace of this tensor: the ``execmode`` module itself."""
    if api_version is not None and api_version not in _ARRAY_API_VERSIONS:
        raise ValueError(f"api_version {api_version!r} is not supported; execmode follows "
                         + ", ".join(_ARRAY_API_VERSIONS))
    return _sys.modules[__package__]  # the package (not imported here: no import cycle)


Tensor.__array_namespace__ = _array_namespace

bool = bool_  # noqa: A001 - em.bool, as the issue asks; the builtin is untouched elsewhere
