"""Layers (``em.nn.Linear``, ``em.nn.Embedding`` ...), their base ``em.nn.Module``,
initializers (``em.nn.init``), gradient clipping (``em.nn.utils``) and ML functions
(``em.nn.functional``)."""

from . import functional, init, utils
from .layers_attention import MultiheadAttention
from .layers_conv import AvgPool1d, AvgPool2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d
from .layers_dropout import Dropout
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

__all__ = ["GELU", "MLP", "BatchNorm1d", "BatchNorm2d", "Embedding", "Flatten", "Identity",
           "IncompatibleKeys", "LayerNorm", "Linear", "Module", "ModuleDict", "ModuleList",
           "Parameter", "ReLU", "Sequential", "Sigmoid", "Tanh", "functional", "init",
           "utils"]
# Convolution, pooling, dropout, attention (nn/layers_conv.py, layers_dropout.py,
# layers_attention.py).
__all__ += ["AvgPool1d", "AvgPool2d", "Conv1d", "Conv2d", "Dropout", "MaxPool1d", "MaxPool2d",
            "MultiheadAttention"]
# Loss modules (nn/loss_modules.py).
__all__ += ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss",
            "L1Loss", "MSELoss", "NLLLoss", "SmoothL1Loss"]
