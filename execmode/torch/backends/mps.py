"""``torch.backends.mps``: Apple's GPUs are not supported by execmode."""

from __future__ import annotations


def is_available() -> bool:
    """False: execmode does not run on Apple's GPUs."""
    return False


def is_built() -> bool:
    """False: execmode has no MPS backend."""
    return False
