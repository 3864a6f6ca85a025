"""Data-parallel training across processes: collectives on CPU tensors over MPI.

    import execmode.distributed as dist

    dist.init_process_group("mpi")          # under execmode launch -n 2 (or mpiexec -n 2)
    x = em.ones(4) * (dist.get_rank() + 1)
    dist.all_reduce(x)                      # in place: every rank holds 1 + 2 = 3
    dist.destroy_process_group()

The names and semantics are ``torch.distributed``'s (``execmode.torch.distributed`` is
this module): ``init_process_group``, ``is_initialized``, ``get_rank``,
``get_world_size``, ``all_reduce`` with ``ReduceOp`` SUM, AVG, PRODUCT, MIN, MAX,
``broadcast``, ``all_gather`` (and ``all_gather_into_tensor``), ``reduce_scatter`` (and
``reduce_scatter_tensor``), ``barrier``, ``destroy_process_group``. MPI runs them
(mpi4py, imported at ``init_process_group``, never when execmode loads; without it the
call says ``pip install 'execmode[distributed]'``). A rank whose tensor's shape or dtype
differs from the others' makes every rank raise an error naming both shapes.
``execmode launch -n N SCRIPT`` starts the processes. Under ``em.jit`` collectives are
graph nodes, and a training step through DistributedDataParallel is one graph with a node
per gradient bucket. docs/distributed.md says what works and what is not built yet (NCCL
on GPUs, ranks on several hosts ...).
"""

from __future__ import annotations

import importlib as _importlib

# name -> the module that defines it. Loaded on first use (PEP 562), so that the command
# line, which imports launch_cli.py from here, loads neither NumPy nor the engine.
_WHERE = {
    **dict.fromkeys(("ReduceOp", "Work", "all_gather", "all_gather_into_tensor", "all_reduce",
                     "barrier", "broadcast", "reduce_scatter", "reduce_scatter_tensor"),
                    "collectives"),
    "DistributedError": "errors",
    **dict.fromkeys(("ProcessGroup", "destroy_process_group",
                     "get_backend", "get_rank", "get_world_size", "group",
                     "init_process_group", "is_available", "is_initialized"),
                    "process_group"),
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
