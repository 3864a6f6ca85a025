"""Room kept back for closing a session when its disk fills up.

When a write fails (a full disk, a quota, ``EXECMODE_SESSION_MAX_MB``), the writer stops
recording rows but must still commit a few small meta rows - that the session is partial,
how the script ended, its end stamps - and SQLite needs free pages for that (each commit
appends frames to the ``-wal`` file). So each session is created with a small reserve
file next to it, ``.NAME.reserve`` (``RESERVE_BYTES``, allocated for real). The writer
deletes it at the first failure, which frees just enough room for those rows, and at
close in any case. A recording process that is killed leaves it behind, as it leaves its
``-wal`` file; nothing reads it.
"""

from __future__ import annotations

import os
from pathlib import Path

RESERVE_BYTES = 256 * 1024


class Reserve:
    def __init__(self, session: Path):
        self.path = session.with_name(f".{session.name}.reserve")
        self.held = False

    def take(self) -> None:
        """Allocate the room now; a disk already too full for it just has no reserve."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError:
            return
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, RESERVE_BYTES)
            else:
                os.write(fd, b"\0" * RESERVE_BYTES)
            self.held = True
        except OSError:
            self.held = False
        finally:
            os.close(fd)
        if not self.held:
            self.release()

    def release(self) -> None:
        """Give the room back (idempotent)."""
        self.held = False
        try:
            os.unlink(self.path)
        except OSError:
            pass
