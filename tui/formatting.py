"""Numbers as people read them: durations, byte sizes, counts, short paths; and text
from a script, a user, a file name or a value as it is (:func:`literal`), never markup."""

from __future__ import annotations

import json
import math
import os

from rich.text import Text


def duration(ns: float | None) -> str:
    """1234 -> "1.23 µs"; always 3 significant digits, so columns stay narrow."""
    if ns is None:
        return "-"
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"


def size(n: float | None) -> str:
    """Bytes: 1536 -> "1.5 KiB"."""
    if n is None:
        return "-"
    n = float(n)
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def number(v) -> str:
    """A statistic: "nan" for the None that JSON uses for non-finite values."""
    if v is None:
        return "nan"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return f"{v:.6g}"
    return str(v)


def speedup(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def share(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


def where(filename: str | None, lineno: int | None) -> str:
    """"train.py:42" (the base name only: paths are long and screenshots must not leak)."""
    if not filename:
        return "?"
    return f"{os.path.basename(filename)}:{lineno or 0}"


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def op_names(text) -> str:
    """A kernel's member ops (a list of names, or the JSON text of one) as "mul add tanh";
    a damaged value is shown as it is stored, never raised (the TUI browses what it can)."""
    if isinstance(text, list):  # the reader decoded it (tui/data.py keeps damaged text)
        return " ".join(str(n) for n in text)
    try:
        names = json.loads(text) if text else []
    except (TypeError, ValueError):
        return str(text)
    if not isinstance(names, list):
        return str(text)
    return " ".join(str(n) for n in names)


def literal(value) -> Text:
    """``value`` as text shown exactly as it is: ``[/x]`` in a prompt, a slice, a search or
    an op's name is data, never markup. Every title, label, cell and message that holds
    text from a script or a person goes through this (or is built from ``Text``)."""
    return value if isinstance(value, Text) else Text(str(value))
