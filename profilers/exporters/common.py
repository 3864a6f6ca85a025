"""Helpers shared by the exporters: output files, progress, time axes."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from execmode.profilers.errors import SessionError

PROGRESS_EVERY = 50_000  # rows between progress callbacks


@contextmanager
def output_file(out: Path, mode: str = "w"):
    """Write to a temporary file beside ``out`` and move it into place when complete, so
    a failed export never leaves half a report under the real name."""
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a report is an ordinary file
    except OSError as exc:
        raise SessionError(f"{out}: cannot write the report: {exc.strerror}") from None
    try:
        newline = "" if "b" not in mode else None
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8",
                       newline=newline) as f:
            yield f
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Progress:
    """Calls ``callback(done, total)`` every PROGRESS_EVERY rows (and at the end)."""

    def __init__(self, callback, total: int):
        self.callback = callback
        self.total = total
        self.done = 0

    def step(self) -> None:
        self.done += 1
        if self.callback is not None and self.done % PROGRESS_EVERY == 0:
            self.callback(self.done, self.total)

    def finish(self) -> None:
        if self.callback is not None:
            self.callback(self.total, self.total)


def source_text(file: str | None, line: int | None) -> str | None:
    """"file:line" or None."""
    return f"{file}:{line}" if file else None
