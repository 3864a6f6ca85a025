"""The report's facts, notes and tables as Markdown (for issues, PRs and notebooks)."""

from __future__ import annotations

from pathlib import Path

from execmode.profilers.exporters.common import output_file
from execmode.profilers.report import Report, Table, build_report
from execmode.profilers.session import Session


def export_markdown(session: Session, out: Path, *, progress=None) -> Path:
    """Write the Markdown report of ``session`` to ``out``."""
    text = render(build_report(session))
    with output_file(out) as f:
        f.write(text)
    if progress is not None:
        progress(1, 1)
    return out


def render(report: Report) -> str:
    lines = [f"# {report.title}", ""]
    lines += [f"- **{k}**: {_escape(v)}" for k, v in report.facts]
    if report.notes:
        lines.append("")
        lines += [f"> {_escape(n)}" for n in report.notes]
    for table in report.tables:
        lines += ["", render_table(table)]
    return "\n".join(lines) + "\n"


def render_table(table: Table) -> str:
    lines = [f"## {table.title}", ""]
    lines.append("| " + " | ".join(_escape(h) for h in table.headers) + " |")
    lines.append("|" + "|".join("---:" if a == "r" else "---" for a in table.align) + "|")
    for row in table.rows:
        lines.append("| " + " | ".join(_escape(c) for c in row) + " |")
    if table.note:
        lines += ["", f"_{table.note}_"]
    return "\n".join(lines)


def _escape(text: str) -> str:
    # A pipe would end the cell; newlines would end the row.
    return str(text).replace("|", "\\|").replace("\n", " ")
