"""The session file: creating it, checking it, and opening connections to it.

One SQLite file per run (stdlib ``sqlite3``, WAL journal). The writer side lives in
:mod:`execmode.profilers.writer`, the reading side in :mod:`execmode.profilers.session`;
both go through here, so every file is checked the same way before anyone reads it:

* the 16-byte SQLite header (an empty, foreign or truncated file is named as such);
* ``PRAGMA application_id`` (execmode's sessions carry ``EMS1``);
* the ``meta`` table and its ``schema_version`` (a newer version is refused with the
  versions involved; older versions are read as :data:`OLDER_VERSIONS` describes).

Nothing read from a session is ever unpickled or evaluated: values are SQL scalars and
JSON text.
"""

from __future__ import annotations

import json
import os
import sqlite3
from importlib import resources
from pathlib import Path

from execmode.profilers.errors import SessionError

SCHEMA_VERSION = 1
# "EMS1" as a big-endian 32-bit integer: marks the file as an execmode session.
APPLICATION_ID = 0x454D5331
FORMAT_NAME = "execmode-session"
SESSION_SUFFIX = ".emsession"

_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100

# Readers open sessions read-only, so an older schema cannot be altered in place: the
# reader adapts its queries to the version instead. Version 1 is the first, so there is
# nothing to adapt yet; list here, per version, what a reader must do differently.
OLDER_VERSIONS: dict[int, str] = {}


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
        raise SessionError(f"{path}: a file is already there; choose another session path")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.executescript(schema_sql())
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            full = {"format": FORMAT_NAME, "schema_version": SCHEMA_VERSION, **meta}
            conn.execute("BEGIN")
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
    conn.execute("PRAGMA journal_mode = WAL")
    # NORMAL in WAL mode: a commit survives the process being killed (not a power loss),
    # without an fsync per batch.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = OFF")
    return conn


def connect_reader(path: str | os.PathLike) -> tuple[sqlite3.Connection, int]:
    """A read-only connection to a checked session file, and its schema version."""
    path = Path(path)
    check_header(path)
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise SessionError(f"{path}: cannot open the session: {exc}") from None
    try:
        version = _check_identity(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn, version


def check_header(path: Path) -> None:
    """Raise SessionError unless ``path`` starts like a complete SQLite database."""
    if not path.exists():
        raise SessionError(f"{path}: no such session file")
    if path.is_dir():
        raise SessionError(f"{path}: is a folder, not a session file")
    try:
        with open(path, "rb") as f:
            header = f.read(_HEADER_SIZE)
    except OSError as exc:
        raise SessionError(f"{path}: cannot read the session file: {exc.strerror}") from None
    if not header:
        raise SessionError(f"{path}: the file is empty, not an execmode session")
    if not header.startswith(_SQLITE_MAGIC[: len(header)]) or len(header) < len(_SQLITE_MAGIC):
        raise SessionError(f"{path}: not an execmode session (not an SQLite database)")
    if len(header) < _HEADER_SIZE:
        raise SessionError(f"{path}: the session file is truncated ({len(header)} bytes)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    change_counter = header[24:28]
    valid_for = header[92:96]
    # The in-header page count is only trusted when "version-valid-for" matches the
    # change counter (SQLite's own rule); then the file must be at least that long.
    if pages and change_counter == valid_for:
        expected = pages * page_size
        actual = path.stat().st_size
        if actual < expected:
            raise SessionError(
                f"{path}: the session file is truncated ({actual} of {expected} bytes); "
                "it was cut short while being copied or written"
            )


def _check_identity(conn: sqlite3.Connection, path: Path) -> int:
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        has_meta = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()[0]
        if app_id != APPLICATION_ID or not has_meta:
            raise SessionError(
                f"{path}: an SQLite database, but not an execmode session "
                "(no execmode application id or meta table)"
            )
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise damaged(path, exc) from None
    if row is None:
        raise SessionError(f"{path}: the session has no schema_version in its meta table")
    try:
        version = int(json.loads(row[0]))
    except (ValueError, TypeError):
        raise SessionError(f"{path}: unreadable schema_version {row[0]!r}") from None
    if version > SCHEMA_VERSION:
        raise SessionError(
            f"{path}: written by a newer execmode (session schema version {version}; this "
            f"execmode reads versions up to {SCHEMA_VERSION}). Upgrade execmode to open it."
        )
    if version < 1:
        raise SessionError(f"{path}: invalid session schema version {version}")
    return version


def damaged(path, exc: Exception) -> SessionError:
    """The error for an SQLite failure while reading: the file is damaged or not ours."""
    text = str(exc) or type(exc).__name__
    return SessionError(f"{path}: the session file is damaged or truncated ({text})")


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
