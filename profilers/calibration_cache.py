"""The recorder's calibration, measured once per machine and kept in the user cache.

Calibrating (calibration.py) takes 0.1-0.6 s of timed loops, and it used to run at the
start of every ``execmode profile``: most of the tool's fixed cost on a short script.
The numbers depend on the machine and on the code that is measured, not on the script,
so the first run stores them and later runs read them back.

* **Key.** The CPU (model and feature flags, as the kernel cache keys its libraries),
  Python's and NumPy's versions, execmode's version, the size and modification time of
  the modules (and the op ring's C source) whose per-op cost is measured (so that editing
  dispatch or the recorder in a checkout measures again, although the version number did
  not move), and the recorder options that change the cost (memory tracking, summaries,
  whether the op ring is on). One JSON file per key, named by its hash; the key is also
  stored inside and compared on reading.
* **Trust.** The same folder rules as the kernel cache (codegen/cache_trust.py): the
  cache directory and its ``calibration`` folder must be owned by this user and writable
  by nobody else, and a file must be a regular file (not a symlink) owned by this user and
  writable by nobody else; else it is measured afresh and nothing is read. The file is
  JSON, parsed and checked field by field: never pickle, never eval. A file that fails any
  check is measured again and replaced (written to a temporary file, then renamed).
* ``EXECMODE_RECALIBRATE=1`` measures afresh and replaces the stored numbers (after a
  change of load on a shared machine, say).

With other listeners attached the calibration is skipped, as it always was (never read
from the cache, never stored).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import stat
import sys
import tempfile

from execmode.profilers.calibration import measure_overhead

from execmode import instrument

FOLDER = "calibration"
MAX_BYTES = 64 * 1024
# Fields a stored calibration must have, with their types: anything else is re-measured.
FIELDS = {"ops": int, "no_listener_ns": int, "null_listener_ns": int, "recorder_ns": int,
          "instrumentation_ns": int, "overhead_ns": int, "memory": bool, "summaries": bool}
# Modules whose code is what calibration times (their edits invalidate the stored numbers).
MEASURED_MODULES = ("execmode.dispatch", "execmode.instrument", "execmode.source",
                    "execmode.profilers.recorder", "execmode.profilers.writer",
                    "execmode.profilers.memory", "execmode.profilers.native",
                    "execmode.codegen.eager_operators",  # the operators the workload times
                    "execmode.stats")  # the value summaries, timed with summaries on
# C sources beside them (the op ring: native.py), stamped the same way.
MEASURED_SOURCES = ("op_ring.c",)


def cached_overhead(*, memory: bool = True, summaries: bool = False, measure=None) -> dict:
    """The calibration for these options: read from the cache when a stored one matches
    this machine and code, else measured (``measure``, default measure_overhead) and
    stored."""
    measure = measure or measure_overhead
    if instrument.listeners():
        # As before caching: beside a debugger or another recorder, no calibration (the
        # measurement says it skipped), so that a session never mixes the two cases.
        return measure(memory=memory, summaries=summaries)
    key = cache_key(memory, summaries)
    path = _path(key)
    if path is not None and not os.environ.get("EXECMODE_RECALIBRATE"):
        stored = read(path, key)
        if stored is not None:
            return stored
    result = measure(memory=memory, summaries=summaries)
    if path is not None and "skipped" not in result:
        write(path, key, result)
    return result


def cache_key(memory: bool, summaries: bool) -> dict:
    import numpy as np
    from execmode.profilers import native

    import execmode
    from execmode.codegen.toolchain import cpu_identity

    return {
        "cpu": cpu_identity(),
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "numpy": np.__version__,
        "execmode": getattr(execmode, "__version__", "?"),
        "code": _code_stamp(),
        "op_ring": native.enabled(),
        "memory": bool(memory),
        "summaries": bool(summaries),
    }


def _code_stamp() -> list:
    import importlib.util

    stamp = []
    for name in MEASURED_MODULES:
        try:
            spec = importlib.util.find_spec(name)  # without importing it
            info = os.stat(spec.origin) if spec is not None and spec.origin else None
        except (ImportError, OSError, ValueError):
            info = None
        stamp.append([name, info.st_size, info.st_mtime_ns] if info else [name, None, None])
    here = os.path.dirname(os.path.abspath(__file__))
    for name in MEASURED_SOURCES:
        try:
            info = os.stat(os.path.join(here, name))
        except OSError:
            info = None
        stamp.append([name, info.st_size, info.st_mtime_ns] if info else [name, None, None])
    return stamp


def _path(key: dict) -> str | None:
    """The file for ``key``, or None when the cache directory is refused or unusable
    (then calibration is measured and not stored)."""
    from execmode.codegen import disk_cache
    from execmode.codegen.cache_trust import UnsafeCacheError

    try:
        folder = disk_cache.cache_dir(FOLDER)
    except (UnsafeCacheError, OSError):
        return None
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return os.path.join(folder, f"{digest}.json")


def read(path: str, key: dict) -> dict | None:
    """The stored calibration at ``path`` for ``key``, or None (missing, untrusted,
    malformed, or for another key)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None  # missing, or a symlink (ELOOP): never ours
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or \
                stat.S_IMODE(info.st_mode) & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        data = os.read(fd, MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        return None
    try:
        stored = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(stored, dict) or stored.get("key") != key:
        return None
    result = stored.get("calibration")
    if not isinstance(result, dict) or set(result) != set(FIELDS):
        return None
    for name, kind in FIELDS.items():
        value = result[name]
        # bool is an int: an int field holding True is as malformed as a string.
        if type(value) is not kind:
            return None
    return result


def write(path: str, key: dict, result: dict) -> None:
    """Store ``result`` atomically (temporary file in the same folder, then rename); a
    failure to write costs the next run a measurement, nothing else."""
    text = json.dumps({"key": key, "calibration": result}, sort_keys=True, indent=1)
    folder = os.path.dirname(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".calibration-", suffix=".tmp", dir=folder)
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
