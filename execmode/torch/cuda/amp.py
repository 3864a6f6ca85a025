"""``torch.cuda.amp``: PyTorch's older home of ``autocast`` and ``GradScaler``
(``execmode.torch.amp``); here ``autocast()`` defaults to ``device_type="cuda"``."""

from __future__ import annotations

from ..amp import GradScaler
from ..amp import autocast as _autocast


class autocast(_autocast):  # noqa: N801 - PyTorch's name
    """``torch.cuda.amp.autocast(enabled=True, dtype=None, cache_enabled=True)``: see
    ``execmode.torch.amp.autocast`` (the block keeps computing in float32)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


__all__ = ["GradScaler", "autocast"]
