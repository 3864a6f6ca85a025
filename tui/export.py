"""``e``: write a report of the session beside it, through the profilers' exporters."""

from __future__ import annotations

from pathlib import Path

FORMATS = (("html", ".html"), ("chrome", ".trace.json"))


def export_session(session_path: str) -> tuple[str, str]:
    """Write an HTML report and a Chrome trace; returns (message, notification severity)."""
    try:
        from execmode.profilers.exporters import export
    except ImportError as exc:
        return (f"the report exporters are not available in this build ({exc}); "
                f"the session is at {session_path}", "warning")
    base = Path(session_path)
    written = []
    for fmt, suffix in FORMATS:
        out = base.with_name(base.name.removesuffix(".emsession") + suffix)
        try:
            written.append(str(export(session_path, out, fmt)))
        except Exception as exc:  # noqa: BLE001 - any exporter failure is reported, not raised
            return f"could not write the {fmt} report: {exc}", "error"
    return "wrote " + " and ".join(written), "information"
