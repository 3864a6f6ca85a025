"""speedscope JSON (https://www.speedscope.app): evented profiles of ops and kernels, and
the py-spy samples as sampled profiles.

* "eager ops": each op is a frame named after the op at its source line, nested inside
  frames for its named scopes ("mlp" > "fc1" > matmul), so speedscope's left-heavy view
  groups time by scope, then op.
* "graph kernels": each executed plan step inside a frame for its graph.
* "py-spy <thread>": one sampled profile per thread; the root frame is the sample's
  category ("[user code]", "[kernel / library execution]", ...), weights in seconds.

Written as rows stream by: "profiles" come first in the file and "shared.frames" last,
since the frame table is complete only at the end (JSON objects have no key order).
"""

from __future__ import annotations

import json
from pathlib import Path

from execmode.profilers.exporters.common import Progress, output_file
from execmode.profilers.session import Session
from execmode.profilers.stacks import CATEGORIES, parse_frame

import execmode

SCHEMA = "https://www.speedscope.app/file-format-schema.json"


class _Frames:
    """The shared frame table: one entry per distinct (name, file, line)."""

    def __init__(self) -> None:
        self.index: dict[tuple, int] = {}
        self.frames: list[dict] = []

    def get(self, name: str, file: str | None = None, line: int | None = None) -> int:
        key = (name, file, line)
        i = self.index.get(key)
        if i is None:
            i = self.index[key] = len(self.frames)
            frame = {"name": name}
            if file:
                frame["file"] = file
            if line is not None:
                frame["line"] = line
            self.frames.append(frame)
        return i


class _Evented:
    """Writes one evented profile's open/close events, keeping nesting and time order."""

    def __init__(self, f, frames: _Frames):
        self._f = f
        self._frames = frames
        self._first = True
        self._stack: list[tuple[str, int]] = []  # open (path key, frame) groups
        self.last = 0

    def _emit(self, kind: str, frame: int, at: int) -> None:
        at = max(at, self.last)  # never step back in time (clock jitter, overlaps)
        self.last = at
        if not self._first:
            self._f.write(",")
        self._first = False
        self._f.write(f'{{"type":"{kind}","frame":{frame},"at":{at}}}')

    def leaf(self, groups: list[tuple[str, str]], frame: int, start: int, end: int) -> None:
        """One op/kernel inside ``groups`` (outermost first: (key, frame name) pairs)."""
        keep = 0
        while (keep < len(self._stack) and keep < len(groups)
               and self._stack[keep][0] == groups[keep][0]):
            keep += 1
        self.close_to(keep, start)
        for key, name in groups[keep:]:
            group_frame = self._frames.get(name)
            self._emit("O", group_frame, start)
            self._stack.append((key, group_frame))
        self._emit("O", frame, start)
        self._emit("C", frame, end)

    def close_to(self, depth: int, at: int) -> None:
        while len(self._stack) > depth:
            _, frame = self._stack.pop()
            self._emit("C", frame, at)


def export_speedscope(session: Session, out: Path, *, progress=None) -> Path:
    """Write ``session`` as a speedscope file to ``out``."""
    t0 = session.t0_ns
    frames = _Frames()
    tick = Progress(progress, session.count("op_events") + session.count("kernels"))
    script = session.meta.get("script") or "recording"
    # The file's name is what speedscope shows above every view: it says how the script
    # ended (profilers/session_end.py), the one place this format has for it.
    name = f"{script} ({session.end.text()})"
    profiles = 0
    with output_file(out) as f:
        f.write(f'{{"$schema": "{SCHEMA}", "name": {json.dumps(name)}, '
                f'"exporter": "execmode {execmode.__version__}", "activeProfileIndex": 0, '
                '"profiles": [\n')
        profiles += _write_ops(f, session, frames, t0, tick)
        if session.count("kernels"):
            f.write(",\n")
            profiles += _write_kernels(f, session, frames, t0, tick)
        rate = (session.meta.get("pyspy") or {}).get("rate") or 100
        for profile in sampled_profiles(session, frames, rate):
            f.write(",\n")
            f.write(json.dumps(profile, separators=(",", ":")))
            profiles += 1
        f.write('\n], "shared": {"frames": ')
        f.write(json.dumps(frames.frames, separators=(",", ":")))
        f.write("}}\n")
    tick.finish()
    return out


def _write_ops(f, session: Session, frames: _Frames, t0: int, tick: Progress) -> int:
    f.write('{"type": "evented", "name": "eager ops", "unit": "nanoseconds", '
            '"startValue": 0, "events": [')
    ev = _Evented(f, frames)
    for op in session.ops():
        start = op.start_ns - t0
        parts = op.scope.split("/") if op.scope else []
        groups = [("/".join(parts[: i + 1]), part) for i, part in enumerate(parts)]
        ev.leaf(groups, frames.get(op.op, op.file, op.line), start, start + op.dur_ns)
        tick.step()
    ev.close_to(0, ev.last)
    f.write(f'], "endValue": {ev.last}}}')
    return 1


def _write_kernels(f, session: Session, frames: _Frames, t0: int, tick: Progress) -> int:
    f.write('{"type": "evented", "name": "graph kernels", "unit": "nanoseconds", '
            '"startValue": 0, "events": [')
    ev = _Evented(f, frames)
    for k in session.kernels():
        start = k.start_ns - t0
        ev.leaf([(k.graph_id, f"graph {k.graph_id}")],
                frames.get(k.kernel, k.file, k.line), start, start + k.dur_ns)
        tick.step()
    ev.close_to(0, ev.last)
    f.write(f'], "endValue": {ev.last}}}')
    return 1


def sampled_profiles(session: Session, frames: _Frames, rate: int) -> list[dict]:
    """One sampled profile per py-spy thread, weights in seconds (count / rate)."""
    by_thread: dict[str, dict] = {}
    for s in session.samples():
        p = by_thread.get(s.thread)
        if p is None:
            name = f"py-spy {s.thread}" if s.thread else "py-spy"
            p = by_thread[s.thread] = {"type": "sampled", "name": name, "unit": "seconds",
                                       "startValue": 0, "endValue": 0, "samples": [],
                                       "weights": []}
        stack = [frames.get(f"[{CATEGORIES.get(s.category, s.category)}]")]
        for frame in s.frames:
            name, file, line = parse_frame(frame)
            stack.append(frames.get(name, file or None, line))
        p["samples"].append(stack)
        p["weights"].append(s.count / rate)
    for p in by_thread.values():
        p["endValue"] = sum(p["weights"])
    return list(by_thread.values())
