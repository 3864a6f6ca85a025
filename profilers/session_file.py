"""Opening a session file for reading, and every check made before anyone reads it.

Each reader (reports, exporters, ``em.profile``, the TUI) comes through
:func:`connect_reader`, so every file is judged the same way and every problem is a
:class:`SessionError` that names the file and says what is wrong:

1. **What the path is** (``os.stat``, never ``open`` first): missing, a folder, a FIFO, a
   socket or a device is refused by name (opening a FIFO would block forever); an empty
   file is refused; the first bytes must be SQLite's magic (read without blocking).
2. **SQLite opens it, read-only and WAL-aware** (``mode=ro``): the committed transactions
   in a ``-wal`` file that a killed writer left behind are part of the session. SQLite
   needs to create the ``-shm`` index for that; in a folder this user cannot write, or on
   a full disk, the file and its WAL are read from a private copy instead.
3. **Identity**: execmode's application id, a ``meta`` table, a ``schema_version`` this
   execmode reads (a newer one is refused with both versions).
4. **Complete** (checked with step 1): without WAL frames the file must be as long as its
   header's page count says (truncated copies are named as such). With WAL frames, pages
   may live in the WAL, so only SQLite can judge: reads of a damaged file fail as
   :func:`damaged`.
5. **Meta values** (:func:`read_meta`): JSON, and the keys execmode reads have the types it
   writes; anything else is refused naming the key.

Nothing read from a session is ever unpickled or evaluated.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path

from execmode.profilers.errors import SessionError

APPLICATION_ID = 0x454D5331  # "EMS1": store.py writes it
SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100
_WAL_HEADER_SIZE = 32

# Meta keys execmode reads, and the JSON types it writes there.
META_TYPES = {
    "format": str, "schema_version": int, "script": str, "cwd": str, "created": str,
    "source": str, "t0_ns": int, "end_ns": int, "argv": list, "exit": dict, "end": dict,
    "calibration": dict, "pyspy": dict, "machine": dict, "recorded": dict, "writer": dict,
    "partial": dict, "threads": dict, "output_truncated": dict,
}
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def connect_reader(path, newest: int) -> tuple[sqlite3.Connection, int]:
    """A read-only connection to a checked session file, and its schema version
    (``newest``: the highest version this execmode reads)."""
    path = Path(path)
    check_file(path)
    conn = _connect(path)
    try:
        try:
            version = _check_identity(conn, path, newest)
        except _CannotOpen:
            conn.close()
            conn = _connect_private_copy(path)
            version = _check_identity(conn, path, newest)
    except BaseException:
        conn.close()
        raise
    return conn, version


def check_file(path: Path) -> None:
    """Raise SessionError unless ``path`` is a regular, non-empty file starting like an
    SQLite database (never blocks: a FIFO is refused from its stat)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SessionError(f"{path}: no such session file") from None
    except OSError as exc:
        raise SessionError(f"{path}: cannot read the session file: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise SessionError(f"{path}: is a folder, not a session file")
    for test, kind in _KINDS:
        if test(info.st_mode):
            raise SessionError(f"{path}: is {kind}, not a session file")
    if not stat.S_ISREG(info.st_mode):
        raise SessionError(f"{path}: is not a regular file")
    if info.st_size == 0:
        raise SessionError(f"{path}: the file is empty, not an execmode session")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            header = os.read(fd, _HEADER_SIZE)
        finally:
            os.close(fd)
    except OSError as exc:
        raise SessionError(f"{path}: cannot read the session file: {exc.strerror}") from None
    if not header.startswith(SQLITE_MAGIC[: len(header)]) or len(header) < len(SQLITE_MAGIC):
        raise SessionError(f"{path}: not an execmode session (not an SQLite database)")
    if len(header) < _HEADER_SIZE:
        raise SessionError(f"{path}: the session file is truncated ({len(header)} bytes)")
    _check_length(path, header, info.st_size)


def _check_length(path: Path, header: bytes, size: int) -> None:
    """Without WAL frames the file holds every page, so it must be as long as its header
    says (SQLite's rule: the header's page count counts only when its "version-valid-for"
    matches the change counter). With WAL frames, pages may live in the WAL (a checkpoint
    writes page 1 first, so a writer killed mid-checkpoint leaves a file shorter than its
    header and an intact session): SQLite judges those pages as they are read."""
    if _has_wal_frames(path):
        return
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if pages and header[24:28] == header[92:96] and size < pages * page_size:
        raise SessionError(
            f"{path}: the session file is truncated ({size} of {pages * page_size} bytes); "
            "it was cut short while being copied or written"
        )


class _CannotOpen(Exception):
    """SQLite could not open the file's WAL index here (a folder this user cannot write)."""


def _connect(path: Path) -> sqlite3.Connection:
    try:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                               check_same_thread=False)
    except sqlite3.Error as exc:
        raise SessionError(f"{path}: cannot open the session: {exc}") from None


