"""mpi4py, imported on first use: execmode never imports it when it loads, and a machine
without it gets one message saying what to install."""

from __future__ import annotations

import importlib
import importlib.util

from .errors import DistributedError

INSTALL_HINT = "pip install 'execmode[distributed]'"


def installed() -> bool:
    """Whether mpi4py can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):
        return False


_loaded = None  # mpi4py.MPI once imported: every collective asks for it


def load():
    """``mpi4py.MPI`` (which starts MPI in this process), or an error naming the install."""
    global _loaded
    if _loaded is not None:
        return _loaded
    try:
        _loaded = importlib.import_module("mpi4py.MPI")
        return _loaded
    except ImportError as e:  # mpi4py missing, or no MPI library for it to load
        raise DistributedError(
            f"execmode.distributed needs mpi4py and an MPI library: {INSTALL_HINT} "
            f"(installs mpi4py and the mpich wheel); the import said: {e}") from None
    except RuntimeError as e:  # mpi4py found no usable MPI library
        raise DistributedError(
            f"execmode.distributed: mpi4py could not load an MPI library ({e}); "
            f"{INSTALL_HINT} installs the mpich wheel") from None
