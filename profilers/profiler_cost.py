"""What recording a session cost the script, stated from its calibration and its counts.

The calibration (calibration.py) measured, on this machine and code, what the recorder
adds to one eager op on each of the paths an op can take to it (the op ring counts the
session's ops by path), to an op's first run at a new site (the sites counted too), to
one clock read of compiled code (a step or a run's end, in a whole-graph program or the
fast entry), to one clock read in Python (the plan's loops, the generated replay) and,
with per-run kernel rows, to one step run through the plan's loop with its event. The
session knows how many of each ran (store_queries.cost_counts). Their products are the
cost inside the recording, with what was measured directly: the time the recorder spent
encoding graph-mode events (rare, and milliseconds each for a graph's IR), the time ops
waited for room in the op ring while the session writer was behind, a runner's own work
inside the recorded wall time (from the start to the script's first line, from its end to
the stop: ``execmode profile`` marks both, and recording what the script printed), what an
op whose data outgrew the core's cache adds, by the bytes it moved (the recorder's own state
runs from memory after it: calibration_cold.py), the session writer's Python work while
the script ran (its thread's CPU time less its SQLite work: the interpreter is held
meanwhile, and a script running Python waits), the CPU time the script's threads waited
for while the writer's SQLite work ran beside them (at most that work's CPU time: on a
CPU the script leaves idle it costs nothing), and, for
plans timed in Python at every run, what the timing did between their steps (a run's time
less its steps': the calibration's small steps cost the timing less than a real graph's,
whose steps allocate and touch more). The recorder's own start (calibration included when
it was not cached) and stop are measured too and stated beside it, since they fall
outside the recorded wall time.
"""

from __future__ import annotations

from dataclasses import dataclass

from execmode.profilers.calibration_cold import MIN_BYTES, extra_ns
from execmode.profilers.units import fmt_ns, fmt_share


