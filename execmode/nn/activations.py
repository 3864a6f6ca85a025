"""More activations, as functions (re-exported by ``nn.functional``) and as modules:
silu, leaky_relu, elu, selu, celu, mish, hardtanh, relu6, hardsigmoid, hardswish,
logsigmoid, softsign, glu, prelu, softmin, tanhshrink, threshold.

Each is a composite of primitives in a named scope. Where PyTorch's derivative at a kink
is a convention (leaky_relu and elu at 0, hardtanh at its bounds, hardswish at +-3), the
``where`` conditions are written so that the gradient there is PyTorch's (hardswish: 0 at
-3 and 1 at 3).
"""

from __future__ import annotations

from .. import functional as F
from ..dtypes import float32, float64
from ..errors import ArgumentError
from ..op_errors import op_error
from ..scope import named_scope
from . import logistic as NF
from .module import Module, Parameter
from .softmax import log_softmax, softmax

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float(op, x):
    x = F._require_tensor(op, x)
    if x.dtype.kind != "f":
        return F.astype(x, float64 if x.dtype.kind in "iu" else float32)
    return x


def _inplace(x, out, inplace: bool):
    """PyTorch's ``inplace=True``: the result written into ``x``, which is returned."""
    return F.assign(x, out) if inplace else out


@named_scope("silu")
def silu(input, inplace: bool = False):  # noqa: A002 - PyTorch's names
    """``x * sigmoid(x)`` (swish)."""
    x = _float("silu", input)
    return _inplace(input, x * NF.sigmoid(x), inplace)


@named_scope("leaky_relu")
def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):  # noqa: A002
    """``x`` where ``x > 0``, else ``negative_slope * x`` (the slope's gradient at 0)."""
    x = F._require_tensor("leaky_relu", input)
    return _inplace(input, F.where(F.greater(x, 0), x, x * negative_slope), inplace)


@named_scope("elu")
def elu(input, alpha: float = 1.0, inplace: bool = False):  # noqa: A002
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    x = _float("elu", input)
    return _inplace(input, F.where(F.greater(x, 0), x, F.expm1(x) * alpha), inplace)


@named_scope("selu")
def selu(input, inplace: bool = False):  # noqa: A002
    """``scale * elu(x, alpha)`` with the self-normalizing constants."""
    x = _float("selu", input)
    out = F.where(F.greater(x, 0), x, F.expm1(x) * _SELU_ALPHA) * _SELU_SCALE
    return _inplace(input, out, inplace)


@named_scope("celu")
def celu(input, alpha: float = 1.0, inplace: bool = False):  # noqa: A002
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    x = _float("celu", input)
    out = F.where(F.greater(x, 0), x, F.expm1(x / alpha) * alpha)
    return _inplace(input, out, inplace)


@named_scope("mish")
def mish(input, inplace: bool = False):  # noqa: A002
    """``x * tanh(softplus(x))``."""
    x = _float("mish", input)
    return _inplace(input, x * F.tanh(NF.softplus(x)), inplace)


@named_scope("hardtanh")
def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0,  # noqa: A002
             inplace: bool = False):
    """``x`` clipped to [min_val, max_val]; the gradient is 0 at the bounds (PyTorch's
    hardtanh, unlike clamp)."""
    x = F._require_tensor("hardtanh", input)
    if min_val > max_val:
        raise op_error(ArgumentError, "hardtanh", (x,),
                       f"min_val {min_val} must not exceed max_val {max_val}")
    inside = F.logical_and(F.greater(x, min_val), F.less(x, max_val))
    out = F.where(inside, x, F.clip(x, min_val, max_val).detach())
    return _inplace(input, out, inplace)


