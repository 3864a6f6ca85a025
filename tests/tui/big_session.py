"""A session with a million eager ops (synthetic rows, written straight into SQLite).

Op ``seq`` numbers start at 1 as the recorder's do (each op's number in the session: a list
that dropped the first row lost an op). Row ``i`` (from 0) is op ``i + 1``; its columns are
functions of ``i``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from execmode.profilers import store

_OPS = ("matmul", "add", "multiply", "exp", "relu", "sum")


def build_big_session(path: Path, ops: int = 1_000_000, script: str = "train.py",
                      nan_every: int = 0) -> Path:
    """``nan_every``: record value summaries, with a NaN in the output of every n-th op."""
    store.create(path, {"script": script, "argv": [script], "t0_ns": 0,
                        "exit": {"kind": "normal", "code": 0}, "end_ns": ops * 1_000})
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO locations VALUES (?,?,?,?)",
                     [(i + 1, script, 10 + i, "step") for i in range(20)])
    rows = ((i + 1, _OPS[i % 6], "mlp/fc1" if i % 3 else "", 1 + i % 20, i * 1_000,
             300 + i % 700, 4096 * (1 + i % 5), "f32[64,512], f32[512,256]",
             "f32[64,256]", "cpu", None,
             (int(i % nan_every == nan_every - 1) if nan_every else None))
            for i in range(ops))
    conn.executemany("INSERT INTO op_events (seq, op, scope, location, start_ns, dur_ns, "
                     "bytes, inputs, output, device, attrs, v_nan) "
                     "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    conn.executemany("INSERT INTO memory (ts_ns, device, live_bytes, peak_bytes, source) "
                     "VALUES (?,?,?,?,?)",
                     ((i * 1_000, "cpu", 2**20 + (i % 977) * 4096, 2**22, "eager")
                      for i in range(0, ops, 10)))
    conn.execute("COMMIT")
    conn.close()
    return path
