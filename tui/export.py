"""``e``: write the session in any report format, through the profilers' exporters.

The format follows the file name the person types (``run.html``, ``run.trace.json``...),
as ``execmode report`` decides it; the dialog offers one name per format.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

# (format, suffix, what a person calls it): the exporters' formats, the dialog's order.
FORMATS = (
    ("html", ".html", "HTML report"),
    ("chrome", ".trace.json", "Chrome trace (Perfetto)"),
    ("speedscope", ".speedscope.json", "speedscope"),
    ("csv", ".csv", "CSV (one row per op)"),
    ("md", ".md", "Markdown tables"),
    ("json", ".json", "JSON (the whole session)"),
)
LABEL = {fmt: label for fmt, _suffix, label in FORMATS}


def default_path(session_path: str, fmt: str = "html") -> str:
    """Beside the session: ``run.emsession`` -> ``run.html``."""
    base = Path(session_path)
    suffix = dict((f, s) for f, s, _label in FORMATS)[fmt]
    return str(base.with_name(base.name.removesuffix(".emsession") + suffix))


def with_format(path: str, fmt: str) -> str:
    """``path`` with its report suffix replaced by ``fmt``'s (the dialog's format list)."""
    name = path
    for _f, suffix, _label in sorted(FORMATS, key=lambda f: -len(f[1])):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name + dict((f, s) for f, s, _label in FORMATS)[fmt]


def format_of(path: str) -> str | None:
    """The format a typed name asks for, as ``execmode report`` reads it (None: unknown)."""
    try:
        from execmode.profilers.exporters import format_for_path
    except ImportError:
        return None
    return format_for_path(path)


def export_to(session_path: str, out: str,
              progress: Callable[[int, int], None] | None = None) -> tuple[str, str]:
    """Write ``session_path`` to ``out``; returns (message, notification severity)."""
    try:
        from execmode.profilers.exporters import export
    except ImportError as exc:
        return (f"the report exporters are not available in this build ({exc}); "
                f"the session is at {session_path}", "warning")
    fmt = format_of(out)
    if fmt is None:
        return (f"{out}: cannot tell the format from the name; end it with "
                + ", ".join(s for _f, s, _l in FORMATS), "error")
    target = Path(out).expanduser()
    try:
        written = export(session_path, target, fmt, progress=progress)
    except Exception as exc:  # noqa: BLE001 - any exporter failure is reported, not raised
        return f"could not write {target}: {exc}", "error"
    return f"wrote {LABEL.get(fmt, fmt)}: {written}", "information"
