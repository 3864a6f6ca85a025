"""The in-code profiling API: ``with em.profile() as prof: ...``.

    import execmode as em

    with em.profile() as prof:
        loss = train_step(x, y)
    print(prof.table(sort_by="total_time"))
    prof.export("step.html")            # or .trace.json, .speedscope.json, .json, .csv, .md

The recording goes to a session file (a temporary one unless ``path`` is given), the
same kind the CLI writes, so everything a report or the TUI can show is available here.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import traceback
from pathlib import Path

from execmode.profilers.errors import SessionError
from execmode.profilers.recorder import Recorder
from execmode.profilers.report import totals_table
from execmode.profilers.session import Session, open_session
from execmode.profilers.session_end import SessionEnd
from execmode.profilers.store import SESSION_SUFFIX
from execmode.profilers.tables import TextTable

_counter = itertools.count()


def profile(path: str | os.PathLike | None = None, *, summaries: bool = False,
            memory: bool = True, calibrate: bool = True, kernel_rows: bool = False,
            overwrite: bool = False) -> Profile:
    """Record the eager ops and graph-mode events of a ``with`` block into a session.

    ``path``: the session file to create (default: a new file in the temp folder, kept
    after the block so it can be exported or opened later). ``summaries``: also store
    min/max/mean/std and NaN/Inf counts of every op's output (costs a pass over each
    output). ``memory``: track live and peak bytes. ``calibrate``: measure the recorder's
    own cost first (once per machine and code) so reports can state it. ``kernel_rows``: a
    row per run of every compiled step (a timeline of kernels; the plans then run step
    by step in Python) instead of only each step's sums, which compiled code keeps itself.
    ``overwrite``: replace ``path`` if it is a session already (never another file). A
    session at a path of the caller's choosing is listed by ``execmode sessions``.
    """
    return Profile(path, summaries=summaries, memory=memory, calibrate=calibrate,
                   kernel_rows=kernel_rows, overwrite=overwrite)


class Profile:
    """A recording in progress or done; see :func:`profile`."""

    def __init__(self, path=None, *, summaries: bool = False, memory: bool = True,
                 calibrate: bool = True, kernel_rows: bool = False, overwrite: bool = False):
        self.path = Path(path) if path is not None else _temporary_path()
        self._chosen, self._overwrite = path is not None, overwrite
        self._options = {"summaries": summaries, "memory": memory, "calibrate": calibrate,
                         "kernel_rows": kernel_rows}
        self.recorder: Recorder | None = None
        self._session: Session | None = None

    def __enter__(self) -> Profile:
        if self.recorder is not None:
            raise RuntimeError("a Profile records once; make a new em.profile() for another")
        if self._chosen:
            from execmode.profilers.session_dir import SessionDirError, remove_session

            if self._overwrite and self.path.exists():
                try:
                    remove_session(self.path)
                except SessionDirError as exc:
                    raise SessionError(str(exc)) from None
        self.recorder = Recorder(self.path, meta={"source": "em.profile"}, **self._options)
        self.recorder.start()
        if self._chosen:  # listed by `execmode sessions` (session_dir.py)
            from execmode.profilers.session_dir import remember

            remember(self.path)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.recorder is not None:
            if not self.recorder.writer.closed:
                # How the block ended: finished, or the exception that left it and the
                # user's line that raised it (session_end.py).
                self.recorder.set_meta("end", block_end(exc).to_json())
            self.recorder.close()
        return False

    # --- reading ----------------------------------------------------------------------
    @property
    def session(self) -> Session:
        """The session, opened for reading (flushed first if still recording)."""
        if self.recorder is None:
            raise RuntimeError("nothing recorded yet: use `with em.profile() as prof:` first")
        if not self.recorder.writer.closed:
            self.recorder.flush()
        if self._session is None:
            self._session = open_session(self.path)
        else:
            self._session.refresh()
        return self._session

    def table(self, sort_by: str = "total_time", group_by: str = "op",
              limit: int | None = 20) -> TextTable:
        """A printable table of eager ops aggregated by ``group_by`` ("op", "scope",
        "location", "op_location"), sorted by ``sort_by`` ("total_time", "count",
        "mean_time", "max_time", "bytes", "name"). ``.rows`` holds the numbers."""
        totals = self.session.op_totals(group_by=group_by, sort_by=sort_by, limit=limit)
        title = f"eager ops by {group_by}, sorted by {sort_by}"
        return TextTable(totals_table("ops", title, totals, group_by), totals)

    def kernel_table(self, sort_by: str = "total_time", limit: int | None = 20) -> TextTable:
        """Like :meth:`table`, for graph-mode kernels."""
        totals = self.session.kernel_totals(sort_by=sort_by, limit=limit)
        return TextTable(totals_table("kernels", f"graph kernels, sorted by {sort_by}",
                                       totals, "graph/kernel"), totals)

    def summary(self) -> dict:
        """Headline numbers: op count and time, wall time, peak memory, profiler cost."""
        return self.session.summary()

    def export(self, path: str | os.PathLike, format: str | None = None, **options) -> Path:
        """Write a report; the format comes from the suffix of ``path`` unless given
        ("html", "chrome", "speedscope", "json", "csv", "md")."""
        from execmode.profilers.exporters import export

        return export(self.session, path, format, **options)

    def mark(self, name: str, text: str = "") -> None:
        """Put a named mark on the timeline (shown on the python track of traces)."""
        if self.recorder is not None:
            self.recorder.mark(name, text)

    def close(self) -> None:
        """Close the reading connection (the session file stays)."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def __repr__(self) -> str:
        state = "recording" if self.recorder and not self.recorder.writer.closed else "done"
        return f"<execmode Profile {state} at {self.path}>"


def block_end(exc: BaseException | None) -> SessionEnd:
    """The end of an ``em.profile()`` block: "finished", or "raised" (or "interrupted")
    with the exception's type, its first line and the user's line that raised it."""
    if exc is None:
        return SessionEnd("finished", closed_by="script")
    from execmode.source import is_internal_file

    file = line = None
    tb = exc.__traceback__
    while tb is not None:  # the innermost frame outside execmode
        if not is_internal_file(tb.tb_frame.f_code.co_filename):
            file, line = tb.tb_frame.f_code.co_filename, tb.tb_lineno
        tb = tb.tb_next
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    kind = "interrupted" if isinstance(exc, KeyboardInterrupt) else "raised"
    return SessionEnd(kind, error=type(exc).__name__, message=text.splitlines()[0] if text
                      else type(exc).__name__, file=file, line=line, closed_by="script")


def _temporary_path() -> Path:
    folder = Path(tempfile.gettempdir()) / "execmode-profiles"
    while True:
        path = folder / f"profile-{os.getpid()}-{next(_counter)}{SESSION_SUFFIX}"
        if not path.exists():  # a file left by an earlier process with the same pid
            return path
