"""Layers (``em.nn.Linear``, ``em.nn.LSTM`` ...), their base ``em.nn.Module``, loss
modules (``em.nn.CrossEntropyLoss`` ...), initializers (``em.nn.init``), gradient clipping
(``em.nn.utils``) and ML functions (``em.nn.functional``), with PyTorch's names and
arguments."""

from . import functional, init, utils
from .activations import (
    CELU,
    ELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU6,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softsign,
    Tanhshrink,
    Threshold,
)
from .batchnorm import BatchNorm3d
from .layers import Unflatten
from .layers_attention import MultiheadAttention
from .layers_conv import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    Conv1d,
    Conv2d,
    ConvTranspose1d,
    ConvTranspose2d,
    MaxPool1d,
    MaxPool2d,
)
from .layers_dropout import Dropout, Dropout1d, Dropout2d, Dropout3d
from .lazy import LazyLinear, UninitializedParameter
from .loss_modules import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .modules import (
    GELU,
    MLP,
    BatchNorm1d,
    BatchNorm2d,
    Embedding,
    Flatten,
    Identity,
    IncompatibleKeys,
    LayerNorm,
    Linear,
    Module,
    ModuleDict,
    ModuleList,
    Parameter,
    ReLU,
    Sequential,
    Sigmoid,
    Tanh,
)
from .normalization import GroupNorm, RMSNorm
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = ["GELU", "MLP", "BatchNorm1d", "BatchNorm2d", "Embedding", "Flatten", "Identity",
           "IncompatibleKeys", "LayerNorm", "Linear", "Module", "ModuleDict", "ModuleList",
           "Parameter", "ReLU", "Sequential", "Sigmoid", "Tanh", "functional", "init",
           "utils"]
# Convolution, pooling, dropout, attention (nn/layers_conv.py, layers_dropout.py,
# layers_attention.py).
__all__ += ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
            "AvgPool1d", "AvgPool2d", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d",
            "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "MaxPool1d", "MaxPool2d",
            "MultiheadAttention"]
# Loss modules (nn/loss_modules.py).
__all__ += ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss",
            "L1Loss", "MSELoss", "NLLLoss", "SmoothL1Loss"]
# Recurrent layers, transformer, normalization, lazy layers, more activations.
__all__ += ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase",
            "TransformerEncoder", "TransformerEncoderLayer", "Transformer", "TransformerDecoder",
            "TransformerDecoderLayer", "BatchNorm3d", "GroupNorm",
            "RMSNorm", "LazyLinear", "UninitializedParameter", "Unflatten"]
__all__ += ["CELU", "ELU", "GLU", "SELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
            "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "ReLU6", "SiLU", "Softmax", "Softmin",
            "Softplus", "Softsign", "Tanhshrink", "Threshold"]


def __getattr__(name: str):
    # A name this module lacks: what to use instead, or that PyTorch's is not supported,
    # never a "did you mean" to an unrelated name (aliases.py).
    import sys

    from execmode.aliases import missing_attribute

    raise missing_attribute(__name__, name, sys.modules[__name__])
