"""``torch.linalg``: the norms (``norm``, ``vector_norm``, ``matrix_norm``), as
``Tensor.norm`` computes them, and the decompositions and solvers of ``em.linalg`` under
PyTorch's names and arguments (``inv``, ``det``, ``slogdet``, ``solve``, ``cholesky``,
``qr``, ``svd``, ``svdvals``, ``eigh``, ``eigvalsh``, ``pinv``, ``matrix_rank``,
``matrix_power``): LAPACK through NumPy (or CuPy), with PyTorch's gradients for real
matrices (``ops/linalg_grads.py``). Other names are refused with that list."""

from __future__ import annotations

from .. import linalg as _em
from ..errors import ArgumentError


def _no(name: str, value, default) -> None:
    if value != default:
        raise ArgumentError(f"torch.linalg.{name}: {value!r} is not supported (only "
                            f"{default!r})")


def inv(A, *, out=None):  # noqa: N803 - PyTorch's names
    _no("inv(out=)", out, None)
    return _em.inv(A)


def det(A, *, out=None):  # noqa: N803
    _no("det(out=)", out, None)
    return _em.det(A)


def slogdet(A, *, out=None):  # noqa: N803
    _no("slogdet(out=)", out, None)
    return _em.slogdet(A)


def solve(A, B, *, left=True, out=None):  # noqa: N803
    _no("solve(left=)", left, True)
    _no("solve(out=)", out, None)
    return _em.solve(A, B)


def cholesky(A, *, upper=False, out=None):  # noqa: N803
    _no("cholesky(out=)", out, None)
    return _em.cholesky(A, upper=upper)


def qr(A, mode="reduced", *, out=None):  # noqa: N803
    _no("qr(out=)", out, None)
    return _em.qr(A, mode=mode)


def svd(A, full_matrices=True, *, driver=None, out=None):  # noqa: N803
    _no("svd(driver=)", driver, None)
    _no("svd(out=)", out, None)
    return _em.svd(A, full_matrices=full_matrices)


def svdvals(A, *, driver=None, out=None):  # noqa: N803
    _no("svdvals(driver=)", driver, None)
    _no("svdvals(out=)", out, None)
    return _em.svdvals(A)


def eigh(A, UPLO="L", *, out=None):  # noqa: N803
    _no("eigh(UPLO=)", UPLO, "L")
    _no("eigh(out=)", out, None)
    return _em.eigh(A)


def eigvalsh(A, UPLO="L", *, out=None):  # noqa: N803
    _no("eigvalsh(UPLO=)", UPLO, "L")
    _no("eigvalsh(out=)", out, None)
    return _em.eigvalsh(A)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):  # noqa: N803
    _no("pinv(atol=)", atol, None)
    _no("pinv(hermitian=)", hermitian, False)
    _no("pinv(out=)", out, None)
    return _em.pinv(A, rtol=rtol)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):  # noqa: N803
    _no("matrix_rank(atol=)", atol, None)
    _no("matrix_rank(hermitian=)", hermitian, False)
    _no("matrix_rank(out=)", out, None)
    return _em.matrix_rank(A, rtol=rtol)


def matrix_power(A, n, *, out=None):  # noqa: N803
    _no("matrix_power(out=)", out, None)
    return _em.matrix_power(A, n)


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
                         f"supported by execmode; torch.linalg has {', '.join(__all__)}",
                         name=name, obj=None)


__all__ = ["cholesky", "det", "eigh", "eigvalsh", "inv", "matrix_norm", "matrix_power",
           "matrix_rank", "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals",
           "vector_norm"]
