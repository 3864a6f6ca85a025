"""View 7, Profile: eager vs graph (em.compare rows), the top ops, memory over time and
timing bars (plotext), the py-spy split when it ran, and the profiler's own overhead.

When the script ran jitted functions but never called ``em.compare``, ``m`` measures the
comparison from the recorded graphs (:mod:`execmode.tui.graph_measure`, in a worker and a
child process, with a progress bar), so the table is never a dead end.
"""

from __future__ import annotations

from typing import NamedTuple

from execmode.profilers.profiler_cost import ProfilerCost
from execmode.tui import formatting as fmt
from execmode.tui.data import SessionReader
from execmode.tui.formatting import literal
from execmode.tui.graph_measure import CompareMeasured, CompareProgress, measure_session
from execmode.tui.records import Comparison, KernelTotal, MemoryPoint, OpTotal, SessionOverview
from execmode.tui.screens.base import StoreView
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.reactive import reactive
from textual.widgets import DataTable, ProgressBar, Static
from textual_plotext import PlotextPlot


class ProfileData(NamedTuple):
    overview: SessionOverview
    comparisons: list[Comparison]
    top_ops: list[OpTotal]
    kernels: list[KernelTotal]
    memory: list[MemoryPoint]
    categories: dict[str, int]
    op_ns: int
    kernel_ns: int
    op_count: int
    graph_count: int
    cost: ProfilerCost | None = None


def load_profile(reader: SessionReader, op_count: int) -> ProfileData:
    overview = reader.overview()
    op_ns, kernel_ns = reader.op_time()
    return ProfileData(overview, reader.comparisons(), reader.op_totals(12),
                       reader.kernel_totals(), reader.memory_series(overview.t0_ns),
                       reader.sample_categories(), op_ns, kernel_ns, op_count,
                       reader.graph_count(), reader.profiler_cost())


def overhead_text(data: ProfileData) -> Text:
    """The py-spy split and what recording itself cost."""
    text = Text("py-spy: ", style="bold")
    total = sum(data.categories.values())
    if total:
        for name, n in data.categories.items():
            text.append(f"{name} {fmt.share(n / total)}  ")
    else:
        status = data.overview.pyspy.get("status", "off")
        reason = data.overview.pyspy.get("reason") or data.overview.pyspy.get("message") or ""
        text.append(f"{status}" + (f" ({reason})" if reason else "") +
                    ("  (start with --pyspy to sample)" if status == "off" else ""),
                    style="dim")
    text.append("\nprofiler cost: ", style="bold")
    cost = data.cost
    if cost is not None and cost.total_ns is not None:
        end = data.overview.meta.get("end_ns")
        wall = end - data.overview.t0_ns if isinstance(end, int) else None
        text.append(cost.text(wall))
    else:
        cal = data.overview.calibration
        text.append(str(cal.get("skipped") or "not measured"), style="dim")
    text.append(f"\neager ops {fmt.duration(data.op_ns)}  ·  graph kernels "
                f"{fmt.duration(data.kernel_ns)}", style="green")
    return text


MEASURED_TITLE = "eager vs fused (measured now from the recorded graphs, random inputs)"


