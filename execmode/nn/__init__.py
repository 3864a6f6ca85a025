"""Layers (``em.nn.Linear``, ``em.nn.MLP``) and ML functions (``em.nn.functional``)."""

from . import functional
from .layers_attention import MultiheadAttention
from .layers_conv import AvgPool1d, AvgPool2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d
from .layers_dropout import Dropout
from .modules import (
    GELU,
    MLP,
    LayerNorm,
    Linear,
    Module,
    Parameter,
    ReLU,
    Sequential,
    Sigmoid,
    Tanh,
)

__all__ = ["GELU", "MLP", "LayerNorm", "Linear", "Module", "Parameter", "ReLU", "Sequential",
           "Sigmoid", "Tanh", "functional"]
# Convolution, pooling, dropout, attention (nn/layers_conv.py, layers_dropout.py,
# layers_attention.py).
__all__ += ["AvgPool1d", "AvgPool2d", "Conv1d", "Conv2d", "Dropout", "MaxPool1d", "MaxPool2d",
            "MultiheadAttention"]
