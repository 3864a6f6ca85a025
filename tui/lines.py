"""Line sources: what a RowList shows, one rich Text per row, made only for visible rows.

A RowList asks its source for ``len(source)`` and ``source.line(i)``; it never holds the
rows. Paged sources get 64 rows at a time from the session store through the app's page
fetcher (a worker thread), so scrolling a million-op list touches ~40 rows.
"""

from __future__ import annotations

from typing import Protocol

from execmode.tui import formatting as fmt
from execmode.tui.ir_diff import DiffLine
from execmode.tui.pages import PAGE, PageFetcher
from execmode.tui.records import EMPTY_INDEX, KernelRow, OpRow, OutputRow, RowIndex
from execmode.tui.state import PausedInfo
from rich.text import Text


class LineSource(Protocol):
    def __len__(self) -> int: ...

    def line(self, index: int) -> Text: ...


class TextLines:
    """A fixed list of lines (IR text, a traceback, a help table)."""

    def __init__(self, lines=(), empty: str = ""):
        self.lines = [x if isinstance(x, Text) else Text(str(x)) for x in lines]
        if not self.lines and empty:
            self.lines = [Text(empty, style="dim italic")]
        self.width = max((x.cell_len for x in self.lines), default=0)

    def __len__(self) -> int:
        return len(self.lines)

    def line(self, index: int) -> Text:
        return self.lines[index]


class PagedRows:
    """Rows of a store table by position, formatted on demand.

    Rows come from the app's :class:`~execmode.tui.pages.PageFetcher`; a row not read
    yet draws as "…" and its list redraws when the page arrives (``owner`` is told).
    """

    table = "ops"
    width = None
    # Under 100 columns the list pane is ~30 columns wide (the source pane gets the rest):
    # the rows put the number, the op and its time first, whole, and cut only the text
    # after them (compact_header); the subclasses' format methods read it.
    compact = False

    def __init__(self, pages: PageFetcher | None, index: RowIndex = EMPTY_INDEX,
                 pending: PausedInfo | None = None, found: tuple[int, int] | None = None):
        self.pages = pages
        self.index = index
        self.pending = pending  # paused before this op/kernel: not run, not stored yet
        self.owner = None       # the RowList showing these rows (set by the RowList)
        # A search result (see op_query): (generation, count) of the fetcher's found
        # table; rows are then read by position in that result, not in the table.
        self.found = found

    def grow(self, index: RowIndex) -> None:
        """The table has more rows (rows already read never change)."""
        self.index = index

    @property
    def stored(self) -> int:
        """How many stored rows the list shows (the paused row comes after them)."""
        return self.found[1] if self.found is not None else self.index.count

    def __len__(self) -> int:
        return self.stored + (1 if self.pending is not None else 0)

    def is_pending(self, index: int) -> bool:
        return self.pending is not None and index == self.stored

    @property
    def error(self) -> str | None:
        return self.pages.error if self.pages is not None else None

    def row(self, index: int):
        """The row at ``index``, or None while its page is being read."""
        if self.pages is None or not 0 <= index < self.stored:
            return None
        page_no, offset = divmod(index, PAGE)
        if self.found is not None:
            generation, count = self.found
            page = self.pages.get((self.table, generation), RowIndex(count, 0, ()), page_no,
                                  self.owner)
        else:
            page = self.pages.get(self.table, self.index, page_no, self.owner)
        return page[offset] if page is not None and offset < len(page) else None

    def line(self, index: int) -> Text:
        if self.is_pending(index):
            return self.format_pending(self.number_of_pending(index), self.pending)
        row = self.row(index)
        if row is None:  # its number comes with the row: never a guess
            return Text(f"{'':>7}  …", style="dim")
        return self.format(self.number(index, row), row)

    def number(self, index: int, row) -> int:
        """The number a row shows (output lines: their place in the list)."""
        return index + 1

    def number_of_pending(self, index: int) -> int:
        """The number of the op or kernel run the script is paused before: the next after
        the stored rows (the subclasses take the agent's own, which says so exactly)."""
        return self.index.count + 1

    def format(self, number: int, row) -> Text:
        raise NotImplementedError

    def format_pending(self, number: int, p: PausedInfo) -> Text:
        raise NotImplementedError


