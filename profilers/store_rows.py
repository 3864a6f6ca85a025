"""The rows a reader of the session store gets: one immutable record per kind of row.

Every reader builds these, :class:`~execmode.profilers.session.Session` (reports,
exporters, ``em.profile``) and the TUI's ``SessionReader`` alike, from the queries of
:mod:`execmode.profilers.store_queries`; so a column added to the store is added here once.
"""

from __future__ import annotations

import os
from typing import NamedTuple


class SourceRef(NamedTuple):
    """A line of the user's code (a ``locations`` row, or an event's ``location``)."""

    filename: str
    lineno: int
    function: str = ""

    @property
    def short(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"

    @classmethod
    def from_json(cls, data) -> SourceRef | None:
        if not isinstance(data, dict) or not data.get("filename"):
            return None
        return cls(str(data["filename"]), int(data.get("lineno") or 0),
                   str(data.get("function") or ""))


class OpRow(NamedTuple):
    """One eager op: a row of the schema's ``ops`` view (op_events with its source line;
    its fields are op_columns.VIEW_COLUMNS)."""

    seq: int
    op: str
    scope: str
    file: str | None
    line: int | None
    function: str | None
    start_ns: int
    dur_ns: int
    bytes: int
    inputs: str
    output: str
    device: str
    attrs: str | None
    v_min: float | None
    v_max: float | None
    v_mean: float | None
    v_std: float | None
    v_nan: int | None
    v_inf: int | None
    thread: int | None = None  # None: the script's main thread (meta "threads" names others)

    @property
    def source(self) -> SourceRef | None:
        return SourceRef(self.file, self.line or 0, self.function or "") if self.file else None


class KernelRow(NamedTuple):
    """One executed step of a compiled plan, with its source line."""

    id: int
    graph_id: str
    kernel: str
    step_kind: str
    # JSON lists in the store, decoded by the reader: a report refuses a damaged value,
    # the TUI keeps the stored text to show it as it is (store_queries.kernel_row).
    member_nodes: list
    member_ops: list
    start_ns: int
    dur_ns: int
    bytes: int
    output: str | None
    device: str | None
    scope: str | None
    file: str | None
    line: int | None
    function: str | None

    @property
    def source(self) -> SourceRef | None:
        return SourceRef(self.file, self.line or 0, self.function or "") if self.file else None


class EventRow(NamedTuple):
    id: int
    kind: str
    start_ns: int
    end_ns: int
    graph_id: str | None
    data: dict


class MemoryRow(NamedTuple):
    ts_ns: int
    device: str
    live_bytes: int
    peak_bytes: int
    source: str


class StackSample(NamedTuple):
    thread: str
    frames: list  # "function (file:line)", root first
    count: int
    category: str


class OutputRow(NamedTuple):
    ts_ns: int
    stream: str
    text: str


class Comparison(NamedTuple):
    """An em.compare row: one compiled step next to the eager ops it replaced."""

    function: str
    graph_id: str
    kernel: str
    step_kind: str
    eager_ops: list
    eager_count: int
    eager_ns: int
    kernel_ns: int
    eager_bytes: int
    planned_bytes: int
    repeat: int                # calls per round
    rounds: int | None = None  # None: a session older than schema 3 (a mean, not medians)
    verdict: str | None = None  # "1.84x" or "undecided (why)"; None: removed, or older

    @property
    def speedup(self) -> float | None:
        """The ratio, only when the measurement decided one."""
        if self.rounds is not None:
            return self.eager_ns / self.kernel_ns if self.verdict and \
                not self.verdict.startswith("undecided") and self.kernel_ns > 0 else None
        return self.eager_ns / self.kernel_ns if self.kernel_ns > 0 else None

    def speedup_text(self) -> str:
        """The verdict as a table cell: "1.84x", "undecided (overlap)", "removed"."""
        if self.verdict is not None:
            return self.verdict
        if self.step_kind == "removed":
            return "removed"
        speedup = self.speedup
        return f"{speedup:.2f}x" if speedup is not None else "-"


class OpTotal(NamedTuple):
    """One line of an aggregate table: all ops (or kernels) sharing a key."""

    name: str
    count: int
    total_ns: int
    min_ns: int
    max_ns: int
    bytes: int
    share: float  # of the summed time of all rows in the table

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.count if self.count else 0.0


class KernelTotal(NamedTuple):
    """All executions of one step of one compiled graph."""

    graph_id: str
    kernel: str
    step_kind: str
    member_ops: list
    calls: int
    total_ns: int
    bytes: int
