"""Which kernel backend is active, and why: for reports, the TUI and ``execmode doctor``.

``backend_status()`` answers without compiling anything but the one-time compiler probe
(a tiny test kernel, ~50 ms, cached per ``CC`` value). The factory records here what it
actually did for the last graph (e.g. fell back to the interpreter after a compile error),
so the answer is about this process, not a guess.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from .toolchain import NoCompiler, get_toolchain

# What the last graph's CPU kernels ran on, when it differs from what the probe predicts.
_last_fallback: dict = {}


@dataclass
class BackendStatus:
    cpu: str                  # "c" | "interpreter"
    cpu_reason: str
    compiler: str = ""
    flags: tuple = ()
    openmp: bool = False
    threads: int = 1
    cache_dir: str = ""
    gpu: str = "unavailable"  # "cuda" | "unavailable"
    gpu_reason: str = ""
    threads_note: str = ""    # why fewer threads than asked (a fork after threads ran)

    def __str__(self) -> str:
        if self.cpu == "c":
            cpu = (f"CPU kernels: compiled C - {self.compiler}, {self.threads} thread(s)"
                   f"{self.threads_note}; cache {self.cache_dir}")
        else:
            cpu = f"CPU kernels: interpreted over NumPy (slower) - {self.cpu_reason}"
        gpu = "GPU kernels: CUDA via CuPy" if self.gpu == "cuda" else \
            f"GPU kernels: unavailable - {self.gpu_reason}"
        return cpu + "\n" + gpu

    def to_json(self) -> dict:
        data = asdict(self)
        data["flags"] = list(self.flags)
        return data


def backend_status(check_gpu: bool = True) -> BackendStatus:
    """The active kernel backends (CPU: C or interpreter; GPU: CUDA or unavailable)."""
    from .cache_trust import UnsafeCacheError
    from .disk_cache import cache_dir
    from .threads import forked_after_threads, num_threads

    try:
        tc = get_toolchain()
    except NoCompiler as exc:
        status = BackendStatus("interpreter", f"no C compiler: {exc}")
    else:
        fallback = _last_fallback.get(os.environ.get("CC", "").strip())
        cpu, reason = ("interpreter", fallback) if fallback else ("c", "compiler works")
        try:
            where = cache_dir()
        except UnsafeCacheError as exc:  # the status reports it; compiling would raise it
            where = f"refused: {exc}"
        status = BackendStatus(cpu, reason, tc.describe(), tc.flags, tc.openmp,
                               num_threads() if tc.openmp else 1, where)
        if tc.openmp and forked_after_threads():
            status.threads_note = (" (forked after threaded kernels ran: libgomp's threads "
                                   "do not survive fork)")
    if check_gpu:
        from execmode.backend import cuda_is_available, cuda_problem

        if cuda_is_available():
            status.gpu, status.gpu_reason = "cuda", "CuPy sees a GPU"
        else:
            status.gpu_reason = cuda_problem()
    return status


def record_fallback(reason: str) -> None:
    """The factory could not use the compiler it found (a compile or load error)."""
    _last_fallback[os.environ.get("CC", "").strip()] = reason
