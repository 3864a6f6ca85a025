"""What recording a session cost the script, stated from its calibration and its counts.

The calibration (calibration.py) measured, on this machine and code, what the recorder
adds to one eager op, to one compiled step or run (the kernel clock's reads) and, with
per-run kernel rows, to one step run through the plan's loop with its event. The session
knows how many of each ran. Their products are the cost inside the recording, with the
time the recorder spent encoding graph-mode events (rare, and milliseconds each for a
graph's IR), which it measures directly. The recorder's own start (calibration included
when it was not cached) and stop are measured too and stated beside it, since they fall
outside the recorded wall time.
"""

from __future__ import annotations

from dataclasses import dataclass

from execmode.profilers.units import fmt_ns, fmt_share


@dataclass(frozen=True)
class ProfilerCost:
    ops: int
    kernel_calls: int        # compiled steps run (kernel_totals)
    graph_runs: int          # compiled plans run (graph_runs)
    kernel_rows: int         # per-run kernel rows written (only with --kernel-rows)
    eager_ns: int | None     # None: the calibration did not measure it (skipped, older)
    graph_ns: int | None
    events_ns: int | None    # measured: encoding trace, graph, pass, compile ... events
    start_ns: int | None     # measured: the recorder's start and stop
    stop_ns: int | None
    settled: bool = True     # False: calibrated on a machine busier than its CPUs

    @property
    def total_ns(self) -> int | None:
        """The cost inside the recorded wall time, or None when nothing was calibrated
        (the events' measured time alone would understate it)."""
        if self.eager_ns is None and self.graph_ns is None:
            return None
        parts = [p for p in (self.eager_ns, self.graph_ns, self.events_ns) if p is not None]
        return sum(parts)

    def text(self, wall_ns: int | None) -> str:
        total = self.total_ns
        if total is None:
            return "not calibrated"
        share = total / wall_ns if wall_ns else None
        pieces = []
        if self.eager_ns is not None:
            pieces.append(f"{fmt_ns(self.eager_ns)} for {self.ops:,} eager ops")
        if self.graph_ns is not None and (self.kernel_calls or self.graph_runs):
            what = (f"{self.kernel_rows:,} kernel rows" if self.kernel_rows else
                    f"{self.kernel_calls:,} kernel runs in {self.graph_runs:,} graph runs")
            pieces.append(f"{fmt_ns(self.graph_ns)} for {what}")
        if self.events_ns:
            pieces.append(f"{fmt_ns(self.events_ns)} encoding graph-mode events")
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
        return dict(self.__dict__, total_ns=self.total_ns)


def profiler_cost(calibration: dict, counts: tuple, meta: dict) -> ProfilerCost:
    """``counts`` = (eager ops, kernel calls, graph runs, kernel rows) of the session."""
    ops, kernel_calls, graph_runs, kernel_rows = counts
    per_op = _number(calibration.get("overhead_ns"))
    eager_ns = round(per_op * ops) if per_op is not None else None
    if kernel_rows:
        per_step = _number(calibration.get("kernel_row_ns"))
        graph_ns = round(per_step * kernel_rows) if per_step is not None else None
    else:
        per_step = _number(calibration.get("kernel_step_ns"))
        graph_ns = round(per_step * (kernel_calls + graph_runs)) \
            if per_step is not None else None
    fixed = meta.get("recorder_cost_ns") or {}
    return ProfilerCost(ops, kernel_calls, graph_runs, kernel_rows, eager_ns, graph_ns,
                        _int(fixed.get("events")), _int(fixed.get("start")),
                        _int(fixed.get("stop")), calibration.get("settled") is not False)


def _number(value):
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value):
    number = _number(value)
    return int(number) if number is not None else None
