"""Capturing a script's stdout and stderr into the session, line by line, as it prints.

The streams are wrapped, not redirected: everything still reaches the terminal. Only
Python-level writes are seen (print, sys.stderr.write, tracebacks), not output that C
code writes straight to the file descriptors.
"""

from __future__ import annotations

import sys
import time

from execmode.profilers.writer import OutputLine

_MAX_PARTIAL = 64 * 1024  # a line without a newline is cut into pieces this long


class TeeStream:
    """A text stream that writes through to ``stream`` and records complete lines."""

    def __init__(self, stream, name: str, put):
        self._stream = stream
        self._name = name
        self._put = put
        self._partial = ""

    def write(self, text: str) -> int:
        n = self._stream.write(text)
        if text:
            self._record(text)
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
        self._tees = [TeeStream(sys.stdout, "stdout", self._put),
                      TeeStream(sys.stderr, "stderr", self._put)]
        sys.stdout, sys.stderr = self._tees
        return self

    def __exit__(self, *exc) -> bool:
        for tee in self._tees:
            tee.finish()
        # Restore only our own wrappers: the script may have replaced the streams itself.
        if sys.stdout is self._tees[0]:
            sys.stdout = self._saved[0]
        if sys.stderr is self._tees[1]:
            sys.stderr = self._saved[1]
        return False
