"""Human-readable durations and sizes, shared by every report."""

from __future__ import annotations


def fmt_ns(ns: float | int | None) -> str:
    """812 ns, 12.3 us, 4.56 ms, 1.23 s."""
    if ns is None:
        return "-"
    ns = float(ns)
    size = abs(ns)
    if size < 1e3:
        return f"{ns:.0f} ns"
    if size < 1e6:
        return f"{ns / 1e3:.3g} us"
    if size < 1e9:
        return f"{ns / 1e6:.3g} ms"
    return f"{ns / 1e9:.3g} s"


def fmt_bytes(n: float | int | None) -> str:
    """512 B, 1.5 KiB, 3.2 MiB, 1.1 GiB."""
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} TiB"  # unreachable: GiB is the last unit


def fmt_share(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f}%"


def fmt_speedup(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"
