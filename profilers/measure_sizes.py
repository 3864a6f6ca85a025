"""The same work in two runs of one script: measure()'s sizes written once, then replayed.

:func:`execmode.profilers.measure.measure` sizes its warm-up and its rounds by time. That
is right for one run, and wrong when a script is compared with itself under different
conditions (plainly and under ``execmode profile``: benchmarks/bench_profiler_cost.py):
the slower run makes fewer calls, its wall time hardly moves, and the difference of the
two wall times is no longer what the condition cost.

With ``EXECMODE_MEASURE_SIZES=PATH`` in the environment, a run that finds no file at PATH
writes there, one JSON line per ``measure()`` call in the order of the calls, the warm-up
calls and the calls per round it chose for each candidate; a run that finds the file
makes exactly those calls. A run whose ``measure()`` calls differ from the written ones
(other candidates, more calls) raises: its wall time would not be comparable.
"""

from __future__ import annotations

import json
import os

ENV = "EXECMODE_MEASURE_SIZES"


class SizesDiffer(RuntimeError):
    """This run's measure() calls are not the ones the sizes file was written for."""


class _Sizes:
    def __init__(self, path: str):
        self.path = path
        self.replaying = os.path.exists(path)
        self.lines: list = []
        if self.replaying:
            with open(path, encoding="utf-8") as f:
                self.lines = [json.loads(line) for line in f if line.strip()]
        self.next = 0

    def take(self, names: list) -> dict | None:
        """The next written sizes ``{"warmup": [...], "calls": [...]}`` for candidates
        ``names``, or None when this run writes them."""
        if not self.replaying:
            return None
        if self.next >= len(self.lines):
            raise SizesDiffer(f"{ENV}={self.path}: this run measures more often than the "
                              f"run that wrote it ({len(self.lines)} measure() calls)")
        entry = self.lines[self.next]
        self.next += 1
        if entry["names"] != [str(n) for n in names]:
            raise SizesDiffer(f"{ENV}={self.path}: measure() call {self.next} times "
                              f"{names}, the written run timed {entry['names']}")
        return entry

    def put(self, names: list, warmup: list, calls: list) -> None:
        if self.replaying:
            return
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"names": [str(n) for n in names], "warmup": warmup,
                                "calls": calls}) + "\n")


_state: dict = {}


def current() -> _Sizes | None:
    """The sizes of this process's ``EXECMODE_MEASURE_SIZES``, or None when it is unset."""
    path = os.environ.get(ENV, "").strip()
    if not path:
        return None
    sizes = _state.get(path)
    if sizes is None:
        sizes = _state[path] = _Sizes(path)
    return sizes