OP_HEADER = f"{'#':>7}  {'op':<12} {'output':<14} {'time':>8}  {'line':<18} scope"
KERNEL_HEADER = f"{'#':>7}  {'graph':<12} {'kernel':<8} {'kind':<8} {'time':>9}  member ops"
COMPACT_OP_HEADER = f"{'#':>5} {'op':<9} {'time':>8} output"
COMPACT_KERNEL_HEADER = f"{'#':>5} {'kernel':<7} {'time':>8} member ops"


def list_header(kind: str, compact: bool) -> str:
    """The header over the Ops view's list: ``kind`` "ops" or "kernels"."""
    if kind == "kernels":
        return COMPACT_KERNEL_HEADER if compact else KERNEL_HEADER
    return COMPACT_OP_HEADER if compact else OP_HEADER


class OpLines(PagedRows):
    """Executed eager ops, plus the op the script is paused before (not run yet).

    An op's number is the store's seq (its place in the session's run, from 1), the same
    in a search, a sort, the status bar, the Tensor view's ``op:N`` and every export
    (docs/session-store.md, "How ops and kernels are numbered")."""

    table = "ops"

    def number(self, index: int, row: OpRow) -> int:
        return row.seq

    def number_of_pending(self, index: int) -> int:
        # The agent numbers the op it holds as the store will (debug/numbering.py).
        return self.pending.op_index or super().number_of_pending(index)

    def format_pending(self, number: int, p: PausedInfo) -> Text:
        loc = p.where
        failed = p.when == "exception"
        style = "bold red" if failed else "bold yellow"
        if self.compact:
            text = Text(f"{number:>5} ", style="bold")
            text.append(f"{'✖' if failed else '▶'}{fmt.clip(p.op or '?', 8):<8} ", style=style)
            text.append(f"{'(raised)' if failed else '(next)':>8}", style=style)
            return text
        text = Text(f"{number:>7} ", style="bold")
        text.append(f"{'✖' if failed else '▶'}{fmt.clip(p.op or '?', 12):<12} ", style=style)
        text.append(f"{'(raised)' if failed else '(next)':<14} {'':>8}  ", style=style)
        text.append(f"{fmt.where(loc.filename, loc.lineno) if loc else '?':<18} ",
                    style="cyan")
        text.append(p.scope, style="dim")
        return text

    def format(self, number: int, row: OpRow) -> Text:
        style = "red" if row.v_nan or row.v_inf else ""
        if self.compact:
            text = Text(f"{number:>5} ", style="dim")
            text.append(f"{fmt.clip(row.op, 9):<9} ", style=style or "bold")
            text.append(f"{fmt.duration(row.dur_ns):>8} ", style="green")
            text.append(row.output)
            return text
        text = Text(f"{number:>7}  ", style="dim")
        text.append(f"{fmt.clip(row.op, 12):<12} ", style=style or "bold")
        text.append(f"{fmt.clip(row.output, 14):<14} ")
        text.append(f"{fmt.duration(row.dur_ns):>8}  ", style="green")
        text.append(f"{fmt.clip(fmt.where(row.file, row.line), 18):<18} ", style="cyan")
        text.append(row.scope, style="dim")
        return text


class KernelLines(PagedRows):
    """Executed steps of compiled plans (graph mode), plus the kernel paused before.

    A kernel run's number is the store's ``kernels.id`` (its place among the session's
    kernel runs, from 1), as the status bar's ``kernel N`` and the exports number it."""

    table = "kernels"

    def number(self, index: int, row: KernelRow) -> int:
        return row.id

    def number_of_pending(self, index: int) -> int:
        return self.pending.kernel_index or super().number_of_pending(index)

    def format_pending(self, number: int, p: PausedInfo) -> Text:
        k = p.kernel or {}
        if self.compact:
            text = Text(f"{number:>5} ", style="bold")
            text.append(f"▶{fmt.clip(str(k.get('name', '?')), 6):<6} ", style="bold yellow")
            text.append(f"{'(next)':>8} ", style="yellow")
            text.append(" ".join(k.get("member_ops") or ()), style="dim")
            return text
        text = Text(f"{number:>7} ", style="bold")
        text.append(f"▶{fmt.clip(str(k.get('graph_id', '?')), 12):<12} ", style="bold yellow")
        text.append(f"{fmt.clip(str(k.get('name', '?')), 8):<8} ", style="bold yellow")
        text.append(f"{fmt.clip(str(k.get('kind', '')), 8):<8} ", style="magenta")
        text.append(f"{'(next)':>9}  ", style="yellow")
        text.append(" ".join(k.get("member_ops") or ()), style="dim")
        return text

    def format(self, number: int, row: KernelRow) -> Text:
        ops = fmt.op_names(row.member_ops)
        if self.compact:
            text = Text(f"{number:>5} ", style="dim")
            text.append(f"{fmt.clip(row.kernel, 7):<7} ", style="bold")
            text.append(f"{fmt.duration(row.dur_ns):>8} ", style="green")
            text.append(ops, style="dim")
            return text
        text = Text(f"{number:>7}  ", style="dim")
        text.append(f"{fmt.clip(row.graph_id, 12):<12} ")
        text.append(f"{fmt.clip(row.kernel, 8):<8} ", style="bold")
        text.append(f"{fmt.clip(row.step_kind, 8):<8} ", style="magenta")
        text.append(f"{fmt.duration(row.dur_ns):>9}  ", style="green")
        text.append(ops, style="dim")
        return text


