"""``torch.backends.cudnn``: execmode does not use cuDNN. The flags may be set (programs
set ``benchmark = True``); they change nothing."""

from __future__ import annotations

enabled = False
benchmark = False
deterministic = False
allow_tf32 = False


def is_available() -> bool:
    """False: execmode's convolutions are im2col + matmul, not cuDNN's."""
    return False


def version():
    """None: no cuDNN is used."""
    return None
