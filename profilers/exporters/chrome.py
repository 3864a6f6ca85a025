"""Chrome trace event JSON, for Perfetto (ui.perfetto.dev) and chrome://tracing.

One process (the script) with four named tracks: eager ops, graph kernels, compile and
python (tracing, passes, graph breaks, retraces, marks), one more compile track per
translation unit compiled at the same time as another (so that slices nest), and one
more eager-ops track per other thread of the script that ran ops. Ops and kernels are complete
("X") events with their shapes and source line in ``args``; memory is a counter ("C")
track per device; "M" metadata events name the process and the tracks; one global
instant at the end says how the script ended (also in ``otherData``: ``status``, ``end``).
Times are microseconds from the session start, as the format wants.

The sessions of a distributed run (one per rank, in one folder: ``execmode launch
--profile``) go into one trace, one process per rank ("rank 0: train.py" ...), their
times on one clock: microseconds from the earliest rank's start (the ranks' clocks are
the host's monotonic clock, which every process on one host shares).

The file is written as the rows stream by, so a 1M-op session never sits in memory.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from execmode.profilers.exporters.common import Progress, output_file, source_text
from execmode.profilers.session import Session

PID = 1
TRACKS = {  # tid -> track name, in display order
    1: "eager ops",
    2: "graph kernels",
    3: "compile",
    4: "python",
}
EAGER, KERNELS, COMPILE, PYTHON = 1, 2, 3, 4
THREAD_TRACKS = 100  # + the thread's number in the session: eager ops of another thread
# Translation units compiled at the same time (codegen/units.py's pool) overlap: each gets
# a track of its own, COMPILE_LANES + 1, + 2 ... beside "compile", so that slices nest.
COMPILE_LANES = 30
_INSTANT_KINDS = {"graph_break", "retrace", "mark", "memory_plan"}


def export_chrome(session: Session, out: Path, *, progress=None) -> Path:
    """Write ``session`` as a Chrome trace JSON object to ``out``."""
    tick = Progress(progress, _rows(session))
    with output_file(out) as f:
        f.write('{"displayTimeUnit": "ns", "otherData": ')
        f.write(json.dumps(_other_data(session), default=str))
        f.write(', "traceEvents": [\n')
        _write_session(_EventWriter(f), session, PID, session.t0_ns, "", tick)
        f.write("\n]}\n")
    tick.finish()
    return out


def export_chrome_ranks(sessions: list, out: Path, *, progress=None) -> Path:
    """Write the sessions of a distributed run (``(rank, Session)`` pairs) as one Chrome
    trace: a process per rank, every time from the earliest start."""
    tick = Progress(progress, sum(_rows(s) for _, s in sessions))
    base = min(s.t0_ns for _, s in sessions)
    with output_file(out) as f:
        f.write('{"displayTimeUnit": "ns", "otherData": ')
        other = {"ranks": {str(rank): _other_data(s) for rank, s in sessions}}
        f.write(json.dumps(other, default=str))
        f.write(', "traceEvents": [\n')
        writer = _EventWriter(f)
        for rank, session in sessions:
            _write_session(writer, session, PID + rank, base, f"rank {rank}: ", tick)
        f.write("\n]}\n")
    tick.finish()
    return out


def _rows(session: Session) -> int:
    return session.count("op_events") + session.count("kernels")


def _other_data(session: Session) -> dict:
    end = session.end
    return {"script": session.meta.get("script") or "recording", "session": str(session.path),
            "status": end.text(), "end": end.to_json(),
            "calibration": session.meta.get("calibration"),
            "pyspy": session.meta.get("pyspy"),
            "samples_by_category": session.category_totals()}


def _write_session(writer, session: Session, pid: int, t0: int, prefix: str, tick) -> None:
    """One session's events as process ``pid``, times from ``t0``."""
    script = session.meta.get("script") or "recording"
    for event in metadata_events(script, session.meta.get("threads") or {}, pid=pid,
                                 prefix=prefix):
        writer.write(event)
    for op in session.ops():
        writer.write(op_event(op, t0, pid))
        tick.step()
    for k in session.kernels():
        writer.write(kernel_event(k, t0, pid))
        tick.step()
    compiles = []
    for ev in session.events():
        if ev.kind == "compile":
            compiles.append(ev)
        else:
            writer.write(other_event(ev, t0, pid))
    for event in compile_events(compiles, t0, pid):
        writer.write(event)
    for m in session.memory():
        writer.write({"name": f"memory {m.device}", "ph": "C", "ts": _us(m.ts_ns - t0),
                      "pid": pid, "tid": 0,
                      "args": {"live_bytes": m.live_bytes, "peak_bytes": m.peak_bytes}})
    # One rank's end is its own process's ("p"), not a line across every rank.
    writer.write(end_event(session.end, max(0, session.end_ns() - t0), pid,
                           "p" if prefix else "g"))


class _EventWriter:
    def __init__(self, f):
        self._f = f
        self._first = True

    def write(self, event: dict) -> None:
        if not self._first:
            self._f.write(",\n")
        self._first = False
        self._f.write(json.dumps(event, separators=(",", ":"), default=str))


