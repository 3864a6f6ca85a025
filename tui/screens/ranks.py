"""View 0, Ranks: every rank of a run folder (``execmode open FOLDER`` on what ``execmode
launch -n N --profile`` recorded) side by side: one timeline on the host's clock, a lane
per rank showing compute, waiting in a collective for the other ranks, and moving bytes;
who the ranks waited for; and each op's calls and time per rank in columns, the largest
difference between ranks beside them (profilers/rank_compare.py computes all of it).

On a single session the view says how to record ranks. ``R`` still opens the next rank's
session in the other views.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import NamedTuple

from execmode.profilers.rank_compare import (
    COMPUTE,
    MOVING,
    WAITING,
    RankTimeline,
    rank_ops,
    rank_timeline,
    timeline_cells,
)
from execmode.profilers.ranks import collective_waits, straggler_line
from execmode.tui import formatting as fmt
from execmode.tui.data import SessionReader, SessionUnreadable
from execmode.tui.formatting import literal
from execmode.tui.screens.base import StoreView
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

# How a lane draws each kind: a character of its own (readable without colour) and a colour.
DRAWN = {COMPUTE: ("█", "green"), WAITING: ("░", "red"), MOVING: ("▒", "yellow"),
         None: ("·", "dim")}
LEGEND = ((COMPUTE, "compute"), (WAITING, "waiting for the others"), (MOVING, "moving bytes"),
          (None, "outside ops"))
ONE_SESSION = ("one session: the Ranks view compares the ranks of a distributed run. Record "
               "them with `execmode launch -n N --profile SCRIPT`, then open the run folder "
               "with `execmode open FOLDER`.")


class RankSummary(NamedTuple):
    rank: int
    collectives: int
    waited_ns: int
    status: str


class RanksData(NamedTuple):
    timeline: RankTimeline
    ops: list              # rank_compare.RankOps
    summaries: list        # RankSummary per rank
    straggler: str | None


def load_ranks(paths: tuple) -> RanksData:
    """Every rank's session read at once (a worker thread)."""
    from execmode.profilers.errors import SessionError
    from execmode.profilers.session import open_session

    try:
        with ExitStack() as stack:
            sessions = [(rank, stack.enter_context(open_session(path)))
                        for rank, path in enumerate(paths)]
            waits = {rank: collective_waits(s) for rank, s in sessions}
            summaries = [RankSummary(rank, waits[rank].calls, waits[rank].waited_ns,
                                     s.end.text()) for rank, s in sessions]
            return RanksData(rank_timeline(sessions), rank_ops(sessions), summaries,
                             straggler_line(waits))
    except (SessionError, OSError) as exc:
        raise SessionUnreadable(f"a rank's session could not be read: {exc}") from exc


def timeline_text(timeline: RankTimeline, width: int) -> Text:
    """The lanes in ``width`` columns, a time axis above them and the legend below."""
    label = max(len(f"r{lane.rank} ") for lane in timeline.lanes)
    columns = max(10, width - label)
    # Times from the earliest rank's start: the lanes begin at the first op.
    first = fmt.duration(timeline.t0_ns - timeline.start_ns)
    last = fmt.duration(timeline.t1_ns - timeline.start_ns)
    text = Text(" " * label + first, style="dim")
    text.append(last.rjust(columns - len(first)), style="dim")
    for lane in timeline.lanes:
        text.append("\n" + f"r{lane.rank}".ljust(label), style="bold")
        for kind in timeline_cells(lane, timeline.width_ns, columns):
            char, style = DRAWN[kind]
            text.append(char, style=style)
    text.append("\n")
    for kind, meaning in LEGEND:
        char, style = DRAWN[kind]
        text.append(char, style=style)
        text.append(f" {meaning}  ", style="dim")
    return text


def summary_text(data: RanksData) -> Text:
    text = Text()
    if data.straggler:
        text.append(data.straggler + "\n", style="bold yellow")
    for s, lane in zip(data.summaries, data.timeline.lanes, strict=True):
        text.append(f"r{s.rank} ", style="bold")
        text.append(f"waited {fmt.duration(s.waited_ns)} in {s.collectives} collectives · "
                    f"moved {fmt.duration(lane.totals[MOVING])} · compute "
                    f"{fmt.duration(lane.totals[COMPUTE])} · ")
        text.append(literal(s.status))
        text.append("\n")
    text.rstrip()
    return text


class RanksScreen(StoreView):
    VIEW = "ranks"

    def __init__(self) -> None:
        super().__init__()
        self.data: RanksData | None = None

    def compose_view(self) -> ComposeResult:
        with Vertical():
            yield Static(id="rank-timeline", classes="pane")
            yield Static(id="rank-summary")
            yield DataTable(id="rank-ops", classes="pane", cursor_type="row",
                            zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#rank-timeline").border_title = "every rank on one clock"
        self.query_one("#rank-ops").border_title = \
            "ops and kernels per rank (slowest/fastest: the ranks' largest difference)"
        super().on_mount()

    def _paths(self) -> tuple:
        return tuple(getattr(self.app.launch, "ranks", ()) or ())

    def load(self, reader: SessionReader) -> RanksData | None:
        paths = self._paths()
        return load_ranks(paths) if len(paths) > 1 else None

    def show_empty(self, why: str) -> None:
        self.query_one("#rank-summary", Static).update(Text(why, style="dim"))

    def show(self, data: RanksData | None) -> None:
        self.data = data
        if data is None:
            self.query_one("#rank-timeline", Static).update(Text(ONE_SESSION, style="dim"))
            self.query_one("#rank-summary", Static).update("")
            self.query_one("#rank-ops", DataTable).clear(columns=True)
            return
        self._draw_timeline()
        self.query_one("#rank-summary", Static).update(summary_text(data))
        table = self.query_one("#rank-ops", DataTable)
        row = table.cursor_row
        table.clear(columns=True)
        ranks = [lane.rank for lane in data.timeline.lanes]
        table.add_columns("op", "calls", *(f"r{r} time" for r in ranks), "slowest/fastest")
        for op in data.ops:
            calls = str(op.calls[0]) if len(set(op.calls)) == 1 else \
                " | ".join(str(c) for c in op.calls)
            spread = op.spread
            table.add_row(literal(op.name), calls, *(fmt.duration(t) for t in op.total_ns),
                          f"{spread:.2f}x" if spread is not None else "a rank has none")
        if data.ops:
            table.move_cursor(row=min(row, len(data.ops) - 1))

    def on_resize(self, event) -> None:
        super().on_resize(event)
        if self.data is not None:
            self._draw_timeline()

    def _draw_timeline(self) -> None:
        widget = self.query_one("#rank-timeline", Static)
        # The pane's border and padding take 4 columns of the screen's width.
        width = (widget.content_size.width or self.size.width - 4) or 76
        widget.update(timeline_text(self.data.timeline, width))