@dataclass(frozen=True)
class ProfilerCost:
    counts: tuple            # store_queries.CostCounts
    eager_ns: int | None     # None: the calibration did not measure it (skipped, older)
    graph_ns: int | None
    events_ns: int | None    # measured: encoding trace, graph, pass, compile ... events
    waited_ns: int | None    # measured: ops waiting for room in the op ring (writer behind)
    start_ns: int | None     # measured: the recorder's start and stop
    stop_ns: int | None
    settled: bool = True     # False: calibrated while the machine was busy
    # measured: a runner's own work inside the recorded wall time: before and after the
    # script's code, and recording its output (Recorder.script_started/ended, runner_ns);
    # None where no runner marked the script
    around_ns: int | None = None
    # measured: the session writer's Python work while the script ran (writer.py)
    writer_ns: int | None = None
    # measured: the script's threads' wait for a CPU while the writer's SQLite work ran
    # beside them, at most that work's CPU time (recorder.stop)
    displaced_ns: int | None = None
    # calibrated: composites that ran op by op because the recorder watched (their calls
    # by site, execmode/watched_composites.py; each site's cost, calibration_declined.py)
    declined_ns: int | None = None
    declined_calls: int = 0
    # calibrated: what ops over more data than the core's cache added, the recorder's own
    # state evicted by their data (by the bytes each moved, calibration_cold.py); None
    # without that calibration
    cold_ns: int | None = None
    cold_ops: int = 0

    @property
    def total_ns(self) -> int | None:
        """The cost inside the recorded wall time, or None when nothing was calibrated
        (the events' measured time alone would understate it)."""
        if self.eager_ns is None and self.graph_ns is None:
            return None
        parts = [p for p in (self.eager_ns, self.graph_ns, self.events_ns, self.waited_ns,
                             self.around_ns, self.writer_ns, self.displaced_ns,
                             self.declined_ns, self.cold_ns)
                 if p is not None]
        return sum(parts)

    def text(self, wall_ns: int | None) -> str:
        total = self.total_ns
        if total is None:
            return "not calibrated"
        c = self.counts
        share = total / wall_ns if wall_ns else None
        pieces = []
        if self.eager_ns is not None:
            pieces.append(f"{fmt_ns(self.eager_ns)} for {c.ops:,} eager ops")
        if self.graph_ns is not None and (c.kernel_calls or c.graph_runs):
            what = (f"{c.kernel_rows:,} kernel rows" if c.kernel_rows else
                    f"{c.kernel_calls:,} kernel runs in {c.graph_runs:,} graph runs")
            pieces.append(f"{fmt_ns(self.graph_ns)} for {what}")
        if self.cold_ns:
            pieces.append(f"{fmt_ns(self.cold_ns)} for the data of {self.cold_ops:,} of those "
                          f"ops ({MIN_BYTES >> 10} KiB or more each) evicting the recorder's "
                          "state from the CPU's cache")
        if self.declined_ns:
            pieces.append(f"{fmt_ns(self.declined_ns)} for {self.declined_calls:,} composite "
                          "calls and backward steps run op by op (so that each op is seen)")
        if self.events_ns:
            pieces.append(f"{fmt_ns(self.events_ns)} encoding graph-mode events")
        if self.waited_ns:
            pieces.append(f"{fmt_ns(self.waited_ns)} waiting for the session writer")
        if self.writer_ns:
            pieces.append(f"{fmt_ns(self.writer_ns)} of the session writer's Python work "
                          "(it holds the interpreter)")
        if self.displaced_ns:
            pieces.append(f"{fmt_ns(self.displaced_ns)} of CPU the script's threads waited "
                          "for while the session writer's SQLite work ran")
        if self.around_ns:
            pieces.append(f"{fmt_ns(self.around_ns)} running the script (its start and "
                          "end, recording its output)")
        text = f"about {fmt_ns(total)} ({fmt_share(share)} of wall time)"
        if pieces:
            text += ": " + ", ".join(pieces)
        fixed = [(n, w) for n, w in ((self.start_ns, "start"), (self.stop_ns, "stop"))
                 if n is not None]
        if fixed:
            text += "; outside it, " + " and ".join(f"{fmt_ns(n)} to {w}" for n, w in fixed)
        if not self.settled:
            text += " (calibrated while the machine was busy: a rough figure)"
        return text

    def to_json(self) -> dict:
        return {"counts": self.counts._asdict(), "eager_ns": self.eager_ns,
                "graph_ns": self.graph_ns, "events_ns": self.events_ns,
                "waited_ns": self.waited_ns,
                "around_ns": self.around_ns, "writer_ns": self.writer_ns,
                "displaced_ns": self.displaced_ns,
                "declined_ns": self.declined_ns, "declined_calls": self.declined_calls,
                "cold_ns": self.cold_ns, "cold_ops": self.cold_ops,
                "start_ns": self.start_ns, "stop_ns": self.stop_ns, "settled": self.settled,
                "total_ns": self.total_ns}


def profiler_cost(calibration: dict, counts, meta: dict) -> ProfilerCost:
    """``counts``: store_queries.CostCounts of the session."""
    recorded = meta.get("recorded") or {}
    eager_ns = stated_eager_ns(calibration, counts.ops, recorded.get("ring_ops"))
    site_ns, sites = _number(calibration.get("site_ns")), _number(recorded.get("ring_sites"))
    if eager_ns is not None and site_ns is not None and sites:
        eager_ns += round(site_ns * sites)
    fixed = meta.get("recorder_cost_ns") or {}
    declined = recorded.get("declined") if isinstance(recorded.get("declined"), dict) else {}
    return ProfilerCost(counts, eager_ns, _graph_ns(calibration, counts),
                        _int(fixed.get("events")), _int(recorded.get("ring_waited_ns")),
                        _int(fixed.get("start")), _int(fixed.get("stop")),
                        calibration.get("settled") is not False,
                        around_ns=_int(fixed.get("around")), writer_ns=_int(fixed.get("writer")),
                        displaced_ns=_int(fixed.get("displaced")),
                        declined_ns=_declined_ns(calibration, declined),
                        declined_calls=sum(_int(n) or 0 for n in declined.values()),
                        **_cold(calibration, counts))


