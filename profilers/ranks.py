"""The sessions of a distributed run: one per rank, in one folder.

``execmode launch -n N --profile SCRIPT`` records every rank (``rank0.emsession``,
``rank1.emsession`` ... in a run folder, execmode/distributed/rank_runner.py), and each
session's meta says which rank it was (``rank``: rank, world size, local rank, from
torchrun's variables or the MPI launcher's). ``execmode report FOLDER`` merges them into
one Chrome trace, a process per rank (exporters/chrome.py's ``export_chrome_ranks``).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import NamedTuple

from execmode.profilers import store_queries
from execmode.profilers.store import SESSION_SUFFIX
from execmode.profilers.straggler import straggler_line  # noqa: F401 - the report's

RANKS_DIR_ENV = "EXECMODE_RANKS_DIR"  # set by execmode launch --profile for its ranks
_RANK_FILE = re.compile(rf"rank(\d+){re.escape(SESSION_SUFFIX)}")


def rank_of_process(environ=None) -> dict | None:
    """``{"rank", "world_size", "local_rank"}`` of this process when a launcher said
    (torchrun's RANK/WORLD_SIZE, or MPICH's or Open MPI's variables), else None."""
    from execmode.distributed.rank_runner import torchrun_variables

    env = os.environ if environ is None else environ
    found = {k: env[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK") if k in env} \
        if "RANK" in env and "WORLD_SIZE" in env else torchrun_variables(env)
    try:
        rank, size = int(found["RANK"]), int(found["WORLD_SIZE"])
        local = int(found.get("LOCAL_RANK", rank))
    except (KeyError, ValueError):
        return None
    return {"rank": rank, "world_size": size, "local_rank": local}


def rank_session_path(folder: str | os.PathLike, rank: int) -> Path:
    return Path(folder) / f"rank{int(rank)}{SESSION_SUFFIX}"


def rank_sessions(folder: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(rank, path)`` of the rank sessions in ``folder``, by rank."""
    found = []
    for path in Path(folder).iterdir():
        match = _RANK_FILE.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def new_run_folder(script: str, directory: str | os.PathLike | None = None) -> Path:
    """A fresh ``SCRIPT-DATE-TIME-PID-ranks`` folder in ``directory`` (default: the
    session folder), created."""
    from execmode.profilers.session_dir import session_dir

    parent = Path(directory) if directory is not None else session_dir()
    stem = Path(script).stem or "script"
    folder = parent / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-ranks"
    folder.mkdir(parents=True, exist_ok=False)
    return folder


def launcher_run_folder(script: str, directory: str | os.PathLike | None = None) -> Path:
    """The run folder that every rank started by one launcher on this host shares, created
    if missing (``mpiexec -n N execmode profile SCRIPT``: each rank's ``execmode profile``
    records into it, as ``execmode launch --profile``'s ranks do). Named from the launcher
    process that started the ranks (their common parent: MPICH's proxy, Open MPI's daemon,
    torchrun's agent): its pid and its start time, which no other process shares."""
    from execmode.profilers.session_dir import session_dir

    parent = Path(directory) if directory is not None else session_dir()
    launcher = os.getppid()
    started = _process_start(launcher)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(started)) if started else "0"
    stem = Path(script).stem or "script"
    folder = parent / f"{stem}-{stamp}-{launcher}-ranks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def launcher_rank_session(script: str) -> Path | None:
    """Under a launcher of several ranks (``mpiexec -n N execmode profile|run SCRIPT``,
    torchrun): this rank's session in the run folder the ranks share, so that ``execmode
    report`` and ``open`` merge them as they do ``execmode launch --profile``'s; None for
    one process. Raises OSError when the folder cannot be made."""
    rank = rank_of_process()
    if rank is None or rank["world_size"] < 2:
        return None
    return rank_session_path(launcher_run_folder(script), rank["rank"])


def _process_start(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), from /proc; None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")


# The collectives' op names (execmode/distributed/exchange.py records them as ops).
COLLECTIVES = ("all_reduce", "all_reduce_wait", "broadcast", "all_gather",
               "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "barrier")
_WAITED = re.compile(r"(?:^|, )waited_us=([0-9.]+)")


_NUMBER = re.compile(r"(?:^|, )collective=(\d+)")
_NONBLOCKING = "started=nonblocking"  # a bucket's launch: its wait is its all_reduce_wait's


class CollectiveWaits(NamedTuple):
    calls: int        # collectives the rank ran
    waited_ns: int    # of their time, waiting for the other ranks to arrive
    total_ns: int     # their time in all
    # (collective's number in the group, wait ns) of each collective with a wait of its
    # own: how the straggler is found, collective by collective (straggler.py)
    by_collective: tuple = ()


def collective_waits(session) -> CollectiveWaits:
    """How long a rank's collectives took, and how much of it the rank waited for the
    others (their header exchange: ``waited_us`` in each op's attrs)."""
    rows = store_queries.op_spans(session._query, COLLECTIVES)
    waited, total, by_collective = 0, 0, []
    for position, (_, dur, attrs) in enumerate(rows):
        wait = waited_ns(attrs)
        waited, total = waited + wait, total + int(dur or 0)
        if _NONBLOCKING not in (attrs or ""):
            by_collective.append((_collective_number(attrs, position), wait))
    return CollectiveWaits(len(rows), waited, total, tuple(by_collective))


def waited_ns(attrs: str | None) -> int:
    """A collective's wait for the other ranks, from its attrs (0 when not stated)."""
    match = _WAITED.search(attrs or "")
    return int(float(match.group(1)) * 1000) if match else 0


def _collective_number(attrs: str | None, position: int) -> int:
    # Sessions recorded before collectives carried their number: their order, which every
    # rank shares when every rank recorded all of them.
    match = _NUMBER.search(attrs or "")
    return int(match.group(1)) if match else position
