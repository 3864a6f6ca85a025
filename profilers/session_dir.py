"""Where sessions live: one folder for every verb that records (``profile``, ``run``,
``tui``), so ``execmode sessions`` lists them all and ``execmode open`` finds the latest.

The folder is ``$EXECMODE_SESSION_DIR`` when set, else the user cache
(``~/.cache/execmode/sessions`` on Linux, platformdirs' answer elsewhere). ``--session FILE``
on a verb puts one session elsewhere: its path goes into the folder's small index
(``elsewhere.jsonl``, one JSON line per path), so the listing and "the latest session"
include it while the file exists. ``--force`` replaces an existing session file (never a
file that is not a session).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from execmode.profilers.store import SESSION_SUFFIX

ENV_VAR = "EXECMODE_SESSION_DIR"
INDEX = "elsewhere.jsonl"
INDEX_KEEP = 500  # paths the index keeps (the newest): a listing, not an archive


class SessionDirError(Exception):
    """The session folder cannot be used (the message names it and says why)."""


def session_dir() -> Path:
    """The folder for new sessions (not created here)."""
    override = os.environ.get(ENV_VAR, "").strip()
    if override:
        return Path(override).expanduser()
    try:
        from platformdirs import user_cache_dir
    except ImportError:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
        return Path(cache).expanduser() / "execmode" / "sessions"
    return Path(user_cache_dir("execmode")) / "sessions"


def chosen_session_path(path: str | os.PathLike, *, force: bool = False) -> Path:
    """``--session PATH``: its folder must exist, as for a report's ``-o`` (a typo'd folder
    is refused, not created); the default session folder is created. An existing file is
    refused, or with ``force`` removed when it is a session. The path goes into the
    session folder's index (``remember``)."""
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise SessionDirError(f"--session {path}: the folder {folder} {what}; create it "
                              f"first (mkdir -p {folder}) or choose another path")
    if path.exists():
        if not force:
            raise SessionDirError(f"--session {path}: already exists; give another path, or "
                                  "--force to replace it")
        remove_session(path)
    remember(path)
    return path


def remove_session(path: str | os.PathLike) -> None:
    """Delete the session file at ``path`` and its SQLite side files; refused (the
    message says why) for a file that is not an execmode session."""
    from execmode.profilers.session_file import APPLICATION_ID

    path = Path(path)
    try:
        with open(path, "rb") as f:
            header = f.read(72)
    except OSError as exc:
        raise SessionDirError(f"{path}: cannot read it ({exc.strerror or exc}); not replaced") \
            from None
    if not (header.startswith(b"SQLite format 3\x00")
            and int.from_bytes(header[68:72], "big") == APPLICATION_ID):
        raise SessionDirError(f"{path}: not an execmode session; not replaced (choose another "
                              "path)")
    for side in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{side}").unlink(missing_ok=True)


def remember(path: str | os.PathLike) -> None:
    """Note a session recorded outside the session folder in the folder's index, so
    ``execmode sessions``, ``open`` and ``report`` find it. Best effort: a folder that
    cannot be written leaves the session unlisted, never the run refused."""
    path = Path(path).resolve()
    folder = session_dir()
    try:
        if path.parent == folder.resolve():
            return
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / INDEX, "a", encoding="utf-8") as f:
            f.write(json.dumps({"path": str(path)}) + "\n")
    except OSError:
        return


def _indexed(folder: Path) -> list[Path]:
    """The session files the index names that still exist (the index kept to its newest
    INDEX_KEEP lines; lines that are not a JSON object with a path are skipped)."""
    index = folder / INDEX
    try:
        lines = index.read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return []
    except OSError as exc:
        raise SessionDirError(f"cannot read {index}: {exc.strerror or exc}") from None
    paths: dict[str, Path] = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        named = entry.get("path") if isinstance(entry, dict) else None
        if isinstance(named, str) and named.endswith(SESSION_SUFFIX):
            paths[named] = Path(named)
    if len(lines) > INDEX_KEEP:
        kept = list(paths)[-INDEX_KEEP:]
        try:
            index.write_text("".join(json.dumps({"path": p}) + "\n" for p in kept),
                             encoding="utf-8")
        except OSError:
            pass
    return [p for p in paths.values() if p.is_file()]


def new_session_path(script: str, directory: str | os.PathLike | None = None) -> Path:
    """A fresh ``SCRIPT-DATE-TIME-PID.emsession`` in ``directory`` (default: the session
    folder), creating the folder. The pid keeps two runs started in the same second apart."""
    folder = Path(directory) if directory is not None else session_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = f" ({ENV_VAR})" if directory is None and os.environ.get(ENV_VAR) else ""
        raise SessionDirError(f"cannot use the session folder {folder}{where}: "
                              f"{exc.strerror or exc}") from None
    stem = Path(script).stem or "script"
    base = f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    path = folder / f"{base}{SESSION_SUFFIX}"
    n = 1
    while path.exists():
        path = folder / f"{base}-{n}{SESSION_SUFFIX}"
        n += 1
    return path


def recent_sessions(directory: str | os.PathLike | None = None) -> list[Path]:
    """The session files in ``directory`` (default: the session folder, and the sessions
    its index names elsewhere), newest first by modification time; an absent folder has
    none."""
    folder = Path(directory) if directory is not None else session_dir()
    try:
        entries = [p for p in folder.iterdir() if p.name.endswith(SESSION_SUFFIX)]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise SessionDirError(f"cannot list the session folder {folder}: "
                              f"{exc.strerror or exc}") from None
    if directory is None:
        entries += _indexed(folder)
    stamped = []
    for path in entries:
        try:
            stamped.append((path.stat().st_mtime, path.name, path))
        except OSError:  # removed while we looked
            continue
    stamped.sort(reverse=True)
    return [path for _, _, path in stamped]


def latest_session(directory: str | os.PathLike | None = None) -> Path | None:
    sessions = recent_sessions(directory)
    return sessions[0] if sessions else None


def saved_line(path: str | os.PathLike) -> str:
    """The line each verb prints at the end of a run that recorded a session."""
    return f"execmode: session saved to {path} (browse it: execmode open {path})"
