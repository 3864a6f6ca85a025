"""What machine a session ran on: stored in meta so that numbers can be compared fairly."""

from __future__ import annotations

import os
import platform
import sys

import numpy as np


def machine_info(threads: bool = False) -> dict:
    """Host, OS, CPU, memory, library versions and the load average now (1, 5 and 15
    minutes). Cheap: never imports CuPy. ``threads``: with the thread settings too
    (:func:`thread_info`)."""
    import execmode

    info = {
        "host": platform.node(),
        "os": _os_text(),
        "arch": platform.machine(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_bytes": _total_memory(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "execmode": getattr(execmode, "__version__", "?"),
        "load_average": _load_average(),
    }
    if threads:
        info["threads"] = thread_info()
    return info


def thread_info() -> dict:
    """execmode's thread settings (codegen/threads.py's ``thread_settings``), or
    ``{"error": ...}`` when a thread variable is invalid: a recording still starts, and
    the script's first compiled kernel raises the error."""
    from execmode.codegen.threads import thread_settings

    try:
        return thread_settings()
    except ValueError as exc:
        return {"error": str(exc)}


def _load_average() -> list[float] | None:
    """The machine's load average (1, 5, 15 minutes), None where the OS does not say."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def gpu_info() -> list[dict]:
    """The CUDA devices, when CuPy is already imported and sees a GPU; else empty."""
    if "cupy" not in sys.modules:
        return []
    from execmode.backend import cupy_module

    cp = cupy_module()
    if cp is None:
        return []
    devices = []
    for index in range(cp.cuda.runtime.getDeviceCount()):
        props = cp.cuda.runtime.getDeviceProperties(index)
        name = props.get("name", b"")
        devices.append({
            "device": f"cuda:{index}",
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "memory_bytes": int(props.get("totalGlobalMem", 0)),
        })
    return devices


def _os_text() -> str:
    """platform.platform()'s text ("Linux-6.1.0-x86_64-with-glibc2.36") without its cost
    on Linux: it finds the C library's version by reading the Python binary (~20 ms at
    every recording start), which glibc states directly. Elsewhere, platform.platform()."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):  # not glibc (macOS, musl, Windows)
        libc = ""
    if not libc.startswith("glibc ") or platform.system() != "Linux":
        return platform.platform()
    u = os.uname()
    return f"{u.sysname}-{u.release}-{u.machine}-with-{libc.replace(' ', '')}"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _total_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