def compile_events(compiles: list, t0: int, pid: int = PID) -> list[dict]:
    """The compile events, each on the first compile track free at its start (the
    first of parallel compiles on "compile", the others on "compile (in parallel N)"
    tracks, named here): a track's slices never overlap."""
    out, lanes = [], []  # lanes: the end of each track's last slice
    for ev in sorted(compiles, key=lambda e: (e.start_ns, e.end_ns)):
        lane = next((i for i, end in enumerate(lanes) if end <= ev.start_ns), None)
        if lane is None:
            lanes.append(ev.end_ns)
            lane = len(lanes) - 1
        else:
            lanes[lane] = ev.end_ns
        event = other_event(ev, t0, pid)
        if lane:
            event["tid"] = COMPILE_LANES + lane
        out.append(event)
    for lane in range(1, len(lanes)):
        out.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid,
                    "tid": COMPILE_LANES + lane,
                    "args": {"name": f"compile (in parallel {lane + 1})"}})
        out.append({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": pid,
                    "tid": COMPILE_LANES + lane, "args": {"sort_index": COMPILE + lane}})
    return out


def metadata_events(script: str, threads: dict | None = None, *, pid: int = PID,
                    prefix: str = "") -> list[dict]:
    """Names and order of the process and its tracks; ``threads`` is meta "threads"
    ({"1": "Thread-1 (worker)"})."""
    events = [{"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0,
               "args": {"name": f"{prefix}execmode: {script}"}},
              {"name": "process_sort_index", "ph": "M", "ts": 0, "pid": pid, "tid": 0,
               "args": {"sort_index": pid}}]
    tracks = dict(TRACKS)
    for number, name in (threads or {}).items():
        if str(number).isdigit():
            tracks[THREAD_TRACKS + int(number)] = f"eager ops: {name}"
    for tid, name in tracks.items():
        events.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid,
                       "args": {"name": name}})
        events.append({"name": "thread_sort_index", "ph": "M", "ts": 0, "pid": pid,
                       "tid": tid, "args": {"sort_index": tid}})
    return events


def end_event(end, at_ns: int, pid: int = PID, scope: str = "g") -> dict:
    """How the script ended (profilers/session_end.py), as an instant across every track
    at the end of the recording: "stopped at breakpoint 1 (nan) after kernel k7 ..."."""
    return {"name": f"end: {end.text()}", "cat": "end", "ph": "i", "s": scope,
            "ts": _us(at_ns), "pid": pid, "tid": PYTHON, "args": end.to_json()}


def op_event(op, t0: int, pid: int = PID) -> dict:
    args = {"seq": op.seq, "inputs": op.inputs, "output": op.output, "bytes": op.bytes,
            "device": op.device}
    if op.scope:
        args["scope"] = op.scope
    if op.file:
        args["source"] = source_text(op.file, op.line)
        args["function"] = op.function
    if op.attrs:
        args["attrs"] = op.attrs
    if op.v_nan is not None:
        args["summary"] = {"min": _stat(op.v_min), "max": _stat(op.v_max),
                           "mean": op.v_mean, "std": op.v_std, "nan": op.v_nan,
                           "inf": op.v_inf}
    return {"name": op.op, "cat": "op", "ph": "X", "ts": _us(op.start_ns - t0),
            "dur": _us(op.dur_ns), "pid": pid,
            "tid": EAGER if op.thread is None else THREAD_TRACKS + op.thread, "args": args}


def _stat(value):
    """inf/-inf as the strings the debugger uses: JSON has no Infinity (Perfetto and
    Chrome's trace viewer refuse the file)."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def kernel_event(k, t0: int, pid: int = PID) -> dict:
    # "seq" (an op's number) and "id" (a kernel run's) are the numbers the TUI and the
    # session show (docs/session-store.md, "How ops and kernels are numbered").
    args = {"id": k.id, "graph_id": k.graph_id, "step_kind": k.step_kind,
            "member_ops": k.member_ops, "member_nodes": k.member_nodes, "bytes": k.bytes}
    if k.output:
        args["output"] = k.output
    if k.device:
        args["device"] = k.device
    if k.file:
        args["source"] = source_text(k.file, k.line)
    return {"name": k.kernel, "cat": "kernel", "ph": "X", "ts": _us(k.start_ns - t0),
            "dur": _us(k.dur_ns), "pid": pid, "tid": KERNELS, "args": args}


def other_event(ev, t0: int, pid: int = PID) -> dict:
    d = ev.data
    tid = COMPILE if ev.kind == "compile" else PYTHON
    name = _event_name(ev.kind, d)
    args = {k: v for k, v in d.items() if k not in ("source", "ir_text", "ir_json", "diff")}
    if isinstance(args.get("kernels"), list):  # a compile's children, without their source
        args["kernels"] = [{k: v for k, v in child.items() if k != "source"}
                           for child in args["kernels"] if isinstance(child, dict)]
    base = {"name": name, "cat": ev.kind, "pid": pid, "tid": tid, "ts": _us(ev.start_ns - t0),
            "args": args}
    if ev.kind in _INSTANT_KINDS or ev.end_ns <= ev.start_ns:
        return {**base, "ph": "i", "s": "t", "dur": 0}
    return {**base, "ph": "X", "dur": _us(ev.end_ns - ev.start_ns)}


def _event_name(kind: str, d: dict) -> str:
    if kind == "pass":
        return f"pass {d.get('name', '?')}"
    if kind == "compile":
        if isinstance(d.get("kernels"), list):  # one unit, its kernels as children
            names = ", ".join(str(k.get("kernel", "?")) for k in d["kernels"][:4]
                              if isinstance(k, dict))
            more = "..." if len(d["kernels"]) > 4 else ""
            return f"compile {d.get('what', 'kernels')} {d.get('graph_id', '?')}: {names}{more}"
        return f"compile {d.get('kernel', '?')}"
    if kind == "graph_break":
        return f"graph break: {d.get('reason', '?')}"
    if kind in ("trace", "retrace"):
        return f"{kind} {d.get('function', '?')}"
    if kind == "mark":
        return str(d.get("name", "mark"))
    return kind


def _us(ns: int) -> float:
    return round(ns / 1000, 3)
