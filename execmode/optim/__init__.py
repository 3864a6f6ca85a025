"""Optimizers (``em.optim.SGD``, ``Adam``, ``AdamW``, ``RMSprop``) with PyTorch's
parameter groups and state_dict, and learning-rate schedules (``em.optim.lr_scheduler``)."""

from . import lr_scheduler
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
