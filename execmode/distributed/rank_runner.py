"""One rank of ``execmode launch``: ``python -m execmode.distributed.rank_runner SCRIPT
ARGS`` under mpiexec. It sets torchrun's variables from the MPI launcher's (MPICH's
``PMI_*``, Open MPI's ``OMPI_COMM_WORLD_*``), runs the script as ``__main__``
(``script_runner``; with ``--profile``, recorded into the run folder as
``rankN.emsession``), and if the script raised while MPI was up, aborts the whole job
(``MPI_Abort``, as ``python -m mpi4py`` does) so the other ranks do not wait for it in a
collective."""

from __future__ import annotations

import os
import sys
import time

# (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) as each launcher names them.
_LAUNCHERS = (
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),  # MPICH (hydra)
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"),                                   # Open MPI
)


def torchrun_variables(environ) -> dict[str, str]:
    """``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE`` from the launcher's
    variables in ``environ`` (empty when no known launcher set them)."""
    for rank, size, local_rank, local_size in _LAUNCHERS:
        if rank in environ and size in environ:
            return {"RANK": environ[rank], "WORLD_SIZE": environ[size],
                    "LOCAL_RANK": environ.get(local_rank, environ[rank]),
                    "LOCAL_WORLD_SIZE": environ.get(local_size, environ[size])}
    return {}


def _run(script: str, args: list[str], rank: str):
    """Run the script; under ``execmode launch --profile`` (``EXECMODE_RANKS_DIR``), with
    a recorder writing this rank's session into the run folder (profilers/ranks.py)."""
    condition = os.environ.get("EXECMODE_RANK_BREAK")
    if condition:  # --break nan: the first rank to make one stops every rank (stop_on_nan.py)
        from .. import instrument
        from .stop_on_nan import NaNWatch

        instrument.add_listener(NaNWatch(condition, int(rank)))
    folder = os.environ.get("EXECMODE_RANKS_DIR")
    if not folder:
        from ..script_runner import run_script

        return run_script(script, args)
    from execmode.profilers.ranks import rank_session_path
    from execmode.profilers.runner import record_script

    return record_script(script, args, session=rank_session_path(folder, int(rank)))


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m execmode.distributed.rank_runner SCRIPT [ARGS...] (under "
              "mpiexec; execmode launch runs it)", file=sys.stderr)
        return 2
    found = torchrun_variables(os.environ)
    if not found:  # an unknown launcher: ask MPI itself (this starts it)
        from . import _mpi

        world = _mpi.load().COMM_WORLD
        found = {"RANK": str(world.Get_rank()), "WORLD_SIZE": str(world.Get_size()),
                 "LOCAL_RANK": str(world.Get_rank()), "LOCAL_WORLD_SIZE": str(world.Get_size())}
    os.environ.update(found)
    ended = _run(argv[0], argv[1:], found["RANK"])
    if ended.kind == "exception" and "mpi4py.MPI" in sys.modules:
        mpi = sys.modules["mpi4py.MPI"]
        if mpi.Is_initialized() and not mpi.Is_finalized():
            print(f"execmode launch: rank {found['RANK']} raised; ending every rank",
                  file=sys.stderr, flush=True)
            # The launcher forwards this process's stderr on its own time and MPI_Abort
            # ends the job at once: without a pause the line above can be lost (it was,
            # now and then, on a busy machine); with --break, the others also say, in
            # their collective, why they stop.
            time.sleep(1.0 if os.environ.get("EXECMODE_RANK_BREAK") else 0.2)
            mpi.COMM_WORLD.Abort(ended.code)
    return ended.code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
