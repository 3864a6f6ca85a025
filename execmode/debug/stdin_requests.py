"""The script's stdin under the TUI: a pipe, and a word to the controller before each read.

The TUI owns the terminal's keys, so the script's stdin is a pipe that the TUI writes
the lines a person types into. The person must know when to type: before a read that
would block (``input()``, ``sys.stdin.readline()``, iteration, ``read()``), the agent sends
``input_requested`` with the prompt (what the script wrote on stdout since its last
newline: ``input("lr? ")`` writes "lr? " there first), and the TUI shows an input line.
A read that finds a line already waiting (typed ahead) asks nothing. What was read is
echoed on stdout (the pipe), as a terminal echoes what is typed; the session's own copy
of the output (recorded above this wrapper) does not hold the echo. Reads through
``sys.stdin.buffer`` or the file descriptor bypass this (Python-level text reads only).
"""

from __future__ import annotations

import codecs
import os
import select
import sys

_MAX_PROMPT = 200  # characters of the partial stdout line sent as the prompt


class PromptTracker:
    """Wraps sys.stdout: everything passes through; the text after the last newline is
    kept (the prompt of an ``input()`` that follows)."""

    def __init__(self, stream):
        self._stream = stream
        self.partial = ""

    def write(self, text: str) -> int:
        n = self._stream.write(text)
        if text:
            tail = text.rsplit("\n", 1)
            self.partial = (tail[-1] if len(tail) > 1 else self.partial + text)[-_MAX_PROMPT:]
        return n

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def echo(self, text: str) -> None:
        """What the script read, on stdout after its prompt, as a terminal echoes a typed
        line: the Output view reads "name? bob", then "hello bob"."""
        if text:
            self._stream.write(text if text.endswith("\n") else text + "\n")
            self._stream.flush()
        self.partial = ""

    def __getattr__(self, name):  # flush, encoding, isatty, fileno, buffer, ...
        return getattr(self._stream, name)


class RequestingStdin:
    """sys.stdin over the controller's pipe: says ``input_requested`` before a read that
    would wait for the person. It reads the file descriptor itself, so that it knows when
    a line is already waiting (a buffered text stream would hide that)."""

    def __init__(self, stream, say, prompt: PromptTracker):
        self._stream = stream              # the original: fileno, encoding, isatty...
        self._fd = stream.fileno()
        self._say = say
        self._prompt = prompt
        self._decoder = codecs.getincrementaldecoder(stream.encoding or "utf-8")("replace")
        self._text = ""
        self._eof = False

    def _fill(self) -> None:
        """Read what the pipe holds; first ask for it if it holds nothing yet."""
        if not select.select([self._fd], [], [], 0)[0]:
            self._prompt.flush()  # the prompt reaches the Output view with the request
            self._say({"type": "input_requested", "prompt": self._prompt.partial})
        chunk = os.read(self._fd, 65536)
        if not chunk:
            self._eof = True
        self._text += self._decoder.decode(chunk, final=not chunk)

    def readline(self, size: int = -1) -> str:
        while "\n" not in self._text and not self._eof and \
                (size < 0 or len(self._text) < size):
            self._fill()
        end = self._text.find("\n") + 1 or len(self._text)
        if size >= 0:
            end = min(end, size)
        line, self._text = self._text[:end], self._text[end:]
        self._prompt.echo(line)
        return line

    def read(self, size: int = -1) -> str:
        while not self._eof and (size < 0 or len(self._text) < size):
            self._fill()
        end = len(self._text) if size < 0 else size
        out, self._text = self._text[:end], self._text[end:]
        self._prompt.echo(out)
        return out

    def readlines(self, hint: int = -1) -> list[str]:
        lines = []
        while line := self.readline():
            lines.append(line)
            if 0 <= hint <= sum(map(len, lines)):
                break
        return lines

    def __iter__(self):
        return self

    def __next__(self) -> str:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def __getattr__(self, name):  # fileno, encoding, isatty, close, ...
        return getattr(self._stream, name)


def install(say) -> None:
    """Replace sys.stdout and sys.stdin with the wrappers above (the agent, under the TUI)."""
    prompt = PromptTracker(sys.stdout)
    sys.stdout = prompt
    sys.stdin = RequestingStdin(sys.stdin, say, prompt)
