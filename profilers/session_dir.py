"""Where sessions live: one folder for every verb that records (``profile``, ``run``,
``tui``), so ``execmode sessions`` lists them all and ``execmode open`` finds the latest.

The folder is ``$EXECMODE_SESSION_DIR`` when set, else the user cache
(``~/.cache/execmode/sessions`` on Linux, platformdirs' answer elsewhere). ``--session FILE``
on a verb puts one session elsewhere; it is then not in the listing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from execmode.profilers.store import SESSION_SUFFIX

ENV_VAR = "EXECMODE_SESSION_DIR"


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


def chosen_session_path(path: str | os.PathLike) -> Path:
    """``--session PATH``: its folder must exist, as for a report's ``-o`` (a typo'd folder
    is refused, not created); the default session folder is created."""
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise SessionDirError(f"--session {path}: the folder {folder} {what}; create it "
                              f"first (mkdir -p {folder}) or choose another path")
    return path


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
    """The session files in ``directory`` (default: the session folder), newest first by
    modification time; an absent folder has none."""
    folder = Path(directory) if directory is not None else session_dir()
    try:
        entries = [p for p in folder.iterdir() if p.name.endswith(SESSION_SUFFIX)]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise SessionDirError(f"cannot list the session folder {folder}: "
                              f"{exc.strerror or exc}") from None
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
