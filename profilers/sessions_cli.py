"""``execmode sessions``: the recent sessions in the session folder (session_dir.py), newest
first, with the date, script, op count, size and status of each, read with the one session
reader (session.py). The status is how the script ended (session_end.py: finished, raised
ValueError at train.py:12, stopped at breakpoint 1 (nan) ..., killed by SIGKILL, crashed,
unknown, recording). A file that cannot be read is listed with the reason, not skipped.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from execmode.cli_args import CliError, Command, whole_number

DEFAULT_LIMIT = 20


class SessionListing(NamedTuple):
    path: Path
    script: str
    date: str
    ops: int | None
    size: int
    status: str


class SessionsCommand(Command):
    name = "sessions"
    help = "list recent sessions (newest first)"
    description = ("List the sessions in the session folder, newest first: date, script, "
                   "ops, size, path and status (how the script ended: finished, raised, "
                   "stopped at a breakpoint, killed, crashed, unknown, recording). The folder "
                   "is $EXECMODE_SESSION_DIR, else ~/.cache/execmode/sessions; sessions saved "
                   "elsewhere with --session are listed too.")

    def prepare_parser(self, p) -> None:
        p.add_argument("--dir", metavar="DIR",
                       help="list this folder instead of the session folder")
        p.add_argument("-n", "--limit", type=whole_number(0), default=DEFAULT_LIMIT,
                       metavar="N",
                       help=f"show at most N sessions (default {DEFAULT_LIMIT}; 0: all)")

    def run(self, args) -> int:
        return sessions_command(args)


SESSIONS = SessionsCommand()


def sessions_command(args) -> int:
    from execmode.profilers.session_dir import SessionDirError, recent_sessions, session_dir

    folder = Path(args.dir) if args.dir else session_dir()
    if args.dir and not folder.is_dir():
        raise CliError(f"{folder}: no such folder")
    try:
        paths = recent_sessions(folder if args.dir else None)  # the default: its index too
    except SessionDirError as exc:
        raise CliError(exc) from None
    if not paths:
        print(f"no sessions in {folder}")
        return 0
    shown = paths[: args.limit] if args.limit else paths
    print(f"sessions in {folder}, newest first"
          + (f" ({len(shown)} of {len(paths)}; -n 0 shows all)" if len(shown) < len(paths)
             else ""))
    print(format_listings([describe(p) for p in shown]))
    return 0


def describe(path: Path) -> SessionListing:
    """One line's facts about ``path``; an unreadable file says why in its status."""
    from execmode.profilers.errors import SessionError
    from execmode.profilers.session import open_session

    size = _size(path)
    try:
        with open_session(path) as s:
            script = Path(s.meta.get("script") or "?").name
            return SessionListing(path, script, _date(s.meta.get("created"), path),
                                  s.count("op_events"), size, s.end.text())
    except SessionError as exc:
        reason = str(exc).replace(f"{path}: ", "")
        return SessionListing(path, "?", _date(None, path), None, size,
                              f"unreadable: {reason}")


def format_listings(rows: list[SessionListing]) -> str:
    from execmode.profilers.units import fmt_bytes

    # The status last: an unreadable file's reason may be long.
    table = [("date", "script", "ops", "size", "path", "status")]
    table += [(r.date, r.script, "-" if r.ops is None else f"{r.ops:,}", fmt_bytes(r.size),
               str(r.path), r.status) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    lines = []
    for row in table:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].rjust(widths[2]),
                 row[3].rjust(widths[3]), row[4].ljust(widths[4]), row[5]]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def _date(created, path: Path) -> str:
    """The recording's start in local time; the file's modification time if meta lacks it."""
    try:
        when = datetime.fromisoformat(created).astimezone()
    except (TypeError, ValueError):
        try:
            when = datetime.fromtimestamp(path.stat().st_mtime)
        except OSError:
            return "?"
    return when.strftime("%Y-%m-%d %H:%M:%S")


def _size(path: Path) -> int:
    """The file and its write-ahead log, if any (a live or killed session's rows are there)."""
    total = 0
    for part in (path, path.with_name(path.name + "-wal")):
        try:
            total += part.stat().st_size
        except OSError:
            pass
    return total
