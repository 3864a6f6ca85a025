"""The triangles of the last two axes: tril, triu, as ``ops/triangular.py``."""

from __future__ import annotations

from ..dispatch import apply
from ..errors import ShapeError
from ..op_errors import op_error
from ..ops import OPS
from .arguments import _int_arg, _tensor_arg


def _triangle(name):
    def fn(x, k=0, *, diagonal=None):
        x = _tensor_arg(name, x)
        if diagonal is not None:  # PyTorch's keyword
            k = diagonal
        k = _int_arg(name, "k", k, (x,))
        if x.ndim < 2:
            raise op_error(ShapeError, name, (x,), "needs a tensor of rank >= 2")
        return apply(OPS[name], x, k=k)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"The {'lower' if name == 'tril' else 'upper'} triangle of the last two "
                  "axes (``k``, PyTorch's ``diagonal``, shifts the diagonal), zeros "
                  "elsewhere.")
    return fn


tril = _triangle("tril")
triu = _triangle("triu")
