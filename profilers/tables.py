"""Plain-text tables for terminals: the CLI summary and ``prof.table()``."""

from __future__ import annotations

from execmode.profilers.report import Report, Table


def render_table(table: Table, max_cell: int = 48) -> str:
    """A fixed-width table with a title line, numbers right-aligned."""
    cells = [[_cut(c, max_cell) for c in row] for row in table.rows]
    widths = [len(h) for h in table.headers]
    for row in cells:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))

    def line(row):
        parts = [c.rjust(w) if a == "r" else c.ljust(w)
                 for c, w, a in zip(row, widths, table.align)]
        return "  ".join(parts).rstrip()

    out = [table.title, line(table.headers), "  ".join("-" * w for w in widths)]
    out += [line(row) for row in cells]
    if table.note:
        out.append(f"({table.note})")
    return "\n".join(out)


def render_summary(report: Report, keys=("top_ops", "top_kernels", "comparison", "samples",
                                         "graph_breaks")) -> str:
    """The short terminal summary: facts, notes and a few tables."""
    width = max((len(k) for k, _ in report.facts), default=0)
    out = [report.title]
    out += [f"  {k.ljust(width)}  {v}" for k, v in report.facts]
    for table in report.tables:
        if table.key in keys and table.rows:
            out += ["", render_table(table)]
    if report.notes:
        out.append("")
        out += [f"note: {n}" for n in report.notes]
    return "\n".join(out)


class TextTable:
    """A printable table (``print(prof.table())``) that also keeps its rows."""

    def __init__(self, table: Table, rows: list):
        self.table = table
        self.rows = rows

    def __str__(self) -> str:
        return render_table(self.table)

    def __repr__(self) -> str:
        return str(self)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1):]
