"""What the compiler probe found, remembered on disk per machine and compiler.

Every process that compiled a kernel used to ask the compiler its version (one ``cc
--version``) and build a test kernel to learn which flags it takes: ~20-60 ms of child
processes at each first jit, paid again by every script and, unevenly, by a profiled run
and a plain one (a profiler cost measured below zero came from it). The answer depends
only on the compiler's files and the CPU, so it is kept in the cache directory
(``toolchain/probe.json``), keyed by ``CC``, the resolved programs' paths and their
``stat`` (an upgraded compiler is a new file: new size, time or inode), the CPU and the
flag sets tried. Only working toolchains are kept: a failure is probed again next time.

The record is JSON, read as data and checked field by field; anything unreadable or
unexpected is ignored (the probe runs, as without a record). The folder is the kernel
cache's, under the same ownership checks (cache_trust.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile

RECORD_VERSION = 1
_MAX_BYTES = 256 * 1024
_MAX_ENTRIES = 32


def key(cc_env: str, command: tuple, attempts: str, cpu: str) -> str | None:
    """The record's key for this compiler command on this machine (``cpu``: its
    identity), or None when a program of ``command`` cannot be stat'ed (then nothing is
    remembered)."""
    parts = [str(RECORD_VERSION), cc_env, " ".join(command), attempts, cpu]
    # The driver and any program it is given (CC="ccache gcc") decide what compiles.
    for word in command:
        if word.startswith("-"):
            continue
        path = word if os.path.isabs(word) else shutil.which(word)
        if path is None:
            continue
        try:
            info = os.stat(os.path.realpath(path))
        except OSError:
            return None
        parts.append(f"{os.path.realpath(path)} {info.st_size} {info.st_mtime_ns} "
                     f"{info.st_ino}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def load(record_key: str) -> dict | None:
    """The remembered fields for ``record_key`` (checked), or None."""
    entry = _read().get(record_key)
    if not isinstance(entry, dict):
        return None
    fields = {"version": str, "flags": list, "openmp": bool, "native": bool,
              "notes": list, "takes": dict}
    if any(not isinstance(entry.get(name), kind) for name, kind in fields.items()):
        return None
    if not all(isinstance(f, str) for f in entry["flags"] + entry["notes"]) or \
            not all(isinstance(v, bool) for v in entry["takes"].values()):
        return None
    return entry


def store(record_key: str, entry: dict) -> None:
    """Remember ``entry`` under ``record_key`` (best effort: a read-only or unsafe cache
    directory only means probing again next time)."""
    path = _path()
    if path is None:
        return
    records = _read()
    records.pop(record_key, None)
    records[record_key] = entry
    while len(records) > _MAX_ENTRIES:  # oldest first: dicts keep insertion order
        records.pop(next(iter(records)))
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".probe-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(records, f)
        os.replace(tmp, path)
    except OSError:
        pass


def _read() -> dict:
    path = _path()
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(_MAX_BYTES + 1)
        records = json.loads(text) if len(text) <= _MAX_BYTES else {}
    except (OSError, ValueError):
        return {}
    return records if isinstance(records, dict) else {}


def _path() -> str | None:
    from . import disk_cache
    from .cache_trust import UnsafeCacheError

    try:
        return os.path.join(disk_cache.cache_dir("toolchain"), "probe.json")
    except (ImportError, OSError, UnsafeCacheError):
        return None
