"""All module classes in one place (a re-export): ``from .modules import Module, Parameter``
keeps working for layers written elsewhere in ``execmode.nn``.

The classes live in one file per concept: module.py (Module, Parameter), containers.py,
layers.py (Linear, Embedding, LayerNorm, Flatten, Identity, activations, MLP),
batchnorm.py.
"""

from .batchnorm import BatchNorm1d, BatchNorm2d
from .containers import ModuleDict, ModuleList, Sequential
from .layers import GELU, MLP, Embedding, Flatten, Identity, LayerNorm, Linear, ReLU, Sigmoid, Tanh
from .module import IncompatibleKeys, Module, Parameter

__all__ = ["GELU", "MLP", "BatchNorm1d", "BatchNorm2d", "Embedding", "Flatten", "Identity",
           "IncompatibleKeys", "LayerNorm", "Linear", "Module", "ModuleDict", "ModuleList",
           "Parameter", "ReLU", "Sequential", "Sigmoid", "Tanh"]
