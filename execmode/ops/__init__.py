"""The op table. Importing this package registers every primitive op in ``OPS``."""

from . import (  # noqa: F401
    complex_parts,
    conv,
    creation,
    decompositions,
    elementwise,
    fft,
    gather,
    linalg,
    movement,
    pooling,
    reductions,
    sampling,
    scan,
    scatter_slices,
    sets,
    state,
    triangular,
)
from .registry import OPS, Aval, OpDef, get_op

__all__ = ["OPS", "Aval", "OpDef", "get_op"]