def relu6(input, inplace: bool = False):  # noqa: A002
    """``hardtanh(x, 0, 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


@named_scope("hardsigmoid")
def hardsigmoid(input, inplace: bool = False):  # noqa: A002
    """``relu6(x + 3) / 6``: 0 below -3, 1 above 3, linear between."""
    x = _float("hardsigmoid", input)
    inside = F.logical_and(F.greater(x, -3.0), F.less(x, 3.0))
    y = x / 6 + 0.5
    out = F.where(inside, y, F.clip(y, 0.0, 1.0).detach())
    return _inplace(input, out, inplace)


@named_scope("hardswish")
def hardswish(input, inplace: bool = False):  # noqa: A002
    """``x * relu6(x + 3) / 6``."""
    x = _float("hardswish", input)
    out = F.where(F.less_equal(x, -3.0), x * 0,
                  F.where(F.greater_equal(x, 3.0), x, x * (x + 3) / 6))
    return _inplace(input, out, inplace)


@named_scope("logsigmoid")
def logsigmoid(input):  # noqa: A002
    """``log(sigmoid(x)) = -softplus(-x)``, finite for every input."""
    x = _float("logsigmoid", input)
    return F.negative(NF.softplus(F.negative(x)))


@named_scope("softsign")
def softsign(input):  # noqa: A002
    """``x / (1 + |x|)``."""
    x = _float("softsign", input)
    return x / (F.abs(x) + 1)


@named_scope("tanhshrink")
def tanhshrink(input):  # noqa: A002
    """``x - tanh(x)``."""
    x = _float("tanhshrink", input)
    return x - F.tanh(x)


@named_scope("threshold")
def threshold(input, threshold: float, value: float, inplace: bool = False):  # noqa: A002
    """``x`` where ``x > threshold``, else ``value``."""
    x = F._require_tensor("threshold", input)
    return _inplace(input, F.where(F.greater(x, threshold), x, value + x * 0), inplace)


@named_scope("glu")
def glu(input, dim: int = -1):  # noqa: A002
    """Gated linear unit: the first half of ``dim`` times the sigmoid of the second."""
    x = F._require_tensor("glu", input)
    if x.ndim == 0 or x.shape[dim] % 2:
        raise op_error(ArgumentError, "glu", (x,),
                       f"dimension {dim} must have an even size, got shape {tuple(x.shape)}")
    a, b = F.chunk(x, 2, dim=dim)
    return a * NF.sigmoid(b)


@named_scope("prelu")
def prelu(input, weight):  # noqa: A002
    """``x`` where ``x > 0``, else ``weight * x``; ``weight`` has one entry, or one per
    channel (dimension 1)."""
    x = F._require_tensor("prelu", input)
    weight = F._require_tensor("prelu", weight, (x, weight))
    if weight.size > 1:
        if x.ndim < 2 or x.shape[1] != weight.size:
            raise op_error(ArgumentError, "prelu", (x, weight),
                           f"{weight.size} weights need {weight.size} channels in "
                           f"dimension 1, got shape {tuple(x.shape)}")
        weight = F.reshape(weight, (1, weight.size) + (1,) * (x.ndim - 2))
    return F.where(F.greater(x, 0), x, weight * x)


def softmin(input, dim=None, **torch_keywords):  # noqa: A002
    """``softmax(-x)`` along ``dim``."""
    x = F._require_tensor("softmin", input)
    return softmax(F.negative(x), axis=_softmax_dim(x, dim), **torch_keywords)


def _softmax_dim(x, dim):
    """PyTorch's default for a softmax without ``dim`` (it warns): 0 for 0-, 1- and 3-d
    inputs, else 1."""
    if dim is not None:
        return dim
    return 0 if x.ndim in (0, 1, 3) else 1


# --- modules ---------------------------------------------------------------------------------

class _Activation(Module):
    """A module applying ``fn`` with the arguments given at construction."""

    _fn = staticmethod(lambda x: x)
    names: tuple = ()

    def __init__(self, *args, **kwargs):
        super().__init__()
        values = dict(zip(self.names, args))
        for name, default in zip(self.names, self.defaults):
            setattr(self, name, kwargs.pop(name, values.get(name, default)))
        if kwargs or len(args) > len(self.names):
            raise op_error(ArgumentError, type(self).__name__, (),
                           f"unexpected arguments {sorted(kwargs) or args[len(self.names):]}")

    defaults: tuple = ()

    def forward(self, x):
        """The activation of ``x``."""
        return self._fn(x, *(getattr(self, n) for n in self.names))

    def extra_repr(self) -> str:
        return ", ".join(f"{n}={getattr(self, n)!r}" for n in self.names)


class SiLU(_Activation):
    """``x * sigmoid(x)``."""

    _fn, names, defaults = staticmethod(silu), ("inplace",), (False,)


class LeakyReLU(_Activation):
    """``x`` for positive ``x``, else ``negative_slope * x``."""

    _fn, names, defaults = staticmethod(leaky_relu), ("negative_slope", "inplace"), (0.01, False)


class ELU(_Activation):
    """``x`` for positive ``x``, else ``alpha * (exp(x) - 1)``."""

    _fn, names, defaults = staticmethod(elu), ("alpha", "inplace"), (1.0, False)


class SELU(_Activation):
    """Self-normalizing ELU."""

    _fn, names, defaults = staticmethod(selu), ("inplace",), (False,)


class CELU(_Activation):
    """Continuously differentiable ELU."""

    _fn, names, defaults = staticmethod(celu), ("alpha", "inplace"), (1.0, False)


class Mish(_Activation):
    """``x * tanh(softplus(x))``."""

    _fn, names, defaults = staticmethod(mish), ("inplace",), (False,)


class Hardtanh(_Activation):
    """``x`` clipped to [min_val, max_val]."""

    _fn = staticmethod(hardtanh)
    names, defaults = ("min_val", "max_val", "inplace"), (-1.0, 1.0, False)


class ReLU6(_Activation):
    """``x`` clipped to [0, 6]."""

    _fn, names, defaults = staticmethod(relu6), ("inplace",), (False,)


class Hardsigmoid(_Activation):
    """``relu6(x + 3) / 6``."""

    _fn, names, defaults = staticmethod(hardsigmoid), ("inplace",), (False,)


class Hardswish(_Activation):
    """``x * relu6(x + 3) / 6``."""

    _fn, names, defaults = staticmethod(hardswish), ("inplace",), (False,)


class LogSigmoid(_Activation):
    """``log(sigmoid(x))``."""

    _fn = staticmethod(logsigmoid)


class Softsign(_Activation):
    """``x / (1 + |x|)``."""

    _fn = staticmethod(softsign)


class Tanhshrink(_Activation):
    """``x - tanh(x)``."""

    _fn = staticmethod(tanhshrink)


class Threshold(_Activation):
    """``x`` above ``threshold``, else ``value``."""

    _fn = staticmethod(threshold)
    names, defaults = ("threshold", "value", "inplace"), (None, None, False)


class Softplus(_Activation):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``."""

    _fn = staticmethod(lambda x, beta, threshold: NF.softplus(x, beta, threshold))
    names, defaults = ("beta", "threshold"), (1.0, 20.0)