def _cold(calibration: dict, counts) -> dict:
    """The ops' extra for the bytes each moved (calibration_cold.py), and how many ops
    it counts (those that moved calibration_cold.MIN_BYTES or more)."""
    points = calibration.get("cold_op_ns")
    if not isinstance(points, list) or not points or not all(
            isinstance(p, list) and len(p) == 2 and all(_number(v) is not None for v in p)
            and p[0] > 0 for p in points):
        return {}
    moved = getattr(counts, "op_bytes", ()) or ()
    total = sum(n * extra_ns(points, nbytes) for nbytes, n in moved)
    return {"cold_ns": round(total),
            "cold_ops": sum(n for _, n in moved)}


def _declined_ns(calibration: dict, declined: dict) -> int | None:
    """The composites' calls by site at each site's calibrated cost; a site the
    calibration did not reach at the median site's. None without that calibration."""
    per_site = calibration.get("declined_ns")
    if not isinstance(per_site, dict) or not per_site:
        return None
    known = sorted(v for v in per_site.values() if _number(v) is not None)
    fallback = known[len(known) // 2] if known else 0
    total = 0.0
    for site, calls in declined.items():
        cost = _number(per_site.get(site))
        total += (_int(calls) or 0) * (cost if cost is not None else fallback)
    return round(total)


def stated_eager_ns(calibration: dict, ops: int, ring_ops) -> int | None:
    """The ring's ops at the cost of their path (calibration.OP_PATHS; a path not
    measured here at the costliest ring path's), the others (the Python path: another
    thread's ops, GPU arrays, no ring) at the Python path's; without counts by path
    (older sessions, no ring), every op at the calibration's mean."""
    per_op = _number(calibration.get("overhead_ns"))
    by_path = calibration.get("op_path_ns")
    if not isinstance(ring_ops, dict) or not isinstance(by_path, dict):
        return round(per_op * ops) if per_op is not None else None
    measured = [_number(v) for k, v in by_path.items() if k != "python"]
    slowest = max((v for v in measured if v is not None), default=per_op)
    python = _number(by_path.get("python"))
    python = python if python is not None else slowest
    if slowest is None or python is None:
        return None
    total, counted = 0.0, 0
    for entry, by_frames in ring_ops.items():
        for frames, n in enumerate(by_frames):
            if n:
                cost = _number(by_path.get(f"{entry}{frames}"))
                total += n * (cost if cost is not None else slowest)
                counted += n
    return round(total + max(0, ops - counted) * python)


def _graph_ns(calibration: dict, c) -> int | None:
    if c.kernel_rows:  # the step-by-step loop with an event per step: its runs are rows
        per_row = _number(calibration.get("kernel_row_ns"))
        return round(per_row * c.kernel_rows) if per_row is not None else None
    compiled = _number(calibration.get("kernel_step_ns"))
    compiled_run = _number(calibration.get("kernel_run_ns"))
    in_python = _number(calibration.get("kernel_loop_step_ns"))
    if compiled is None or compiled_run is None or in_python is None:
        return None
    runs_compiled = c.graph_runs - c.loop_runs
    reads_compiled = (c.kernel_calls - c.loop_calls) + runs_compiled
    # Plans timed in Python at every run measured their timing's work between steps
    # (store_queries.cost_counts): stated as measured, the calibration for the rest.
    reads_python = (c.loop_calls - c.gap_calls) + (c.loop_runs - c.gap_runs)
    return round(compiled * reads_compiled + compiled_run * runs_compiled
                 + in_python * max(0, reads_python) + c.loop_gap_ns)


def _number(value):
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value):
    number = _number(value)
    return int(number) if number is not None else None
