"""Exporters: pure functions from a session file to a report file.

Each takes a :class:`~execmode.profilers.session.Session` (or a path to one) and an output
path, reads only the session, and writes one file:

=========== ====================================================================
html        a self-contained HTML report (no network; charts as inline SVG)
chrome      Chrome trace event JSON (open in https://ui.perfetto.dev)
speedscope  speedscope JSON: evented op/kernel profiles, py-spy as sampled
json        the whole session as one JSON document
csv         one table as CSV (per-op rows by default)
md          the report's tables in Markdown
=========== ====================================================================
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from execmode.profilers.errors import SessionError
from execmode.profilers.session import Session, open_session

# format -> (module, function, default suffix)
FORMATS = {
    "html": ("html", "export_html", ".html"),
    "chrome": ("chrome", "export_chrome", ".trace.json"),
    "speedscope": ("speedscope", "export_speedscope", ".speedscope.json"),
    "json": ("session_json", "export_json", ".json"),
    "csv": ("csv_tables", "export_csv", ".csv"),
    "md": ("markdown", "export_markdown", ".md"),
}
_SUFFIXES = [  # longest first: "x.trace.json" is chrome, "x.json" is json
    (".trace.json", "chrome"), (".speedscope.json", "speedscope"), (".html", "html"),
    (".htm", "html"), (".json", "json"), (".csv", "csv"), (".md", "md"),
    (".markdown", "md"),
]


def format_for_path(path: str | os.PathLike) -> str | None:
    """The format a file name asks for (``report.html`` -> "html"), or None."""
    name = os.fspath(path).lower()
    return next((fmt for suffix, fmt in _SUFFIXES if name.endswith(suffix)), None)


def suffix_for(fmt: str) -> str:
    return FORMATS[fmt][2]


def export(session: Session | str | os.PathLike, out: str | os.PathLike,
           fmt: str | None = None, *, progress=None, **options) -> Path:
    """Write ``session`` to ``out`` in ``fmt`` (default: from the suffix of ``out``).

    ``progress(done, total)`` is called now and then on long exports.
    """
    fmt = fmt or format_for_path(out)
    if fmt is None:
        raise SessionError(f"{out}: cannot tell the format from the file name; "
                           f"choose one of {', '.join(FORMATS)}")
    if fmt not in FORMATS:
        raise SessionError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    module_name, function_name, _ = FORMATS[fmt]
    module = importlib.import_module(f"{__name__}.{module_name}")
    exporter = getattr(module, function_name)
    out = Path(out)
    if isinstance(session, Session):
        return exporter(session, out, progress=progress, **options)
    with open_session(session) as opened:
        return exporter(opened, out, progress=progress, **options)