class GLU(_Activation):
    """Gated linear unit over ``dim``."""

    _fn, names, defaults = staticmethod(glu), ("dim",), (-1,)


class Softmax(_Activation):
    """``softmax(x, dim)`` (dim None: PyTorch's legacy default, 1 for 2-d and 4-d)."""

    _fn = staticmethod(lambda x, dim: softmax(x, axis=_softmax_dim(x, dim)))
    names, defaults = ("dim",), (None,)


class LogSoftmax(_Activation):
    """``log_softmax(x, dim)``."""

    _fn = staticmethod(lambda x, dim: log_softmax(x, axis=_softmax_dim(x, dim)))
    names, defaults = ("dim",), (None,)


class Softmin(_Activation):
    """``softmax(-x, dim)``."""

    _fn = staticmethod(lambda x, dim: softmin(x, dim))
    names, defaults = ("dim",), (None,)


class PReLU(Module):
    """``x`` for positive ``x``, else ``weight * x`` with a learned ``weight`` (one, or
    one per channel), initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, *, device=None,
                 dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.weight = Parameter(F.full((num_parameters,), init, dtype=dtype or float32,
                                       device=device))

    def forward(self, x):
        """``prelu(x, weight)``."""
        return prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


__all__ = ["CELU", "ELU", "GLU", "SELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
           "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU6", "SiLU", "Softmax", "Softmin",
           "Softplus", "Softsign", "Tanhshrink", "Threshold", "celu", "elu", "glu",
           "hardsigmoid", "hardswish", "hardtanh", "leaky_relu", "logsigmoid", "mish",
           "prelu", "relu6", "selu", "silu", "softmin", "softsign", "tanhshrink", "threshold"]