class _PrivateCopy(sqlite3.Connection):
    """A connection to a copy in a temporary folder, removed when the connection closes."""

    folder = ""

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __del__(self):
        shutil.rmtree(self.folder, ignore_errors=True)


def _connect_private_copy(path: Path) -> sqlite3.Connection:
    folder = tempfile.mkdtemp(prefix="execmode-session-")
    try:
        copy = Path(folder) / "session.emsession"
        shutil.copyfile(path, copy)
        wal = Path(f"{path}-wal")
        if wal.is_file():
            shutil.copyfile(wal, f"{copy}-wal")
        conn = sqlite3.connect(f"{copy.as_uri()}?mode=ro", uri=True, check_same_thread=False,
                               factory=_PrivateCopy)
    except (OSError, sqlite3.Error) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise SessionError(f"{path}: cannot open the session: {exc}") from None
    conn.folder = folder
    return conn


def _check_identity(conn: sqlite3.Connection, path: Path, newest: int) -> int:
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
    except sqlite3.OperationalError as exc:
        # No -shm index can be made beside the file: a folder we cannot write, or a full
        # disk (then SQLite says "disk I/O error"). Its WAL is read from a private copy.
        if ("unable to open" in str(exc) or "disk I/O error" in str(exc)) and \
                Path(f"{path}-wal").exists():
            raise _CannotOpen() from None
        raise damaged(path, exc) from None
    except sqlite3.DatabaseError as exc:
        raise damaged(path, exc) from None
    if row is None:
        raise SessionError(f"{path}: the session has no schema_version in its meta table")
    try:
        version = json.loads(row[0])
    except (ValueError, TypeError):
        version = None
    if type(version) is not int:
        raise SessionError(f"{path}: unreadable schema_version {row[0]!r}")
    if version > newest:
        raise SessionError(
            f"{path}: written by a newer execmode (session schema version {version}; this "
            f"execmode reads versions up to {newest}). Upgrade execmode to open it."
        )
    if version < 1:
        raise SessionError(f"{path}: invalid session schema version {version}")
    return version


def _has_wal_frames(path: Path) -> bool:
    try:
        return os.stat(f"{path}-wal").st_size > _WAL_HEADER_SIZE
    except OSError:
        return False


def read_meta(conn: sqlite3.Connection, path) -> dict:
    """The meta table as a dict of JSON values; a value that is not JSON, or a known key of
    the wrong type, is refused naming the key."""
    try:
        rows = conn.execute("SELECT key, value FROM meta").fetchall()
    except sqlite3.DatabaseError as exc:
        raise damaged(path, exc) from None
    meta = {}
    for key, text in rows:
        try:
            value = json.loads(text)
        except (ValueError, TypeError):
            raise SessionError(f"{path}: meta {key!r} is not valid JSON: "
                               f"{_excerpt(text)}") from None
        wanted = META_TYPES.get(key)
        if wanted is not None and value is not None and not _is(value, wanted):
            raise SessionError(f"{path}: meta {key!r} should be a JSON "
                               f"{_JSON_NAMES[wanted]}, found {_excerpt(text)}")
        meta[key] = value
    return meta


_JSON_NAMES = {str: "string", int: "integer", list: "array", dict: "object"}


def _is(value, wanted: type) -> bool:
    if wanted is int:
        return type(value) is int
    return isinstance(value, wanted)


def _excerpt(text, limit: int = 60) -> str:
    text = repr(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def damaged(path, exc: Exception) -> SessionError:
    """The error for an SQLite failure while reading: the file is damaged or not ours."""
    text = str(exc) or type(exc).__name__
    return SessionError(f"{path}: the session file is damaged or truncated ({text})")
