"""Layers (``em.nn.Linear``, ``em.nn.MLP``) and ML functions (``em.nn.functional``)."""

from . import functional
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
