"""``torch.linalg``: the norms (``norm``, ``vector_norm``, ``matrix_norm``), as
``Tensor.norm`` computes them. Decompositions and solvers (``inv``, ``solve``, ``svd``,
``qr``, ``cholesky``, ``eigh`` ...) are not supported: execmode has no such ops."""

from __future__ import annotations

from ..errors import ArgumentError


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The ``ord``-norm of ``x`` flattened, or over ``dim``."""
    return x.norm(ord, dim=dim, keepdim=keepdim, dtype=dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002, N803
    """The Frobenius norm of the matrices over ``dim`` (other orders are refused)."""
    if ord != "fro":
        raise ArgumentError(f"torch.linalg.matrix_norm(ord={ord!r}) is not supported; "
                            "ord='fro' is")
    return A.norm("fro", dim=dim, keepdim=keepdim, dtype=dtype)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002, N803
    """``vector_norm`` over a 1-D ``dim`` (or of a flattened tensor without ``ord``), the
    Frobenius norm of matrices otherwise (PyTorch's ``torch.linalg.norm`` defaults)."""
    if ord is None:
        return A.norm(2, dim=dim, keepdim=keepdim, dtype=dtype)
    if isinstance(dim, int) or (dim is None and A.ndim == 1):
        return vector_norm(A, ord, dim, keepdim, dtype=dtype)
    if ord == "fro":
        return matrix_norm(A, ord, (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    raise ArgumentError(f"torch.linalg.norm(ord={ord!r}) over matrices is not supported; "
                        "ord='fro' or a vector norm over one dim is")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise AttributeError(f"torch.linalg.{name}: PyTorch's torch.linalg.{name} is not "
                         "supported by execmode (it has no matrix decompositions or "
                         "solvers); torch.linalg has norm, vector_norm and matrix_norm",
                         name=name, obj=None)


__all__ = ["matrix_norm", "norm", "vector_norm"]
