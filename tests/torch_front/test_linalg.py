"""``torch.linalg``'s decompositions and solvers on em.linalg: PyTorch's names and
arguments, NumPy's answers, and what is not supported refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import execmode.torch as torch
from execmode.errors import ArgumentError

A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]])  # symmetric, SPD
B = np.array([[1.0, 2.0], [0.0, 1.0], [3.0, -1.0]])


def test_the_solvers_and_decompositions_give_numpys_answers():
    a, b = torch.tensor(A), torch.tensor(B)
    np.testing.assert_allclose(torch.linalg.inv(a).numpy(), np.linalg.inv(A), rtol=1e-12)
    np.testing.assert_allclose(torch.linalg.det(a).item(), np.linalg.det(A), rtol=1e-12)
    np.testing.assert_allclose(torch.linalg.solve(a, b).numpy(), np.linalg.solve(A, B),
                               rtol=1e-12)
    sign, logabsdet = torch.linalg.slogdet(a)
    assert sign.item() == 1.0 and np.isclose(logabsdet.item(), np.log(np.linalg.det(A)))
    low = torch.linalg.cholesky(a).numpy()
    np.testing.assert_allclose(low @ low.T, A, rtol=1e-12)
    q, r = torch.linalg.qr(a)
    np.testing.assert_allclose(q.numpy() @ r.numpy(), A, rtol=1e-12)
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ vh.numpy(), A, rtol=1e-12)
    np.testing.assert_allclose(torch.linalg.eigvalsh(a).numpy(), np.linalg.eigvalsh(A),
                               rtol=1e-12)
    assert torch.linalg.matrix_rank(a).item() == 3
    np.testing.assert_allclose(torch.linalg.matrix_power(a, 3).numpy(), A @ A @ A,
                               rtol=1e-12)


def test_what_is_not_supported_is_refused_by_name():
    a = torch.tensor(A)
    with pytest.raises(ArgumentError, match=r"solve\(left=\)"):
        torch.linalg.solve(a, torch.tensor(B), left=False)
    with pytest.raises(ArgumentError, match=r"eigh\(UPLO=\)"):
        torch.linalg.eigh(a, UPLO="U")
    with pytest.raises(AttributeError, match="torch.linalg.lstsq: .* has cholesky, det"):
        torch.linalg.lstsq  # noqa: B018
