"""Kernel tests compile into a private cache directory (never the user's), shared by the
whole session so that repeated sources hit the disk cache as they would in real use.

Tests import in importlib mode: this folder goes on sys.path so that its tests can
``import kernel_helpers`` (as tests/conftest.py does for tests/helpers.py).
"""

from __future__ import annotations

import os
import sys

import pytest

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(scope="session", autouse=True)
def kernel_cache_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("kernel-cache")
    previous = os.environ.get("EXECMODE_CACHE_DIR")
    os.environ["EXECMODE_CACHE_DIR"] = str(path)
    yield str(path)
    if previous is None:
        os.environ.pop("EXECMODE_CACHE_DIR", None)
    else:
        os.environ["EXECMODE_CACHE_DIR"] = previous


@pytest.fixture(scope="module")
def c_operators():
    """The C operators on Tensor for the module that asks (``pytestmark =
    pytest.mark.usefixtures("c_operators")``); the class as it was afterwards."""
    import numpy as np

    import execmode as em
    from execmode._tensor import Tensor
    from execmode.codegen import eager_operators

    em.tensor(0.0)  # the engine loaded: its operators, not _tensor.py's placeholders, saved
    before = {name: Tensor.__dict__[name] for name in eager_operators.operator_names()}
    if not eager_operators.install(Tensor, native=True):
        pytest.skip(f"no eager-operator extension: {eager_operators.extension_status()['reason']}")
    np_errors = np.seterr(all="ignore")  # the expected values (1/0, inf - inf) would warn
    yield
    np.seterr(**np_errors)
    for name, value in before.items():
        setattr(Tensor, name, value)
