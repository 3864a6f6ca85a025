"""The session file: creating it, and opening connections to it.

One SQLite file per run (stdlib ``sqlite3``, WAL journal). The writer side lives in
:mod:`execmode.profilers.writer`, the reading side in :mod:`execmode.profilers.session`;
both go through here. Readers are checked the same way before anyone reads
(:mod:`execmode.profilers.session_file`: what the path is, SQLite read-only and WAL-aware,
``PRAGMA application_id`` ``EMS1``, the ``schema_version``, completeness, meta values);
older versions are read as :data:`OLDER_VERSIONS` describes.

Nothing read from a session is ever unpickled or evaluated: values are SQL scalars and
JSON text.
"""

from __future__ import annotations

import json
import os
import sqlite3
from importlib import resources
from pathlib import Path

from execmode.profilers import session_file
from execmode.profilers.errors import SessionError
from execmode.profilers.session_file import APPLICATION_ID  # "EMS1": marks our sessions

SCHEMA_VERSION = 3
FORMAT_NAME = "execmode-session"
SESSION_SUFFIX = ".emsession"

# Readers open sessions read-only, so an older schema cannot be altered in place: the
# reader adapts its queries to the version instead. Per version, what a reader must do
# differently.
OLDER_VERSIONS: dict[int, str] = {
    1: "op_events and the ops view have no thread column: every op reads as the main "
       "thread's (NULL)",
    2: "no kernel_totals or graph_runs tables: kernel totals are summed from the kernels "
       "table's per-run rows; comparisons have no rounds or verdict columns (NULL)",
}


def schema_sql() -> str:
    """The DDL of the current schema (schema.sql, shipped as package data)."""
    return resources.files(__package__).joinpath("schema.sql").read_text(encoding="utf-8")


def create(path: str | os.PathLike, meta: dict) -> Path:
    """Create a new, empty session file at ``path`` with ``meta`` written in.

    The file is built under a temporary name and renamed into place, so a reader that
    tails the path never sees a half-made schema.
    """
    path = Path(path)
    if path.exists():
        raise SessionError(f"{path}: a file is already there; choose another session path "
                           "(or replace a session: --force, em.profile(..., overwrite=True))")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            # One transaction: a commit per CREATE statement synced the file a dozen times
            # (16-28 ms, where one commit takes 2-5 ms), on the way to a script's first op.
            conn.executescript(f"BEGIN;\n{schema_sql()}")
            full = {"format": FORMAT_NAME, "schema_version": SCHEMA_VERSION, **meta}
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                             [(k, to_json(v)) for k, v in full.items()])
            conn.execute("COMMIT")
        finally:
            conn.close()
        os.replace(tmp, path)
    except sqlite3.Error as exc:
        tmp.unlink(missing_ok=True)
        raise SessionError(f"{path}: cannot create the session file: {exc}") from None
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SessionError(f"{path}: cannot create the session file: {exc.strerror}") from None
    return path


def connect_writer(path: str | os.PathLike) -> sqlite3.Connection:
    """The one writing connection (WAL, commits durable against a crash of the process)."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    for pragma in writer_pragmas(conn):
        conn.execute(pragma)
    return conn


def writer_pragmas(conn: sqlite3.Connection) -> list[str]:
    """The settings of a connection that writes a session (``conn`` is one open on it):
    the writer's own, and the op ring's (native.py), which writes op rows beside it."""
    pragmas = [
        "PRAGMA journal_mode = WAL",
        # NORMAL in WAL mode: a commit survives the process being killed (not a power
        # loss), without an fsync per batch.
        "PRAGMA synchronous = NORMAL",
        "PRAGMA foreign_keys = OFF",
    ]
    limit = max_session_bytes()
    if limit is not None:
        # SQLite refuses to grow the file past this (SQLITE_FULL), as a full disk would:
        # the writer then marks the session partial and the script goes on.
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pragmas.append(f"PRAGMA max_page_count = {max(1, limit // page_size)}")
    return pragmas


def max_session_bytes() -> int | None:
    """``EXECMODE_SESSION_MAX_MB`` (a positive number of MiB) as bytes, else None."""
    text = os.environ.get("EXECMODE_SESSION_MAX_MB", "").strip()
    if not text:
        return None
    try:
        mib = float(text)
    except ValueError:
        raise SessionError(f"EXECMODE_SESSION_MAX_MB={text!r}: expected a number of MiB") \
            from None
    if not mib > 0:
        raise SessionError(f"EXECMODE_SESSION_MAX_MB={text!r}: expected a positive number")
    return int(mib * 2**20)


def connect_reader(path: str | os.PathLike) -> tuple[sqlite3.Connection, int]:
    """A read-only, WAL-aware connection to a checked session file, and its schema version
    (session_file.py says what is checked)."""
    return session_file.connect_reader(path, SCHEMA_VERSION)


def stamp_unclosed(path: str | os.PathLike, meta: dict) -> bool:
    """Write ``meta`` into a session whose writer died before it said how the script
    ended (no "exit", "end" or "end_ns" in meta); False, and nothing written, when it did.
    The caller is the only writer left; SQLite recovers the WAL on open. Raises
    sqlite3.Error when the file cannot be written."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=5.0)
    try:
        if conn.execute("SELECT 1 FROM meta WHERE key IN ('exit', 'end', 'end_ns') "
                        "LIMIT 1").fetchall():
            return False
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                         [(k, to_json(v)) for k, v in meta.items()])
        conn.execute("COMMIT")
        return True
    finally:
        conn.close()


def read_meta(conn: sqlite3.Connection, path) -> dict:
    """The meta table, checked (session_file.read_meta)."""
    return session_file.read_meta(conn, path)


damaged = session_file.damaged


def to_json(value) -> str:
    """JSON text for a meta value or event field (see :func:`jsonable`)."""
    return json.dumps(value, default=jsonable, separators=(",", ":"), allow_nan=True)


def jsonable(value):
    """A JSON-friendly stand-in for objects events carry (locations, dtypes, devices)."""
    to_json_method = getattr(value, "to_json", None)
    if callable(to_json_method):
        return to_json_method()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    item = getattr(value, "item", None)  # NumPy scalars
    if callable(item) and getattr(value, "shape", None) == ():
        return item()
    return str(value)
