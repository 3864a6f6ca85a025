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
    a failed export never leaves half a report under the real name. A missing folder is
    refused, not created (py-spy's and memray's ``-o``, torch.profiler's export do the
    same): a typo in a path should not quietly grow a tree of folders."""
    out = Path(out)
    check_output_folder(out)
    try:
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


def check_output_folder(out: Path) -> None:
    """Raise SessionError naming the folder when ``out``'s folder is missing or a file."""
    folder = Path(out).parent
    if not folder.is_dir():
        if folder.exists():
            raise SessionError(f"{out}: {folder} is a file, not a folder; write the report "
                               "elsewhere")
        raise SessionError(f"{out}: the folder {folder} does not exist; create it first "
                           f"(mkdir -p {folder}) or write the report elsewhere")


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
