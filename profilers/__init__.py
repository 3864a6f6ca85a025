"""execmode.profilers: recording sessions, and reading and exporting them.

The pipeline, in the order data flows through it::

    recorder.py     the instrumentation listener: op/kernel/graph events -> queued rows
                    (optionally with value statistics of op outputs: execmode/stats.py)
    memory.py       live and peak bytes per device (weak references on op outputs)
    calibration.py  the recorder's own per-op cost, measured at start
    calibration_cache.py  that cost kept per machine in the user cache (measured once)
    writer.py       the background thread that batches rows into the session file
    rows.py         events -> table rows (shapes as "f32[64,512]", interned source lines)
    store.py        the session file: schema (schema.sql), version checks, connections
    op_columns.py   the op row's columns, defined once (writers and readers take them)
    store_rows.py   the rows every reader of a session gets (reports and the TUI alike)
    store_queries.py  the SQL that reads them: ops (the schema's ops view), kernels, totals
    store_pages.py  the SQL of the TUI's tailing, paging by position and search
    session.py      reading a session: rows, aggregates, summary
    report.py       what a report says (tables.py prints it for terminals)
    exporters/      html, chrome trace, speedscope, json, csv, markdown
    pyspy.py        sampling with py-spy; stacks.py sorts samples into categories
    output.py       the script's stdout/stderr, line by line
    runner.py       running a script as __main__ with recording on (CLI child process)
    cli.py          `execmode profile` and `execmode report`
    api.py          `with em.profile() as prof: ...`

Nothing here is imported by ``import execmode``; the names below load on first use.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "profile": "execmode.profilers.api",
    "Profile": "execmode.profilers.api",
    "Recorder": "execmode.profilers.recorder",
    "start_recording": "execmode.profilers.recorder",
    "Session": "execmode.profilers.session",
    "open_session": "execmode.profilers.session",
    "SessionError": "execmode.profilers.errors",
    "export": "execmode.profilers.exporters",
    "eager_peak": "execmode.profilers.memory",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'execmode.profilers' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
