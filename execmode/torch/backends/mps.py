"""``torch.backends.mps``: Apple's GPUs are not supported by execmode."""

from __future__ import annotations


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
