"""One table of a session as CSV, for spreadsheets and pandas.

``table`` picks which: "ops" (every eager op, the default), "op_totals", "kernel_totals"
(each compiled step's runs summed by the kernel clock), "kernels" (a row per kernel run,
recorded with --kernel-rows), "memory", "comparisons", "samples" or "session" (field,
value rows: what ran and how it ended, profilers/session_end.py; a CSV of rows has no
other place for it).
"""

from __future__ import annotations

import csv
from pathlib import Path

from execmode.profilers.errors import SessionError
from execmode.profilers.exporters.common import Progress, output_file
from execmode.profilers.session import Session
from execmode.profilers.store_rows import OpRow

TABLES = ("ops", "op_totals", "kernel_totals", "kernels", "memory", "comparisons", "samples",
          "session")


def export_csv(session: Session, out: Path, *, table: str = "ops", progress=None) -> Path:
    """Write one table of ``session`` to ``out`` as CSV (header row first)."""
    if table not in TABLES:
        raise SessionError(f"unknown CSV table {table!r}; choose one of {', '.join(TABLES)}")
    header, rows, total = _table(session, table)
    tick = Progress(progress, total)
    with output_file(out) as f:
        w = csv.writer(f)
        w.writerow(header)
        for row in rows:
            w.writerow(row)
            tick.step()
    tick.finish()
    return out


def _table(session: Session, table: str):
    t0 = session.t0_ns
    if table == "ops":
        header = list(OpRow._fields)
        header[header.index("start_ns")] = "start_ns_from_session_start"
        rows = (r._replace(start_ns=r.start_ns - t0) for r in session.ops())
        return header, rows, session.count("op_events")
    if table == "op_totals":
        header = ["op", "calls", "total_ns", "mean_ns", "min_ns", "max_ns", "bytes", "share"]
        rows = [[t.name, t.count, t.total_ns, round(t.mean_ns), t.min_ns, t.max_ns, t.bytes,
                 round(t.share, 6)] for t in session.op_totals()]
        return header, rows, len(rows)
    if table == "kernels":
        # id: the kernel run's number, as the TUI shows it (ops: seq, their number).
        header = ["id", "graph_id", "kernel", "step_kind", "member_ops", "member_nodes",
                  "start_ns_from_session_start", "dur_ns", "bytes", "output", "device", "file",
                  "line"]
        rows = ([k.id, k.graph_id, k.kernel, k.step_kind, " ".join(map(str, k.member_ops)),
                 " ".join(map(str, k.member_nodes)), k.start_ns - t0, k.dur_ns, k.bytes,
                 k.output, k.device, k.file, k.line] for k in session.kernels())
        return header, rows, session.count("kernels")
    if table == "kernel_totals":
        header = ["graph_id", "plan", "step", "kernel", "step_kind", "member_ops", "calls",
                  "loop_calls", "total_ns", "min_ns", "max_ns", "bytes", "output", "device",
                  "file", "line"]
        rows = [[k["graph_id"], k["clock"], k["step_index"], k["kernel"], k["step_kind"],
                 " ".join(k["member_ops"]), k["calls"], k["loop_calls"], k["total_ns"],
                 k["min_ns"], k["max_ns"], k["bytes"], k["output"], k["device"], k["file"],
                 k["line"]] for k in session.kernel_sums()]
        return header, rows, len(rows)
    if table == "memory":
        header = ["ts_ns_from_session_start", "device", "live_bytes", "peak_bytes", "source"]
        rows = [[m.ts_ns - t0, m.device, m.live_bytes, m.peak_bytes, m.source]
                for m in session.memory()]
        return header, rows, len(rows)
    if table == "comparisons":
        header = ["function", "graph_id", "kernel", "step_kind", "eager_ops", "eager_count",
                  "eager_ns", "kernel_ns", "speedup", "verdict", "eager_bytes", "planned_bytes",
                  "repeat", "rounds"]
        rows = [[c.function, c.graph_id, c.kernel, c.step_kind, " ".join(c.eager_ops),
                 c.eager_count, c.eager_ns, c.kernel_ns,
                 round(c.speedup, 4) if c.speedup else "", c.speedup_text(), c.eager_bytes,
                 c.planned_bytes, c.repeat, "" if c.rounds is None else c.rounds]
                for c in session.comparisons()]
        return header, rows, len(rows)
    if table == "session":
        rows = session_rows(session)
        return ["field", "value"], rows, len(rows)
    header = ["thread", "category", "count", "stack"]
    rows = [[s.thread, s.category, s.count, ";".join(s.frames)] for s in session.samples()]
    return header, rows, len(rows)


def session_rows(session: Session) -> list[list[str]]:
    """What ran and how it ended: "status" is the one-line text, then each field of the
    end ("end.kind", "end.breakpoint.spec", "end.evidence.op" ...)."""
    end = session.end
    rows = [["script", session.meta.get("script") or ""],
            ["argv", " ".join(map(str, session.meta.get("argv") or []))],
            ["created", session.meta.get("created") or ""],
            ["status", end.text()]]
    for key, value in end.to_json().items():
        if isinstance(value, dict):
            rows += [[f"end.{key}.{k}", v] for k, v in value.items()]
        else:
            rows.append([f"end.{key}", value])
    return rows
