"""``torch.backends``: the switches PyTorch programs set, answered honestly for execmode.

* ``cudnn``: execmode does not call cuDNN (convolution is im2col + matmul): its
  ``is_available()`` is False; ``benchmark``, ``deterministic``, ``allow_tf32`` and
  ``enabled`` may be set and change nothing.
* ``cuda``: ``matmul.allow_tf32`` may be set and changes nothing (float32 matmuls stay
  float32); ``is_built()`` says whether CuPy is importable.
* ``mps``: not supported (``is_available()`` and ``is_built()`` are False).
"""

from __future__ import annotations

from . import cuda, cudnn, mps  # noqa: F401

__all__ = ["cuda", "cudnn", "mps"]
