"""What the views read: plain, immutable records built by :mod:`execmode.tui.data`.

Views never see SQL or JSON text, only these. Event payloads that vary by engine version
(graph, pass, compile) keep their decoded JSON in ``data`` next to the fields every view
needs, so a new field in the store reaches the view without a change here.
"""

from __future__ import annotations

from typing import NamedTuple

# The store's rows, as every reader of a session gets them (profilers/store_rows.py);
# the views take them from here with the records below, which are the TUI's own.
from execmode.profilers.store_rows import (  # noqa: F401
    Comparison,
    KernelRow,
    KernelTotal,
    OpRow,
    OpTotal,
    OutputRow,
    SourceRef,
)


class RowIndex(NamedTuple):
    """How to find row ``i`` of an append-only table without loading every row.

    ``blocks[b]`` is the key of row ``b * block``; a page read seeks to the block start
    and skips at most ``block - 1`` rows. Immutable, so the tailer thread can hand a new
    one to the UI thread while the old one is still being read.
    """

    count: int
    last_key: int
    blocks: tuple[int, ...]
    block: int = 1024


# last_key -1: "every key is after the last one seen", so the first row is kept even when
# its key is 0 (op seq numbers start at 0; a last_key of 0 used to drop the first op).
EMPTY_INDEX = RowIndex(0, -1, ())


class StoreSnapshot(NamedTuple):
    """How far the session file has grown: posted by the tailer when anything changed."""

    ops: RowIndex
    kernels: RowIndex
    output: RowIndex
    events: int          # last events.id: graphs, passes, breaks, compiles, ...
    memory: int          # last memory.id
    samples: int
    comparisons: int
    meta_version: int    # changes when meta changes (exit status, end stamps)

    @property
    def generation(self) -> tuple:
        """Changes whenever aggregate views should reload."""
        return (self.ops.count, self.kernels.count, self.events, self.memory,
                self.samples, self.comparisons, self.meta_version)


EMPTY_SNAPSHOT = StoreSnapshot(EMPTY_INDEX, EMPTY_INDEX, EMPTY_INDEX, 0, 0, 0, 0, 0)


class GraphInfo(NamedTuple):
    """One compiled graph segment (a ``graph`` event)."""

    graph_id: str
    function: str
    ir_text: str
    lowered_text: str
    compile_ns: int
    steps: list
    ir_json: dict
    lowered_json: dict


class TraceInfo(NamedTuple):
    function: str
    graph_id: str
    segment: int
    signature: str
    node_count: int
    location: SourceRef | None


class RetraceInfo(NamedTuple):
    function: str
    reason: str
    signature: str
    start_ns: int


class BreakInfo(NamedTuple):
    function: str
    graph_id: str
    reason: str
    op: str
    location: SourceRef | None
    segment_before: int
    segment_after: int
    start_ns: int


class PassInfo(NamedTuple):
    graph_id: str
    index: int
    name: str
    wall_ns: int
    node_count: int
    kernel_count: int
    buffer_count: int
    rewrites: list       # [{sentence, nodes, kind}]
    diff: dict           # {kept, changed, removed, added, merged, fused}
    ir_text: str
    ir_json: dict


class CompileInfo(NamedTuple):
    graph_id: str
    kernel: str
    language: str
    source: str
    compile_ns: int
    cache_hit: bool | None
    member_nodes: list
    member_ops: list
    backend: str
    shared_by: int = 1   # kernels compiled in the same unit, in the same compile_ns


class MemoryPoint(NamedTuple):
    t_s: float           # seconds since the session started
    device: str
    live_bytes: int
    peak_bytes: int


class MemoryPlanInfo(NamedTuple):
    graph_id: str
    planned_peak: int
    unplanned_peak: int
    eager_peak: int
    buffers: int


class SessionOverview(NamedTuple):
    """The session's facts from ``meta``: what ran, how it ended, what it cost."""

    path: str
    script: str | None
    argv: list
    exit: dict | None
    calibration: dict
    pyspy: dict
    recorded: dict
    t0_ns: int
    meta: dict
