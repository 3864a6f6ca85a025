"""The op table. Importing this package registers every primitive op in ``OPS``."""

from . import conv, creation, elementwise, linalg, movement, reductions, state  # noqa: F401
from .registry import OPS, Aval, OpDef, get_op

__all__ = ["OPS", "Aval", "OpDef", "get_op"]
