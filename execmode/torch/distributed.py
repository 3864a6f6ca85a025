"""``torch.distributed``: execmode.torch runs one process. Programs that import the
distributed names and use them only when launched by ``torchrun`` (nanoGPT's ``train.py``:
``ddp = int(os.environ.get('RANK', -1)) != -1``) import and run single-process; calling
one of them says that multi-process training is not supported.

``is_available()`` and ``is_initialized()`` answer False, as PyTorch's do on a build
without distributed support, so code that checks first takes its single-process path.
"""

from __future__ import annotations

from ..errors import ArgumentError

_REFUSAL = ("multi-process training is not supported by execmode.torch: run the program "
            "as a single process (without torchrun / a RANK environment variable)")


def is_available() -> bool:
    """False: execmode.torch has no process groups."""
    return False


def is_initialized() -> bool:
    """False: no process group is ever initialized."""
    return False


def is_torchelastic_launched() -> bool:
    """False: execmode.torch is never launched by torchrun."""
    return False


def get_rank(group=None) -> int:
    """``torch.distributed.get_rank``: refused (no process group)."""
    raise ArgumentError(f"torch.distributed.get_rank: {_REFUSAL}")


def get_world_size(group=None) -> int:
    """``torch.distributed.get_world_size``: refused (no process group)."""
    raise ArgumentError(f"torch.distributed.get_world_size: {_REFUSAL}")


def init_process_group(*args, **kwargs) -> None:
    """``torch.distributed.init_process_group``: refused (one process only)."""
    raise ArgumentError(f"torch.distributed.init_process_group: {_REFUSAL}")


def destroy_process_group(*args, **kwargs) -> None:
    """``torch.distributed.destroy_process_group``: refused (one process only)."""
    raise ArgumentError(f"torch.distributed.destroy_process_group: {_REFUSAL}")


def barrier(*args, **kwargs) -> None:
    """``torch.distributed.barrier``: refused (one process only)."""
    raise ArgumentError(f"torch.distributed.barrier: {_REFUSAL}")


def all_reduce(*args, **kwargs) -> None:
    """``torch.distributed.all_reduce``: refused (one process only)."""
    raise ArgumentError(f"torch.distributed.all_reduce: {_REFUSAL}")


class ReduceOp:
    """The reduction names (``ReduceOp.SUM`` ...), for code that names them up front."""

    SUM, PRODUCT, MIN, MAX, AVG = "sum", "product", "min", "max", "avg"


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise AttributeError(f"torch.distributed.{name}: {_REFUSAL}", name=name, obj=None)


__all__ = ["ReduceOp", "all_reduce", "barrier", "destroy_process_group", "get_rank",
           "get_world_size", "init_process_group", "is_available", "is_initialized",
           "is_torchelastic_launched"]
