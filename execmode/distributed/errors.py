"""The error of the distributed package (its other errors are the engine's: ShapeError for
ranks whose tensors differ, ArgumentError, DTypeError)."""

from __future__ import annotations

from ..errors import ExecmodeError


class DistributedError(ExecmodeError, RuntimeError):
    """A collective or a process group used wrongly, or a group that cannot start."""
