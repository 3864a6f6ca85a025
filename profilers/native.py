"""The recorder's per-op path in C: an op ring (native/op_ring.c) instead of an OpEvent per op.

With a recorder as the only op listener, dispatch hands each eager op to the recorder's
``OpRing``, which writes five integers into a preallocated buffer (seq, site, start,
end, bytes); the op's *site* (op name, operand types, scope, source line, attrs) is
registered once, formatted once on the writer thread by the same code that formats
OpEvents (rows.RowFormatter), and every later op with the same site costs a hash and a
lookup in C. The writer thread then inserts the records through its own SQLite
connection with the GIL released, so the script's thread goes on meanwhile. Ops the ring
does not describe (other threads, GPU arrays, unusual scalars or attributes) take the
Python path as before: their rows are the same either way
(tests/profilers/test_op_ring.py). On a full ring the script waits for the writer, timed.

* **Built on first use, cached on disk** like the jit's fast entry (codegen/fast_entry.py):
  the extension compiles with the project's C compiler (~0.5 s, once per machine and
  source) into the cache's ``extensions`` folder, checked before every load
  (codegen/cache_trust.py). No compiler, no Python or NumPy headers, a failed build:
  ``load()`` returns None and the recorder keeps the Python path (``status()`` says why).
* **SQLite from C** only through the library this process already loaded for Python's
  ``sqlite3`` (found in /proc/self/maps, opened with RTLD_NOLOAD): a second copy of
  SQLite in one process would not see the first one's locks. Where it cannot be found
  (a statically linked ``_sqlite3``, no /proc), the writer takes the records as Python
  rows instead (``OpRing.take``), still without a Python object per op on the script's
  thread.
* ``EXECMODE_NATIVE_RECORDER=0`` turns the ring off (the Python path records every op).
"""

from __future__ import annotations

import os
import sqlite3  # noqa: F401 - loads the SQLite library that sqlite_library() finds
import sys
import threading

from execmode.native import source_path

EXTENSION = "_em_op_ring"
SOURCE = source_path("op_ring.c")
# Records the ring holds (40 bytes each): ~1/3 s of tiny ops. Half full wakes the writer;
# full makes the script wait for it (op_ring.c's wait_for_room).
CAPACITY = 1 << 16

_loaded: dict[str, tuple] = {}   # CC value -> (module or None, status)
_lock = threading.Lock()


def enabled() -> bool:
    return os.environ.get("EXECMODE_NATIVE_RECORDER", "1").strip().lower() not in (
        "0", "off", "no", "false")


def load():
    """The compiled ``_em_op_ring`` module, or None (then ``status()`` says why)."""
    cc = os.environ.get("CC", "").strip()
    with _lock:
        hit = _loaded.get(cc)
        if hit is None:
            hit = _loaded[cc] = _build()
    return hit[0]


def status() -> dict:
    """extension_build's status (``ok``, ``reason``, ``machine_lacks`` ...) for the current
    CC."""
    load()
    return dict(_loaded[os.environ.get("CC", "").strip()][1])


def new_ring(*, tracker=None, wake=None, capacity: int | None = None, seq_base: int = 0):
    """An OpRing for one recording, or None when the extension is unavailable or off.

    ``tracker`` (a MemoryTracker) then counts the CPU's memory in the ring's CpuMemory;
    ``wake`` is called when the ring becomes half full (the writer's wake-up); ``seq_base``
    is subtracted from each op's seq, so records hold the op's number in the session
    (SessionWriter.number_ops_after)."""
    if not enabled():
        return None
    module = load()
    if module is None:
        return None
    from execmode import backend, instrument, scope, source
    from execmode._tensor import Tensor

    counters = None
    if tracker is not None:
        counters = module.CpuMemory(str(backend.CPU), tracker._interval, tracker._sample)
        if not tracker.adopt_native_cpu(counters):
            counters = None  # the tracker counted on the CPU already: the Python path then
    if tracker is not None and counters is None:
        return None
    return module.OpRing(capacity or CAPACITY, instrument._seq, scope._state, source.is_internal_file,
                         source.location_of, backend.CPU, Tensor, Tensor.__dict__["_data"],
                         threading.main_thread().ident, counters, wake, seq_base)


def sqlite_library() -> str | None:
    """The SQLite shared library that Python's sqlite3 module uses in this process, or
    None where it cannot be told (linked into ``_sqlite3`` itself, or no /proc)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1]
                if os.path.basename(path).startswith("libsqlite3") and ".so" in path:
                    return path
    except OSError:
        return None
    return None


# --- building ---------------------------------------------------------------------------

def _build() -> tuple:
    from execmode.codegen.extension_build import build_extension
    from execmode.codegen.factory import debug_level

    module, status = build_extension(EXTENSION, SOURCE, "op_ring")
    if module is not None and debug_level() >= 1:
        print(f"execmode: op ring extension {status['reason']}: {status['path']}", file=sys.stderr)
    return module, status
