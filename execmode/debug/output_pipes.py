"""The script's stdout and stderr, read line by line in the order the script wrote them."""

from __future__ import annotations

import os
import select


def read_lines(pipes, on_line) -> None:
    """Call ``on_line(stream, line)`` for each whole line of ``pipes`` ((stream name, pipe)
    pairs, stdout first) until every pipe ends; closes them.

    Both pipes in one thread: a thread per pipe raced, and the lines a script printed just
    before an uncaught exception came after its traceback. The script's streams are
    unbuffered, so what it wrote to stdout before writing to stderr is already in the pipe
    when stderr's bytes are: whatever stdout holds is read (to its end) before stderr is."""
    order = {stream: i for i, (stream, _) in enumerate(pipes)}  # stdout first
    open_pipes = {pipe.fileno(): [stream, pipe, b""] for stream, pipe in pipes}
    while open_pipes:
        ready, _, _ = select.select(list(open_pipes), [], [])
        for fd in sorted(ready, key=lambda fd: order[open_pipes[fd][0]]):
            while fd in open_pipes and _read_chunk(open_pipes, fd, on_line):
                if not select.select([fd], [], [], 0)[0]:
                    break


def _read_chunk(open_pipes: dict, fd: int, on_line) -> bool:
    """Read what ``fd`` holds and hand on its whole lines; False at its end."""
    entry = open_pipes[fd]
    stream, pipe, partial = entry
    chunk = os.read(fd, 65536)
    lines = (partial + chunk).split(b"\n")
    entry[2] = lines.pop() if chunk else b""
    if not chunk and lines == [b""]:
        lines = []
    for raw in lines:
        on_line(stream, raw.decode("utf-8", "replace"))
    if not chunk:
        del open_pipes[fd]
        pipe.close()
    return bool(chunk)
