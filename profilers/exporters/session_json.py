"""The whole session as one JSON document: meta, summary, and every table's rows.

Streamed row by row, so large sessions export without loading at once. Ops keep their
recording-clock timestamps; ``meta.t0_ns`` is the session start on that clock.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from execmode.profilers import store
from execmode.profilers.exporters.common import Progress, output_file
from execmode.profilers.session import Session

FORMAT = "execmode-session-json"


def export_json(session: Session, out: Path, *, progress=None) -> Path:
    """Write every table of ``session`` to ``out`` as one JSON object."""
    tick = Progress(progress, session.count("op_events") + session.count("kernels"))
    dump = _dumps
    with output_file(out) as f:
        f.write(f'{{"format": "{FORMAT}", "schema_version": {session.schema_version},\n')
        f.write(f'"meta": {dump(session.meta)},\n')
        f.write(f'"summary": {dump(session.summary())},\n')
        f.write(f'"op_totals": {dump([t._asdict() for t in session.op_totals()])},\n')
        _write_rows(f, "ops", (r._asdict() for r in session.ops()), tick)
        _write_rows(f, "kernel_totals", session.kernel_sums())
        _write_rows(f, "graph_runs", session.graph_runs())
        _write_rows(f, "kernels", (k._asdict() for k in session.kernels()), tick)
        _write_rows(f, "events", (e._asdict() for e in session.events()))
        _write_rows(f, "memory", (m._asdict() for m in session.memory()))
        _write_rows(f, "samples", (s._asdict() for s in session.samples()))
        _write_rows(f, "output", (o._asdict() for o in session.output()))
        _write_rows(f, "comparisons", (c._asdict() for c in session.comparisons()),
                    last=True)
        f.write("}\n")
    tick.finish()
    return out


def _write_rows(f, name: str, rows, tick: Progress | None = None, last: bool = False) -> None:
    f.write(f'"{name}": [')
    first = True
    for row in rows:
        f.write("\n" if first else ",\n")
        first = False
        f.write(_dumps(row))
        if tick is not None:
            tick.step()
    f.write("]\n" if last else "],\n")


def _dumps(value) -> str:
    return json.dumps(_strict(value), default=store.jsonable, separators=(",", ":"))


def _strict(value):
    """A value summary may hold inf/-inf (a tensor holding Inf): JSON has no Infinity, so
    they are written as the strings "inf"/"-inf", as the debugger writes them."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    return value
