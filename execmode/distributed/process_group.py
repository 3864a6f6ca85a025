"""The process group: which processes train together, and this one's place among them.

``init_process_group`` joins the processes that ``mpiexec`` (or ``execmode launch``)
started into one group over MPI's world communicator. mpi4py is imported there, at the
first call, never when execmode loads (``_mpi.load``). A rank's number is MPI's, or the
``RANK`` environment variable where it is set (the processes are then ordered by it, as
torchrun numbers them); ``WORLD_SIZE`` (or ``world_size=``) must agree with the number
of processes MPI started, or the call says where the two disagree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..errors import ArgumentError
from . import _mpi
from .errors import DistributedError

# Backends that run CPU tensors over MPI. "gloo" is PyTorch's CPU backend: a program that
# asks for it gets MPI's collectives, which compute the same results.
CPU_BACKENDS = ("mpi", "gloo")


@dataclass
class ProcessGroup:
    """A started group: its MPI communicator, this process's rank and the group's size."""

    comm: object
    rank: int
    size: int
    backend: str
    timeout_s: float = 1800.0   # how long a collective waits for every rank to arrive
    sequence: int = 0           # collectives started: every rank counts them alike
    one_node: bool = True       # every rank shares this one's memory (one machine)
    # What exchange.agree sends, by (dtype, shape, root), and the array it receives into.
    _headers: dict = field(default_factory=dict, repr=False, compare=False)
    _extremes: np.ndarray | None = field(default=None, repr=False, compare=False)
    # The last all_reduce's short path (exchange.repeated_all_reduce): (dtype, shape, op,
    # header, header sent, ReduceOp, MPI op).
    last_all_reduce: tuple | None = field(default=None, repr=False, compare=False)
    # em.jit guards a group by identity only: ``sequence`` moves at every collective (a
    # graph's too), and rank and size are fixed for the group's life, a new group being
    # a new object. Guarded by value, a jitted step that can reach the group (through a
    # DistributedDataParallel) would read as writing it and re-run its Python each call.
    _em_guard_identity_only: ClassVar[bool] = True

    def __repr__(self) -> str:
        return f"<ProcessGroup backend={self.backend} rank={self.rank} size={self.size}>"

    def header_for(self, key: tuple, make) -> tuple:
        """The header exchange.agree sends for ``key`` (dtype, shape, root), made once by
        ``make()``: a training loop's collectives repeat a few shapes, and building the
        header's array from a list at every call was a good part of a small all_reduce's
        own time. At most _MAX_HEADERS are kept."""
        pair = self._headers.get(key)
        if pair is None:
            if len(self._headers) >= _MAX_HEADERS:
                self._headers.clear()
            pair = self._headers[key] = make()
        return pair

    def known_header(self, key: tuple) -> tuple | None:
        """The header :meth:`header_for` made for ``key`` (its arguments were checked
        then), or None."""
        return self._headers.get(key)

    def header_extremes(self, n: int) -> np.ndarray:
        """The int64 array of ``n`` a blocking header exchange receives into, made once
        (each exchange completes before the next starts; one thread at a time, as MPI's
        collectives on one communicator must be called anyway)."""
        if self._extremes is None or self._extremes.size != n:
            self._extremes = np.empty(n, np.int64)
        return self._extremes


_MAX_HEADERS = 256


class _Group:
    """``dist.group.WORLD``: the default group, whichever group is initialized now."""

    WORLD = None  # set while a group is initialized


group = _GROUP = _Group()
_default: ProcessGroup | None = None


def is_available() -> bool:
    """Whether collectives can run here: mpi4py is installed (it is not imported)."""
    return _mpi.installed()


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` has not)."""
    return _default is not None


