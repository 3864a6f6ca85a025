"""A self-contained HTML report: one file, no scripts, no network.

Summary facts and notes, timing bars for the top ops, the report's tables (top ops and
lines, kernels, eager-vs-graph comparison, graph breaks with their source lines, passes,
compiles, py-spy categories), memory over time as an inline SVG chart, and the end of
the script's output and traceback.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from execmode.profilers.exporters.common import output_file
from execmode.profilers.exporters.svg import bar_chart, line_chart
from execmode.profilers.report import Report, Table, build_report
from execmode.profilers.session import Session

OUTPUT_LINES = 100

_STYLE = """
body{font:14px/1.45 -apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;
max-width:1100px;color:#222;padding:0 16px}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
td,th{padding:3px 10px;border-bottom:1px solid #eee;vertical-align:top}
th{text-align:left;background:#f6f6f6}td.r,th.r{text-align:right}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 16px}
dl.facts dt{font-weight:600}dl.facts dd{margin:0}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:6px 10px;margin:6px 0}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}
code{font-size:12px}.small{color:#666;font-size:12px}
"""


def export_html(session: Session, out: Path, *, progress=None) -> Path:
    """Write the HTML report of ``session`` to ``out``."""
    report = build_report(session)
    output = session.output()[-OUTPUT_LINES:]
    exit_ = session.meta.get("exit") or {}
    with output_file(out) as f:
        f.write(render(report, output, exit_))
    if progress is not None:
        progress(1, 1)
    return out


def render(report: Report, output=(), exit_: dict | None = None) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{escape(report.title)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>{escape(report.title)}</h1>", _facts(report)]
    parts += [f'<div class="note">{escape(n)}</div>' for n in report.notes]
    if report.bars:
        parts.append("<h2>Time by op</h2>")
        parts.append(bar_chart(report.bars, title="total time per op (top)"))
    for table in report.tables:
        parts.append(_table(table))
    if report.categories:
        parts.append(bar_chart([(k, float(n)) for k, n in report.categories],
                               title="py-spy samples by category",
                               value_text=lambda v: f"{v:,.0f} samples"))
    memory = _memory_series(report)
    if memory:
        parts.append("<h2>Memory over time</h2>")
        parts.append(line_chart(memory, title="live bytes of eager tensors per device"))
    if exit_ and exit_.get("traceback"):
        parts.append("<h2>Traceback</h2>")
        parts.append(f"<pre>{escape(exit_['traceback'])}</pre>")
    if output:
        parts.append(f"<h2>Script output (last {len(output)} lines)</h2>")
        text = "\n".join(("! " if o.stream == "stderr" else "  ") + o.text for o in output)
        parts.append(f"<pre>{escape(text)}</pre>")
    parts.append('<p class="small">Written by execmode from the session file. Open the '
                 "Chrome trace export in ui.perfetto.dev for the full timeline.</p>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _facts(report: Report) -> str:
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in report.facts)
    return f'<dl class="facts">{rows}</dl>'


def _table(table: Table) -> str:
    head = "".join(f'<th class="{a}">{escape(h)}</th>'
                   for h, a in zip(table.headers, table.align))
    body = []
    for row in table.rows:
        cells = []
        for cell, a in zip(row, table.align):
            text = escape(cell)
            if table.key == "graph_breaks" and cell is row[-1] and cell:
                text = f"<code>{text}</code>"
            cells.append(f'<td class="{a}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    note = f'<p class="small">{escape(table.note)}</p>' if table.note else ""
    return (f"<h2>{escape(table.title)}</h2><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{note}")


def _memory_series(report: Report) -> dict[str, list[tuple[int, int]]]:
    series: dict[str, list[tuple[int, int]]] = {}
    for m in report.memory:
        series.setdefault(f"{m.device} live", []).append((m.ts_ns - report.t0_ns,
                                                          m.live_bytes))
    return series