class StoredOutput(PagedRows):
    """The script's output as the session recorded it (post-mortem)."""

    table = "output"

    def format(self, number: int, row: OutputRow) -> Text:
        return output_text(row.stream, row.text)


class LiveOutput:
    """The script's output as the controller forwards it (a live run)."""

    width = None

    def __init__(self, lines: list[tuple[str, str]]):
        self.lines = lines  # shared with the app, appended as batches arrive

    def __len__(self) -> int:
        return len(self.lines)

    def line(self, index: int) -> Text:
        stream, text = self.lines[index]
        return output_text(stream, text)


def output_text(stream: str, text: str) -> Text:
    return Text(text.expandtabs(), style="red" if stream == "stderr" else "")


class SourceLines:
    """A source file, highlighted, with a gutter: ▶ the paused line, ● breakpoints."""

    def __init__(self, lines: list[Text], current: int | None = None,
                 breakpoints: frozenset[int] = frozenset(), marked: int | None = None):
        self.lines = lines
        self.current = current          # 1-based line the script is paused at
        self.breakpoints = breakpoints
        self.marked = marked            # a line another view asked to show
        self.width = max((x.cell_len for x in lines), default=0) + 8

    def __len__(self) -> int:
        return len(self.lines)

    def line(self, index: int) -> Text:
        lineno = index + 1
        mark = "▶" if lineno == self.current else " "
        dot = "●" if lineno in self.breakpoints else " "
        text = Text()
        text.append(dot, style="bold red")
        text.append(mark, style="bold yellow")
        text.append(f"{lineno:>5} ", style="dim")
        body = self.lines[index].copy()
        if lineno == self.current:
            body.stylize("on #3a3a00")
        elif lineno == self.marked:
            body.stylize("on #003a3a")
        text.append_text(body)
        return text


_DIFF_STYLE = {
    "plain": ("  ", ""),
    "changed": ("~ ", "yellow"),
    "added": ("+ ", "green"),
    "removed": ("- ", "red strike"),
    "merged": ("= ", "magenta"),
    "fused": ("» ", "cyan"),
}


def ir_text(line: str, style: str = "", note: str = "") -> Text:
    """An IR line for the screen: the engine pads the ``# file:line`` comments to a column;
    here they follow the code closely (and dimmed), so a narrow pane still shows them."""
    code, sep, comment = line.partition("  # ")
    text = Text(code.rstrip(), style=style)
    if note:
        text.append(f"  ← {note}", style=f"italic {style}")
    if sep:
        text.append(f"  # {comment.strip()}", style="dim")
    return text


class DiffLines:
    """The graph after a pass, changes coloured (see :mod:`execmode.tui.ir_diff`)."""

    def __init__(self, lines: list[DiffLine]):
        self.lines = lines
        self.width = max((len(x.text) + len(x.note) + 4 for x in lines), default=0)

    def __len__(self) -> int:
        return len(self.lines)

    def line(self, index: int) -> Text:
        d = self.lines[index]
        sign, style = _DIFF_STYLE.get(d.status, ("  ", ""))
        text = Text(sign, style=style or "dim")
        text.append_text(ir_text(d.text, style, d.note))
        if d.highlight:
            text.stylize("reverse")
        return text
