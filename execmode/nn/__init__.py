"""Layers (``em.nn.Linear``, ``em.nn.Embedding`` ...), their base ``em.nn.Module``,
initializers (``em.nn.init``), gradient clipping (``em.nn.utils``) and ML functions
(``em.nn.functional``)."""

from . import functional, init, utils
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
