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
import math
import os
import platform
import stat
import sys
import tempfile
import time

from execmode.profilers.calibration import measure_overhead

from execmode import instrument

FOLDER = "calibration"
MAX_BYTES = 64 * 1024
# Fields a stored calibration must have, with their types: anything else is re-measured.
FIELDS = {"ops": int, "rounds": int, "no_listener_ns": int, "null_listener_ns": int,
          "recorder_ns": int, "instrumentation_ns": int, "overhead_ns": int, "op_path_ns": dict,
          "site_ns": int, "declined_ns": dict, "cold_op_ns": list,
          "graph_run_ns": int, "graph_steps": int, "load_average": (float, int, type(None)),
          "settled": bool, "crowded": list, "disagreeing": list, "memory": bool,
          "summaries": bool, "kernel_rows": bool}
# The graph-mode fields, by the kernel_rows option: per-step costs either way.
GRAPH_FIELDS = {False: ("kernel_step_ns", "kernel_run_ns", "kernel_loop_step_ns"),
                True: ("kernel_row_ns",)}
# Modules whose code is what calibration times (their edits invalidate the stored numbers).
MEASURED_MODULES = ("execmode.dispatch", "execmode.instrument", "execmode.source",
                    "execmode.profilers.recorder", "execmode.profilers.writer",
                    "execmode.profilers.memory", "execmode.profilers.native",
                    "execmode.codegen.eager_operators",  # the operators the workload times
                    "execmode.stats",  # the value summaries, timed with summaries on
                    # graph mode: the plan's loops, the program's clock, the fast entry
                    "execmode.plan", "execmode.kernel_clock", "execmode.codegen.program",
                    "execmode.codegen.program_draft", "execmode.codegen.program_statements",
                    "execmode.codegen.clock_mode",
                    "execmode.codegen.fast_entry", "execmode.profilers.kernel_totals",
                    "execmode.profilers.calibration",
                    # the composites' op-by-op path under a recorder, and its measurement
                    "execmode.watched_composites", "execmode.nn.functional",
                    "execmode.nn.losses", "execmode.nn.one_node", "execmode.nn.one_node_layers",
                    "execmode.nn.softmax",
                    "execmode.functional.primitives", "execmode.profilers.calibration_declined",
                    "execmode.profilers.calibration_cold",
                    "execmode.optim.plain")
# The C they run (execmode/native: the op ring, the operators, the fast entry, their shared
# header; the kernel clock is codegen's), stamped the same way.
MEASURED_SOURCES = tuple(("execmode.native", name) for name in (
    "em_native.h", "eager_operators.c", "fast_entry.c", "op_ring.c", "op_ring_sqlite.h",
    "op_ring_records.h", "op_ring_sites.h", "cpu_memory.h", "op_ring_producer.h",
    "op_ring_writer.h")) + (("execmode.codegen", "em_clock.h"),)


def cached_overhead(*, memory: bool = True, summaries: bool = False,
                    kernel_rows: bool = False, measure=None) -> dict:
    """The calibration for these options: read from the cache when a stored one matches
    this machine and code, else measured (``measure``, default measure_overhead) and
    stored."""
    measure = measure or measure_overhead
    options = {"memory": memory, "summaries": summaries, "kernel_rows": kernel_rows}
    if instrument.listeners():
        # As before caching: beside a debugger or another recorder, no calibration (the
        # measurement says it skipped), so that a session never mixes the two cases.
        return measure(**options)
    key = cache_key(memory, summaries, kernel_rows)
    path = _path(key)
    if path is not None and not os.environ.get("EXECMODE_RECALIBRATE"):
        stored = read(path, key)
        if stored is not None and (stored.get("settled", True) or _age_s(path) < UNSETTLED_S):
            return stored
    result = measure(**options)
    # Unsettled numbers (a busy machine) are kept for UNSETTLED_S only, and say so: the
    # first recording after that measures again. Measuring at every start instead cost
    # each debugger start ~2.5 s (its controller keeps the machine busy while it waits).
    if path is not None and "skipped" not in result:
        write(path, key, result)
    return result


UNSETTLED_S = 3600.0


def _age_s(path: str) -> float:
    try:
        return time.time() - os.stat(path).st_mtime
    except OSError:
        return math.inf


def cache_key(memory: bool, summaries: bool, kernel_rows: bool = False) -> dict:
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
        "kernel_rows": bool(kernel_rows),
        # the compiled steps' clock (codegen/clock_mode.py): ticks, or ns when forced
        "kernel_clock": os.environ.get("EXECMODE_KERNEL_CLOCK", "").strip().lower(),
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
    for package, name in MEASURED_SOURCES:
        try:
            spec = importlib.util.find_spec(package)
            folder = os.path.dirname(spec.origin)
            info = os.stat(os.path.join(folder, name))
        except (ImportError, OSError, TypeError, AttributeError):
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
    if not isinstance(result, dict):
        return None
    fields = dict(FIELDS, **dict.fromkeys(GRAPH_FIELDS[result.get("kernel_rows") is True], int))
    if set(result) != set(fields):
        return None
    for name, kinds in fields.items():
        # bool is an int: an int field holding True is as malformed as a string.
        if type(result[name]) not in (kinds if isinstance(kinds, tuple) else (kinds,)):
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