def init_process_group(backend: str | None = None, init_method=None, timeout=None,
                       world_size: int = -1, rank: int = -1, store=None, group_name: str = "",
                       pg_options=None, device_id=None) -> None:
    """Join this process to the group of processes ``mpiexec -n N`` started.

    ``backend`` is ``"mpi"`` (the default; ``"gloo"``, PyTorch's CPU backend, means the
    same here). ``"nccl"`` (GPU collectives) is not built yet and says so. The rank and
    world size come from MPI; ``RANK``/``WORLD_SIZE`` (or ``rank=``/``world_size=``), when
    given, must describe the same processes, and then decide the ranks' order.
    ``timeout`` (a ``datetime.timedelta`` or seconds; default 30 minutes, as PyTorch's,
    or ``EXECMODE_COLLECTIVE_TIMEOUT`` seconds) is how long a collective waits for every
    rank to arrive before it raises, naming the ranks that did not. ``init_method`` and
    ``store`` are accepted and unused: MPI's launcher already connected the processes.
    """
    global _default
    if _default is not None:
        raise DistributedError("init_process_group: the default process group is already "
                               "initialized (call destroy_process_group first)")
    name = "mpi" if backend is None else str(backend).lower()
    if name == "nccl" or name.startswith("cuda:"):
        raise DistributedError(
            f"init_process_group(backend={backend!r}): NCCL (collectives on GPUs) is not "
            "built yet in execmode; use backend='mpi' with CPU tensors (docs/distributed.md)")
    if name not in CPU_BACKENDS:
        raise ArgumentError(f"init_process_group: unknown backend {backend!r}; execmode has "
                            "'mpi' ('gloo' is taken as 'mpi')")
    mpi = _mpi.load()
    world = mpi.COMM_WORLD
    wanted_size = _number("world_size", world_size, "WORLD_SIZE")
    wanted_rank = _number("rank", rank, "RANK")
    if wanted_size is not None and wanted_size != world.Get_size():
        raise DistributedError(
            f"init_process_group: world size {wanted_size} was asked for (world_size= or "
            f"WORLD_SIZE) but MPI started {world.Get_size()} process(es); launch with "
            f"execmode launch -n {wanted_size} (or mpiexec -n {wanted_size}), not torchrun")
    if wanted_rank is not None and not 0 <= wanted_rank < world.Get_size():
        raise DistributedError(f"init_process_group: rank {wanted_rank} (rank= or RANK) is "
                               f"outside 0..{world.Get_size() - 1}")
    # Split (a collective) orders the new communicator by the requested ranks; every
    # process takes part, so a rank asked for twice is found on all of them alike.
    key = world.Get_rank() if wanted_rank is None else wanted_rank
    keys = np.empty(world.Get_size(), np.int64)
    world.Allgather(np.array([key], np.int64), keys)  # buffers: nothing is pickled
    keys = keys.tolist()
    if sorted(keys) != list(range(world.Get_size())):
        raise DistributedError(f"init_process_group: the processes asked for ranks {keys} "
                               f"(in MPI's order): each of 0..{world.Get_size() - 1} once")
    comm = world.Split(0, key)
    # The ranks that share this one's memory (MPI-3's shared-memory split, a collective):
    # all of them, on one machine.
    shared = comm.Split_type(mpi.COMM_TYPE_SHARED)
    one_node = shared.Get_size() == comm.Get_size()
    shared.Free()
    _default = ProcessGroup(comm, comm.Get_rank(), comm.Get_size(), name,
                            _timeout_seconds(timeout), one_node=one_node)
    _GROUP.WORLD = _default


def _timeout_seconds(timeout) -> float:
    """``timeout=`` (a timedelta or seconds), else EXECMODE_COLLECTIVE_TIMEOUT, else 30
    minutes."""
    if timeout is None:
        text = os.environ.get("EXECMODE_COLLECTIVE_TIMEOUT", "").strip()
        if not text:
            return 1800.0
        try:
            timeout = float(text)
        except ValueError:
            raise ArgumentError(f"EXECMODE_COLLECTIVE_TIMEOUT={text!r}: seconds, a "
                                "number") from None
    seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        raise ArgumentError(f"init_process_group: timeout must be a positive timedelta or "
                            f"number of seconds, got {timeout!r}")
    return float(seconds)


def _number(keyword: str, given: int, variable: str) -> int | None:
    """The value of ``rank=``/``world_size=`` if given (not -1), else of the environment
    variable if set, else None."""
    if given is not None and given != -1:
        return int(given)
    text = os.environ.get(variable)
    if text is None or text.strip() == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise DistributedError(f"init_process_group: {variable}={text!r} is not an "
                               "integer") from None


def destroy_process_group(group=None) -> None:
    """Leave the group: its communicator is freed. MPI itself stays up until the process
    ends (it cannot start twice), so a later ``init_process_group`` works."""
    global _default
    current = default_group("destroy_process_group")
    _default = None
    _GROUP.WORLD = None
    current.comm.Free()


def default_group(caller: str, given=None) -> ProcessGroup:
    """The initialized group (``given`` may only name it), or the error PyTorch gives."""
    if _default is None:
        raise DistributedError(f"{caller}: the default process group has not been "
                               "initialized; call init_process_group() first (under "
                               "execmode launch -n N or mpiexec -n N)")
    if given is not None and given is not _default:
        raise ArgumentError(f"{caller}: only the default group (group=None or "
                            "dist.group.WORLD) is supported; new_group is not built yet")
    return _default


def get_rank(group=None) -> int:
    """This process's rank in the group (0 .. world size - 1)."""
    return default_group("get_rank", group).rank


def get_world_size(group=None) -> int:
    """The number of processes in the group."""
    return default_group("get_world_size", group).size


def get_backend(group=None) -> str:
    """The backend the group was started with."""
    return default_group("get_backend", group).backend
