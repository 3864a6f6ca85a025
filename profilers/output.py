"""Capturing a script's stdout and stderr into the session, line by line, as it prints.

The streams are wrapped, not redirected: everything still reaches the terminal. Only
Python-level writes are seen (print, sys.stderr.write, tracebacks), not output that C
code writes straight to the file descriptors.

A session keeps the first ``EXECMODE_OUTPUT_MAX_MB`` MiB of output (default 8: about
80,000 lines of 100 characters; the write that crosses the limit is kept whole), then one
line saying the rest was not recorded, and meta
``output_truncated`` with the count at the end. The rest still reaches the terminal, at
the cost of one counter per write: a script printing 100 MB runs at python's speed with
bounded memory (a row per line would queue them all for SQLite).
"""

from __future__ import annotations

import os
import sys
import time

from execmode.profilers import store
from execmode.profilers.writer import MetaValue, OutputLine

_MAX_PARTIAL = 64 * 1024  # a line without a newline is cut into pieces this long
DEFAULT_MAX_MB = 8


def recorded_output_limit() -> int:
    """Bytes of output a session records: ``EXECMODE_OUTPUT_MAX_MB`` MiB (default 8)."""
    text = os.environ.get("EXECMODE_OUTPUT_MAX_MB", "").strip()
    try:
        mib = float(text) if text else DEFAULT_MAX_MB
    except ValueError:
        mib = DEFAULT_MAX_MB  # a typo must not stop the script; the default applies
    return max(0, int(mib * 2**20))


class _Budget:
    """Characters of output left to record, shared by stdout and stderr."""

    def __init__(self, limit: int):
        self.limit = limit
        self.left = limit
        self.dropped = 0  # characters passed through but not recorded
        # Time spent recording the writes (past writing them through): the recorder's
        # cost inside the script's time, stated with the runner's (profiler_cost.py).
        self.recording_ns = 0


class TeeStream:
    """A text stream that writes through to ``stream`` and records complete lines."""

    def __init__(self, stream, name: str, put, budget: _Budget | None = None):
        self._stream = stream
        self._name = name
        self._put = put
        self._partial = ""
        self._budget = budget if budget is not None else _Budget(recorded_output_limit())

    def write(self, text: str) -> int:
        n = self._stream.write(text)
        wrote = time.perf_counter_ns()
        budget = self._budget
        if budget.left <= 0:
            budget.dropped += len(text)
        elif text:
            budget.left -= len(text)
            self._record(text)
            if budget.left <= 0:  # this write is the last recorded (whole)
                self.finish()
                self._put(OutputLine(time.perf_counter_ns(), "stderr", (
                    f"[execmode: the script printed {budget.limit / 2**20:g} MiB; further "
                    "output reaches the terminal but is not recorded in the session "
                    "(EXECMODE_OUTPUT_MAX_MB)]")))
        budget.recording_ns += time.perf_counter_ns() - wrote
        return n

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._stream.flush()

    def finish(self) -> None:
        """Record a last line that had no newline."""
        if self._partial:
            self._put(OutputLine(time.perf_counter_ns(), self._name, self._partial))
            self._partial = ""

    def _record(self, text: str) -> None:
        text = self._partial + text
        lines = text.split("\n")
        self._partial = lines.pop()
        now = time.perf_counter_ns()
        for line in lines:
            self._put(OutputLine(now, self._name, line))
        if len(self._partial) > _MAX_PARTIAL:
            self._put(OutputLine(now, self._name, self._partial))
            self._partial = ""

    def __getattr__(self, name):  # encoding, isatty, fileno, buffer, ...
        return getattr(self._stream, name)


class captured_output:  # noqa: N801 - a context manager, named like contextlib's helpers
    """``with captured_output(put):`` tees sys.stdout and sys.stderr into ``put``."""

    def __init__(self, put):
        self._put = put
        self._saved: tuple = ()
        self._tees: list[TeeStream] = []

    def __enter__(self):
        self._saved = (sys.stdout, sys.stderr)
        self._budget = _Budget(recorded_output_limit())
        self._tees = [TeeStream(sys.stdout, "stdout", self._put, self._budget),
                      TeeStream(sys.stderr, "stderr", self._put, self._budget)]
        sys.stdout, sys.stderr = self._tees
        return self

    @property
    def recording_ns(self) -> int:
        """Time the script's writes spent being recorded (besides being written)."""
        return self._budget.recording_ns if self._tees else 0

    def __exit__(self, *exc) -> bool:
        for tee in self._tees:
            tee.finish()
        if self._budget.dropped:
            self._put(MetaValue("output_truncated", store.to_json(
                {"recorded_chars": self._budget.limit - self._budget.left,
                 "not_recorded_chars": self._budget.dropped})))
        # Restore only our own wrappers: the script may have replaced the streams itself.
        if sys.stdout is self._tees[0]:
            sys.stdout = self._saved[0]
        if sys.stderr is self._tees[1]:
            sys.stderr = self._saved[1]
        return False
