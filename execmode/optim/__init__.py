"""Optimizers (``em.optim.SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad``,
``Adadelta``, ``LBFGS``) with PyTorch's parameter groups and state_dict, and
learning-rate schedules (``em.optim.lr_scheduler``)."""

from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["LBFGS", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop",
           "lr_scheduler"]


def __getattr__(name: str):
    # A name this module lacks: what to use instead, or that PyTorch's is not supported,
    # never a "did you mean" to an unrelated name (aliases.py).
    import sys

    from execmode.aliases import missing_attribute

    raise missing_attribute(__name__, name, sys.modules[__name__])
