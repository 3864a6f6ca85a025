"""``torch.distributed``: execmode's collectives (``execmode.distributed``) under
PyTorch's names. ``init_process_group(backend="mpi")`` (``"gloo"`` means the same; NCCL is
not built yet) joins the processes that ``execmode launch -n N`` or ``mpiexec -n N``
started; the collectives work in place on CPU tensors, as PyTorch's.

``is_available()`` says whether mpi4py is installed (``pip install 'execmode[distributed]'``);
``is_initialized()`` is False until ``init_process_group``, so a program that checks first
(or reads ``RANK``, as nanoGPT's ``train.py`` does) still runs as one process when nothing
launched it. A name of PyTorch's that execmode has not built yet says so.
"""

from __future__ import annotations

import os

from ..distributed import (
    DistributedError,
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    barrier,
    broadcast,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_initialized,
    reduce_scatter,
    reduce_scatter_tensor,
)


class Backend:
    """The backend names (``Backend.MPI`` ...); execmode runs CPU tensors over MPI."""

    MPI, GLOO, NCCL = "mpi", "gloo", "nccl"


def is_torchelastic_launched() -> bool:
    """Whether torchrun started this process (execmode's launcher is ``execmode launch``)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_mpi_available() -> bool:
    """Whether the MPI backend can run (mpi4py installed)."""
    return is_available()


def is_nccl_available() -> bool:
    """False: NCCL (collectives on GPUs) is not built yet."""
    return False


def is_gloo_available() -> bool:
    """Whether ``backend="gloo"`` works: it runs over MPI here."""
    return is_available()


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise AttributeError(f"torch.distributed.{name} is not built yet in execmode: it has "
                         "init_process_group, the collectives all_reduce, broadcast, "
                         "all_gather, reduce_scatter and barrier (docs/distributed.md)",
                         name=name, obj=None)


__all__ = ["Backend", "DistributedError", "ReduceOp", "Work", "all_gather",
           "all_gather_into_tensor", "all_reduce", "barrier", "broadcast",
           "destroy_process_group", "get_backend", "get_rank", "get_world_size", "group",
           "init_process_group", "is_available", "is_gloo_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "is_torchelastic_launched",
           "reduce_scatter", "reduce_scatter_tensor"]
