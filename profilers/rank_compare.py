"""Every rank of a distributed run side by side: one timeline on the host's one clock, and
each rank's op totals in columns (the TUI's Ranks view; ``execmode report FOLDER
--summary``).

The timeline spans the ranks' ops (from the first op of any rank to the last one's end),
cut into equal slices, and says per rank and slice how long the rank computed (eager ops
and kernel rows), waited in a collective for the other ranks to arrive, and moved bytes
in one: a collective's ``waited_us`` (its header exchange, execmode/distributed/
exchange.py) is its start, the rest is the transfer.
The rest of a slice is Python between ops, or the rank not started or already done.
"""

from __future__ import annotations

from typing import NamedTuple

from execmode.profilers import store_queries
from execmode.profilers.ranks import COLLECTIVES, waited_ns

COMPUTE, WAITING, MOVING = "compute", "waiting", "moving"
KINDS = (COMPUTE, WAITING, MOVING)


class RankLane(NamedTuple):
    rank: int
    slices: tuple       # per slice: (compute ns, waiting ns, moving ns)
    totals: dict        # kind -> ns over the whole run


class RankTimeline(NamedTuple):
    t0_ns: int          # the first op of any rank (the imports before it are nobody's)
    t1_ns: int          # the last op's end
    width_ns: int       # of one slice
    lanes: tuple        # RankLane per rank, in rank order
    start_ns: int = 0   # the earliest rank's session start, what times are counted from


class RankOps(NamedTuple):
    """One op (or "graph/kernel") in every rank: calls and summed time per rank."""

    name: str
    calls: tuple
    total_ns: tuple

    @property
    def spread(self) -> float | None:
        """The slowest rank's time over the fastest's (None when a rank has none)."""
        low = min(self.total_ns)
        return max(self.total_ns) / low if low > 0 else None


def rank_timeline(sessions: list, slices: int = 400) -> RankTimeline:
    """``sessions``: ``(rank, Session)`` pairs of one run folder."""
    start = min(s.t0_ns for _, s in sessions)
    extents = [store_queries.ops_extent(s._query) for _, s in sessions]
    firsts = [first for first, _ in extents if first is not None]
    lasts = [last for _, last in extents if last is not None]
    # The span of the ops: a run's imports and start-up fill most of its wall time and
    # would squeeze the steps into a few columns.
    t0 = min(firsts) if firsts else start
    t1 = max(lasts) if lasts else max(max(s.end_ns(), s.t0_ns) for _, s in sessions)
    width = max(1, -(-(t1 - t0) // slices))
    lanes = tuple(_lane(rank, s._query, t0, width, slices) for rank, s in sessions)
    return RankTimeline(t0, max(t1, t0 + 1), width, lanes, start)


def _lane(rank: int, run, t0: int, width: int, slices: int) -> RankLane:
    cells = [[0, 0, 0] for _ in range(slices)]

    def spread(kind: int, start: int, dur: int) -> None:
        """Add the span's time to every slice it covers, clipped to each."""
        end = start + dur
        first, last = max(0, (start - t0) // width), min(slices - 1, (end - t0) // width)
        for i in range(first, last + 1):
            lo, hi = t0 + i * width, t0 + (i + 1) * width
            cells[i][kind] += max(0, min(end, hi) - max(start, lo))

    short, long = store_queries.busy_by_slice(run, t0, width, COLLECTIVES)
    for index, ns in short.items():
        cells[min(max(index, 0), slices - 1)][0] += ns
    for start, dur in long:
        spread(0, start, dur)
    for start, dur, attrs in store_queries.op_spans(run, COLLECTIVES):
        waited = min(waited_ns(attrs), int(dur))
        spread(1, int(start), waited)
        spread(2, int(start) + waited, int(dur) - waited)
    # A slice holds at most its width: ops summed where they start can overfill one.
    for cell in cells:
        over = sum(cell) - width
        if over > 0:
            cell[0] = max(0, cell[0] - over)
    totals = {kind: sum(c[i] for c in cells) for i, kind in enumerate(KINDS)}
    return RankLane(rank, tuple(tuple(c) for c in cells), totals)


def rank_ops(sessions: list, limit: int = 30) -> list[RankOps]:
    """Eager ops and graph kernels by name, each rank's calls and time side by side, the
    costliest (by the slowest rank's time) first."""
    per_rank = []
    for _, s in sessions:
        totals = {t.name: t for t in s.op_totals()}
        totals.update({t.name: t for t in s.kernel_totals()})
        per_rank.append(totals)
    names = {name for totals in per_rank for name in totals}
    rows = []
    for name in names:
        found = [totals.get(name) for totals in per_rank]
        rows.append(RankOps(name, tuple(t.count if t else 0 for t in found),
                            tuple(t.total_ns if t else 0 for t in found)))
    rows.sort(key=lambda r: (-max(r.total_ns), r.name))
    return rows[:limit]


def timeline_cells(lane: RankLane, width_ns: int, columns: int) -> list:
    """The lane in ``columns`` cells: each the kind that took most of its time, if that is
    a quarter of it or more, else None (the rank was mostly outside ops there: Python
    between ops, or not running). ``width_ns``: the timeline's slice."""
    n = len(lane.slices)
    out = []
    for c in range(columns):
        lo, hi = c * n // columns, max(c * n // columns + 1, (c + 1) * n // columns)
        sums = [sum(lane.slices[i][k] for i in range(lo, hi)) for k in range(3)]
        busiest = max(range(3), key=lambda k: sums[k])
        out.append(KINDS[busiest] if sums[busiest] * 4 >= width_ns * (hi - lo) else None)
    return out


def rank_ops_table(rows: list, ranks: list):
    """``rank_ops``' rows as a report Table (``execmode report FOLDER --summary``)."""
    from execmode.profilers.report import Table
    from execmode.profilers.units import fmt_ns

    cells = []
    for r in rows:
        calls = str(r.calls[0]) if len(set(r.calls)) == 1 else " | ".join(map(str, r.calls))
        spread = f"{r.spread:.2f}x" if r.spread is not None else "a rank has none"
        cells.append([r.name, calls, *(fmt_ns(t) for t in r.total_ns), spread])
    return Table("rank_ops", "Ops and kernels per rank", ["op", "calls",
                 *(f"rank {k}" for k in ranks), "slowest/fastest"], cells,
                 "lr" + "r" * len(ranks) + "r")
