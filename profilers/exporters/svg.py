"""Inline SVG charts for the HTML report: a memory-over-time line chart and timing bars.

Plain strings, no scripts and no external fonts or styles: the report must open offline.
"""

from __future__ import annotations

from html import escape

from execmode.profilers.units import fmt_bytes, fmt_ns

MAX_POINTS = 1500  # a polyline beyond this is thinned (keeping each bucket's maximum)
_COLORS = ("#3b6ea5", "#c0504d", "#9bbb59", "#8064a2", "#f79646", "#4bacc6")


def line_chart(series: dict[str, list[tuple[int, int]]], *, width: int = 860,
               height: int = 240, title: str = "") -> str:
    """Step-free line chart of (t_ns, bytes) points per named series."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return ""
    left, right, top, bottom = 70, 10, 24, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    x_max = max(p[0] for p in points) or 1
    x_min = min(p[0] for p in points)
    y_max = max(p[1] for p in points) or 1
    span = max(x_max - x_min, 1)

    def xy(t, v):
        return (left + (t - x_min) / span * plot_w, top + plot_h - v / y_max * plot_h)

    parts = [_open(width, height, title)]
    parts.append(f'<text x="{left}" y="16" class="t">{escape(title)}</text>')
    for i in range(5):  # horizontal grid with byte labels
        v = y_max * i / 4
        _, y = xy(x_min, v)
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" '
                     'stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" '
                     f'class="a">{fmt_bytes(v)}</text>')
    for i in range(5):
        t = x_min + span * i / 4
        x, _ = xy(t, 0)
        parts.append(f'<text x="{x:.1f}" y="{height - 10}" text-anchor="middle" '
                     f'class="a">{fmt_ns(t)}</text>')
    for i, (name, pts) in enumerate(series.items()):
        color = _COLORS[i % len(_COLORS)]
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(t, v) for t, v in thin(pts)))
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
                     f'points="{coords}"><title>{escape(name)}</title></polyline>')
        parts.append(f'<text x="{width - right - 4}" y="{top + 14 * (i + 1)}" '
                     f'text-anchor="end" class="a" fill="{color}">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(items: list[tuple[str, float]], *, width: int = 860, title: str = "",
              value_text=fmt_ns) -> str:
    """Horizontal bars, longest first as given."""
    if not items:
        return ""
    bar_h, gap, label_w, top = 18, 4, 220, 24
    height = top + len(items) * (bar_h + gap) + 6
    biggest = max(v for _, v in items) or 1
    room = width - label_w - 100
    parts = [_open(width, height, title),
             f'<text x="0" y="16" class="t">{escape(title)}</text>']
    for i, (label, value) in enumerate(items):
        y = top + i * (bar_h + gap)
        w = max(1.0, value / biggest * room)
        short = label if len(label) <= 32 else "…" + label[-31:]
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" '
                     f'class="a">{escape(short)}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                     f'fill="{_COLORS[0]}"><title>{escape(label)}</title></rect>')
        parts.append(f'<text x="{label_w + w + 6:.1f}" y="{y + 13}" '
                     f'class="a">{escape(value_text(value))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def thin(points: list[tuple[int, int]], limit: int = MAX_POINTS) -> list[tuple[int, int]]:
    """At most ``limit`` points: per bucket, the point with the largest value (peaks stay)."""
    if len(points) <= limit:
        return points
    size = len(points) / limit
    out = []
    for i in range(limit):
        bucket = points[int(i * size): int((i + 1) * size)] or points[-1:]
        out.append(max(bucket, key=lambda p: p[1]))
    return out


def _open(width: int, height: int, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">'
            '<style>.t{font:bold 13px sans-serif}.a{font:11px sans-serif}</style>')