class ProfileScreen(StoreView):
    VIEW = "profile"
    BINDINGS = [Binding("m", "measure", "Measure eager vs fused")]
    measuring: reactive[bool] = reactive(False, init=False)  # m's worker is running

    def __init__(self) -> None:
        super().__init__()
        self.measured: list[Comparison] | None = None   # rows measured with m
        self.measured_for: str | None = None            # ... for this session file
        self.skipped: list[tuple[str, str]] = []
        self._data: ProfileData | None = None

    def compose_view(self) -> ComposeResult:
        with Grid(id="profile-grid"):
            yield DataTable(id="compare-table", classes="pane", zebra_stripes=True)
            yield DataTable(id="top-ops", classes="pane", zebra_stripes=True)
            yield PlotextPlot(id="memory-plot", classes="pane")
            yield PlotextPlot(id="timing-plot", classes="pane")
        yield ProgressBar(id="compare-progress", show_eta=False)
        yield Static(id="overhead")

    def on_mount(self) -> None:
        compare = self.query_one("#compare-table", DataTable)
        compare.border_title = "eager vs graph (em.compare)"
        compare.add_columns("kernel", "replaces", "eager", "graph", "speedup", "bytes e/g")
        top = self.query_one("#top-ops", DataTable)
        top.border_title = "top eager ops"
        top.add_columns("op", "count", "total", "mean", "share")
        self.query_one("#memory-plot").border_title = "memory over time"
        self.query_one("#timing-plot").border_title = "time per op (ms)"
        super().on_mount()

    def load(self, reader: SessionReader) -> ProfileData:
        return load_profile(reader, self.app.snapshot.ops.count)

    def show_empty(self, why: str) -> None:
        self.query_one("#overhead", Static).update(Text(why, style="dim"))

    def show(self, data: ProfileData) -> None:
        self._data = data
        self._show_comparison(data)
        top = self.query_one("#top-ops", DataTable)
        top.clear()
        for t in data.top_ops:
            top.add_row(literal(t.name), f"{t.count:,}", fmt.duration(t.total_ns),
                        fmt.duration(t.total_ns / t.count if t.count else 0), fmt.share(t.share))
        self._plot_memory(data.memory)
        self._plot_timing(data, self._comparison_rows(data))
        self.query_one("#overhead", Static).update(overhead_text(data))

    def _plot_memory(self, points: list[MemoryPoint]) -> None:
        plot = self.query_one("#memory-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        top = max((p.live_bytes for p in points), default=0)
        unit, scale = next(((u, s) for u, s in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))
                            if top >= s), ("B", 1))
        for device in sorted({p.device for p in points}):
            mine = [p for p in points if p.device == device]
            plt.plot([p.t_s for p in mine], [p.live_bytes / scale for p in mine],
                     label=f"{device} live {unit}")
        plt.xlabel("seconds")
        plot.refresh()

    def _plot_timing(self, data: ProfileData, rows: list[Comparison]) -> None:
        plot = self.query_one("#timing-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        if rows:
            names = [c.kernel for c in rows[:8]]
            plt.multiple_bar(names, [[c.eager_ns / 1e6 for c in rows[:8]],
                                     [c.kernel_ns / 1e6 for c in rows[:8]]],
                             labels=["eager", "graph"])
        elif data.top_ops:
            ops = data.top_ops[:8]
            plt.bar([t.name for t in ops], [t.total_ns / 1e6 for t in ops],
                    orientation="horizontal")
        plot.refresh()

    # --- the comparison table: em.compare rows, else measured ones, else the kernels ------
    def _comparison_rows(self, data: ProfileData) -> list[Comparison]:
        if data.comparisons:
            return data.comparisons
        if self.measured is not None and self.measured_for == self.app.session_path:
            return self.measured
        return []

    def _show_comparison(self, data: ProfileData) -> None:
        compare = self.query_one("#compare-table", DataTable)
        compare.clear()
        rows = self._comparison_rows(data)
        for c in rows:
            compare.add_row(literal(f"{c.graph_id}/{c.kernel}"), literal(" ".join(c.eager_ops)),
                            fmt.duration(c.eager_ns), fmt.duration(c.kernel_ns),
                            c.speedup_text(),
                            f"{fmt.size(c.eager_bytes)}/{fmt.size(c.planned_bytes)}")
        if data.comparisons:
            compare.border_title = "eager vs graph (em.compare)"
        elif rows:
            compare.border_title = MEASURED_TITLE
        elif self.measuring:
            compare.border_title = "measuring eager vs fused…"
        elif data.graph_count:
            compare.border_title = (f"{data.graph_count} graph(s): m measures eager vs fused "
                                    "(no em.compare ran)")
        elif data.kernels:  # kernels but no graph events: nothing to rebuild them from
            compare.border_title = "graph kernels (the session kept no graph IR to measure)"
        else:
            compare.border_title = "eager vs graph: no jitted function has run"
        if not rows:
            for k in data.kernels[:50]:  # the kernels alone, until measured
                compare.add_row(literal(f"{k.graph_id}/{k.kernel}"), literal(" ".join(k.member_ops)), "-",
                                fmt.duration(k.total_ns), "-", fmt.size(k.bytes))

    def action_measure(self) -> None:
        """m: measure eager vs fused for every recorded graph (a worker + a child)."""
        path = self.app.session_path
        if self.measuring:
            return
        if path is None or self._data is None or not self._data.graph_count:
            self.notify("no compiled graph recorded yet: nothing to compare",
                        severity="warning")
            return
        self.measuring = True
        bar = self.query_one("#compare-progress", ProgressBar)
        bar.update(total=self._data.graph_count, progress=0)
        bar.display = True
        self._show_comparison(self._data)
        cancelled = self.app._worker_cancelled
        self.run_worker(lambda: measure_session(path, self.post_message, cancelled),
                        thread=True, group="measure", exit_on_error=False)

    def on_compare_progress(self, message: CompareProgress) -> None:
        bar = self.query_one("#compare-progress", ProgressBar)
        bar.update(total=message.total, progress=message.done)
        self.query_one("#compare-table", DataTable).border_title = literal(
            f"measuring eager vs fused… {message.done + 1}/{message.total} {message.graph}")

    def on_compare_measured(self, message: CompareMeasured) -> None:
        self.query_one("#compare-progress", ProgressBar).display = False
        self.measured, self.measured_for = message.rows, self.app.session_path
        self.skipped = message.skipped
        self.measuring = False
        if message.error:
            self.notify(message.error, title="measuring failed", severity="error")
        for graph, why in message.skipped:
            self.notify(f"{graph}: {why}", title="graph not measured", severity="warning")
        if self._data is not None:
            self._show_comparison(self._data)
            self._plot_timing(self._data, self._comparison_rows(self._data))
