"""What a report says about a session, independent of how it is drawn.

:func:`build_report` reads a session once and returns plain tables and facts; the HTML,
Markdown and terminal renderers only lay them out. Numbers are formatted here, so every
format says the same thing.
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field

from execmode.profilers.compiles import compiles, wall_ns
from execmode.profilers.session import Session
from execmode.profilers.session_end import SessionEnd
from execmode.profilers.stacks import CATEGORIES
from execmode.profilers.store_rows import Comparison, MemoryRow
from execmode.profilers.units import fmt_bytes, fmt_ns, fmt_share

TOP = 15
_SOURCES = {"eager": "eager tensors", "graph": "graph plan", "pool": "CuPy memory pool"}
MAX_ROWS = 200  # long tables (passes of many graphs) are cut with a note


@dataclass
class Table:
    """A titled table of formatted cells; ``align`` has one "l" or "r" per column."""

    key: str
    title: str
    headers: list[str]
    rows: list[list[str]]
    align: str
    note: str = ""


@dataclass
class Report:
    title: str
    facts: list[tuple[str, str]]
    notes: list[str]
    tables: list[Table]
    memory: list[MemoryRow] = field(default_factory=list)
    bars: list[tuple[str, float]] = field(default_factory=list)  # top ops: name, ns
    categories: list[tuple[str, int]] = field(default_factory=list)  # py-spy: label, count
    t0_ns: int = 0

    def table(self, key: str) -> Table | None:
        return next((t for t in self.tables if t.key == key), None)


def build_report(session: Session, top: int = TOP) -> Report:
    """The facts, notes and tables of a report on ``session``."""
    s = session.summary()
    script = s["script"] or "(in-process recording)"
    title = f"execmode profile: {os.path.basename(script)}" if s["script"] else \
        "execmode profile"
    report = Report(title, _facts(s, script), _notes(s), [], t0_ns=session.t0_ns)
    totals = session.op_totals(limit=top)
    report.bars = [(t.name, float(t.total_ns)) for t in totals]
    report.tables.append(totals_table("top_ops", f"Top eager ops by total time (of {s['ops']})",
                                       totals, "op"))
    if s["ops"]:
        report.tables.append(totals_table(
            "top_lines", "Top source lines by eager op time",
            session.op_totals(group_by="location", limit=top), "source line"))
    kernels = session.kernel_totals(limit=top)
    if kernels:
        report.tables.append(totals_table("top_kernels", "Top graph kernels by total time",
                                           kernels, "graph/kernel"))
    comparisons = session.comparisons()
    if comparisons:
        report.tables.append(comparison_table(comparisons))
    _graph_tables(session, report)
    samples = session.category_totals()
    if samples:
        report.categories = [(CATEGORIES.get(k, k), n) for k, n in samples.items()]
        report.tables.append(_samples_table(samples))
    report.memory = session.memory()
    peaks = session.peak_memory(by_source=True)
    if peaks:
        rows = [[device, _SOURCES.get(source, source), fmt_bytes(b)]
                for (device, source), b in peaks.items()]
        report.tables.append(Table("memory", "Peak live memory", ["device", "measured by",
                                                                  "peak"], rows, "llr"))
    return report


# --- facts and notes ----------------------------------------------------------------------
def _facts(s: dict, script: str) -> list[tuple[str, str]]:
    facts = [("script", script)]
    if s["argv"]:
        facts.append(("arguments", " ".join(s["argv"][1:]) or "(none)"))
    facts.append(("status", _status_text(s)))
    facts.append(("wall time", fmt_ns(s["wall_ns"])))
    facts.append(("eager ops", f"{s['ops']:,} taking {fmt_ns(s['op_ns'])}, allocating "
                               f"{fmt_bytes(s['op_bytes'])}"))
    if s["kernels"]:
        facts.append(("graph kernels", f"{s['kernels']:,} runs taking {fmt_ns(s['kernel_ns'])}"))
    if s["events"]:
        facts.append(("events", ", ".join(f"{n:,} {kind}" for kind, n in s["events"].items())))
    if s["profiler_ns"] is not None:
        facts.append(("profiler cost", _overhead_text(s)))
    machine = s["machine"]
    if machine:
        facts.append(("machine", f"{machine.get('cpu', '?')}, {machine.get('cpus', '?')} CPUs, "
                                 f"Python {machine.get('python', '?')}, "
                                 f"NumPy {machine.get('numpy', '?')}"))
        load = machine.get("load_average")
        if load:
            facts.append(("load average", f"{load[0]:.2f} (1 min), {load[1]:.2f} (5 min) "
                                          f"at the start"))
        if machine.get("threads"):
            facts.append(("threads", _threads_text(machine["threads"])))
    facts.append(("session file", s["path"]))
    return facts


def _threads_text(settings: dict) -> str:
    from execmode.codegen.threads import thread_settings_text

    if "error" in settings:
        return f"invalid setting: {settings['error']}"
    return thread_settings_text(settings).removeprefix("threads: ")


def _status_text(s: dict) -> str:
    text = _exit_text(s)
    partial = s.get("partial")
    if partial:
        text += f"; PARTIAL session: recording stopped early ({partial.get('reason')})"
    return text


def _exit_text(s: dict) -> str:
    """How the script ended (session_end.py), with its exit status where it has one."""
    end = SessionEnd.from_json(s["end"])
    code = end.code
    if end.kind not in ("raised", "interrupted", "killed", "crashed") or code is None or \
            "exit status" in end.text():
        return end.text()
    return f"{end.text()} (exit status {code})"


def _overhead_text(s: dict) -> str:
    return s["profiler_cost"].text(s["wall_ns"])


def _notes(s: dict) -> list[str]:
    notes = []
    end = SessionEnd.from_json(s["end"])
    notes += end.details()
    if s["status"] == "interrupted" and end.closed_by is None:
        notes.append("The recording process ended without closing the session (killed or "
                     "crashed). Everything up to its last flush (at most ~0.1 s before the "
                     "end) is here.")
    pyspy = s["pyspy"]
    if pyspy.get("status") not in ("off", "ok", None):
        text = f"py-spy {pyspy.get('status')}: {pyspy.get('reason', '')}"
        if pyspy.get("advice"):
            text += f". To fix: {pyspy['advice']}"
        notes.append(text)
    cal = s["calibration"]
    if cal.get("skipped"):
        notes.append(f"Calibration skipped: {cal['skipped']}.")
    partial = s.get("partial")
    if partial:
        notes.append(f"This session is partial: writing it failed ({partial.get('reason')}), "
                     "so recording stopped there while the script ran on; "
                     f"{partial.get('dropped', 0):,} items after that point were not "
                     "recorded. Totals below cover only what was recorded.")
    recorded = s["recorded"]
    if recorded.get("dropped") and not partial:
        notes.append(f"{recorded['dropped']:,} events were dropped (the writer failed).")
    if s["ops"]:
        notes.append("Op times are host time around each op's computation; the recorder's "
                     "own per-op cost falls between ops and is estimated by the calibration.")
    return notes


# --- tables -------------------------------------------------------------------------------
def totals_table(key: str, title: str, totals, name: str) -> Table:
    rows = [[t.name, f"{t.count:,}", fmt_ns(t.total_ns), fmt_share(t.share), fmt_ns(t.mean_ns),
             fmt_ns(t.max_ns), fmt_bytes(t.bytes)] for t in totals]
    return Table(key, title, [name, "calls", "total", "share", "mean", "max", "allocated"],
                 rows, "lrrrrrr")


def comparison_table(rows: list[Comparison]) -> Table:
    """Eager ops vs the compiled step that replaced them, with a totals row."""
    out = []
    for c in rows:
        ops = ", ".join(c.eager_ops)
        out.append([c.graph_id, c.kernel, c.step_kind, _cut(ops, 60), fmt_ns(c.eager_ns),
                    fmt_ns(c.kernel_ns), c.speedup_text(), fmt_bytes(c.eager_bytes),
                    fmt_bytes(c.planned_bytes)])
    eager = sum(c.eager_ns for c in rows)
    kernel = sum(c.kernel_ns for c in rows)
    # Sums of medians: no verdict of their own (the wall line of em.compare has one).
    out.append(["total", f"{len(rows)} steps", "", f"{sum(c.eager_count for c in rows)} ops",
                fmt_ns(eager), fmt_ns(kernel), "",
                fmt_bytes(sum(c.eager_bytes for c in rows)),
                fmt_bytes(sum(c.planned_bytes for c in rows))])
    return Table("comparison", "Eager vs graph (per call, medians of em.compare's rounds)",
                 ["graph", "kernel", "kind", "eager ops", "eager", "graph", "eager/graph",
                  "eager bytes", "planned bytes"], out, "lllrrrrrr")


def _graph_tables(session: Session, report: Report) -> None:
    breaks = session.events("graph_break")
    if breaks:
        rows = []
        for ev in breaks[:MAX_ROWS]:
            d = ev.data
            loc = d.get("location") or {}
            where, code = _source(loc)
            rows.append([str(d.get("function", "")), str(d.get("reason", "")),
                         str(d.get("op", "")), where, code])
        report.tables.append(Table("graph_breaks", "Graph breaks",
                                   ["function", "reason", "op", "where", "source line"],
                                   rows, "lllll", _cut_note(len(breaks))))
    retraces = session.events("retrace")
    if retraces:
        rows = [[str(e.data.get("function", "")), str(e.data.get("reason", "")),
                 str(e.data.get("signature", ""))] for e in retraces[:MAX_ROWS]]
        # (with the calls jit ran eagerly instead: a retrace limit's, a break's samples)
        report.tables.append(Table("retraces", "Retraces and eager calls",
                                   ["function", "reason", "signature"],
                                   rows, "lll", _cut_note(len(retraces))))
    passes = session.events("pass")
    if passes:
        report.tables.append(_pass_table(passes))
    builds = compiles([(e.start_ns, e.end_ns, e.data) for e in session.events("compile")])
    if builds:
        hits = sum(1 for c in builds if c.cache_hit)
        total = sum(c.compile_ns for c in builds)
        wall = wall_ns(builds)
        # Units compiled in parallel: their sum is the compiler's work, not the wait.
        waited = f"; {fmt_ns(wall)} of wall time, units compiled in parallel" \
            if wall < 0.9 * total else ""
        rows = [[c.graph_id, c.what, _cut(", ".join(k.kernel for k in c.kernels), 50),
                 c.language, fmt_ns(c.compile_ns), "yes" if c.cache_hit else "no"]
                for c in builds[:MAX_ROWS]]
        report.tables.append(Table(
            "compiles", f"Compiles ({len(builds)}, {hits} from the cache, "
                        f"{fmt_ns(total)} in all, each counted once{waited})",
            ["graph", "unit", "kernels", "language", "compile time", "cache hit"], rows,
            "llllrl", _cut_note(len(builds))))
    plans = session.events("memory_plan")
    if plans:
        rows = [[str(e.data.get("graph_id", "")), fmt_bytes(e.data.get("planned_peak")),
                 fmt_bytes(e.data.get("unplanned_peak")), fmt_bytes(e.data.get("eager_peak")),
                 str(e.data.get("buffers", ""))] for e in plans[:MAX_ROWS]]
        report.tables.append(Table("memory_plans", "Memory plans",
                                   ["graph", "planned peak", "unplanned peak", "eager peak",
                                    "buffers"], rows, "lrrrr"))


def _pass_table(passes) -> Table:
    rows = []
    for e in passes[:MAX_ROWS]:
        d = e.data
        rewrites = d.get("rewrites") or []
        rows.append([str(d.get("graph_id", "")), str(d.get("index", "")), str(d.get("name", "")),
                     fmt_ns(d.get("wall_ns")), str(d.get("node_count", "")),
                     str(d.get("kernel_count", "")), str(d.get("buffer_count", "")),
                     str(len(rewrites) if isinstance(rewrites, list) else rewrites)])
    return Table("passes", "Passes", ["graph", "#", "pass", "time", "nodes", "kernels",
                                      "buffers", "rewrites"], rows, "lrlrrrrr",
                 _cut_note(len(passes)))


def _samples_table(samples: dict[str, int]) -> Table:
    total = sum(samples.values()) or 1
    rows = [[CATEGORIES.get(k, k), f"{n:,}", fmt_share(n / total)] for k, n in samples.items()]
    return Table("samples", "Where the time went (py-spy samples)",
                 ["category", "samples", "share"], rows, "lrr")


def _source(loc) -> tuple[str, str]:
    if isinstance(loc, dict) and loc.get("filename"):
        file, line = str(loc["filename"]), int(loc.get("lineno") or 0)
        code = linecache.getline(file, line).strip() if line else ""
        return f"{file}:{line}", code
    return (str(loc), "") if loc else ("", "")


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _cut_note(n: int) -> str:
    return f"first {MAX_ROWS} of {n:,} rows" if n > MAX_ROWS else ""
