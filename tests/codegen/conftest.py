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

