"""Rich renderables for the small panels: status, paused op, op details, tensor summaries.

Pure functions from records to text, so widgets only display and tests can read them.
"""

from __future__ import annotations

from execmode.tui import formatting as fmt
from execmode.tui.records import KernelRow, OpRow, SourceRef
from execmode.tui.state import PausedInfo, RunState
from rich.console import Group
from rich.table import Table
from rich.text import Text

_PHASE_STYLE = {
    "starting": ("…", "dim"), "running": ("▶", "bold green"), "paused": ("‖", "bold yellow"),
    "finished": ("■", "bold"), "failed": ("✖", "bold red"), "restarting": ("↻", "dim"),
    "post-mortem": ("□", "bold cyan"),
}


def status_text(state: RunState, ops: int, label: str = "", waiting_for_input: bool = False,
                input_line_shown: bool = True, width: int = 200, rank: str = "") -> Table:
    """One line: what the script is doing (left) and the mode and op count (right).

    ``waiting_for_input``: the script is blocked reading stdin (the agent said so). It is
    still "running", but a person who sees only that waits for ops that never come, as at
    a terminal with no prompt in sight; so the bar says where to type instead (and, when
    Esc hid the input line, how to bring it back).

    Under 100 columns (``width``) the right side drops the script's name and says "N ops":
    the left side, the news of the stop, gets the room; ``rank`` ("rank 1/2", a run of
    ranks) stays at any width."""
    waiting = waiting_for_input and state.phase in ("starting", "running")
    icon, style = ("▶", "bold cyan") if waiting else _PHASE_STYLE.get(state.phase, ("?", ""))
    left = Text(f" {icon} ", style=style)
    if waiting:
        left.append("waiting for input", style="bold cyan")
        left.append(" (Enter sends the line)" if input_line_shown else
                    ' (ctrl+p "stdin")')
    else:
        left.append_text(_status_words(state))
    right = Text()
    narrow = width < 100
    if label and not narrow:
        right.append(f"{label}  ", style="dim")
    if rank:
        right.append(f"{rank}  ", style="bold")
    right.append(state.mode, style="bold magenta")
    right.append(f" │ {ops:,} op{'' if ops == 1 else 's'}{'' if narrow else ' recorded'} ")
    grid = Table.grid(expand=True)
    grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
    grid.add_column(justify="right", no_wrap=True)
    grid.add_row(left, right)
    return grid


# Pauses the person asked for (the debugger's own words for them): said last, dimmed.
_ROUTINE_REASONS = {"start", "pause", "step", "next"}


def _status_words(state: RunState) -> Text:
    phase = state.phase
    if phase == "paused" and state.paused is not None:
        p = state.paused
        counter = f"kernel {p.kernel_index}" if p.mode == "graph" else f"op {p.op_index}"
        text = Text(f"paused at {counter}", style="bold yellow")
        # Why it stopped comes first when it is news (a breakpoint, an exception, a graph
        # break): at 80 columns the end of the line is cut, and "after kernel matmul"
        # without "breakpoint 1: nan" hides the one thing a person needs to read.
        news = p.reason and p.reason not in _ROUTINE_REASONS
        if news:
            text.append(f" · {p.reason}", style="bold")
        text.append(f" · {p.when} {p.what}")
        if p.where is not None:
            text.append(f" · {p.where.short}", style="cyan")
        if p.reason and not news:
            text.append(f" · {p.reason}", style="dim")
        return text
    if phase in ("finished", "post-mortem") and state.exit is not None:
        e = state.exit
        words = "finished" if phase == "finished" else "post-mortem"
        style = "red" if e.failed else ""
        prefix = "crashed" if e.status in ("killed", "crashed", "vanished") else words
        return Text(f"{prefix}: {e.description}" + (f" (code {e.code})" if e.code else ""),
                    style=style)
    if phase == "failed":
        first = state.message.strip().splitlines()[0] if state.message.strip() else ""
        return Text(f"could not start: {first}", style="red")
    words = {"starting": "starting…", "running": "running", "restarting": "restarting…",
             "post-mortem": "post-mortem"}.get(phase, phase)
    return Text(words + (f" · {state.message}" if state.message else ""))


def session_panel(meta: dict, state: RunState) -> Text:
    """What a recorded session is (shown where a live run shows the paused op)."""
    argv = meta.get("argv") or [meta.get("script") or "?"]
    text = Text("recorded run of ", style="dim")
    text.append(" ".join(str(a).rsplit("/", 1)[-1] if i == 0 else str(a)
                         for i, a in enumerate(argv)), style="bold")
    if meta.get("created"):
        text.append(f"  ({meta['created']})", style="dim")
    if state.exit is not None:
        text.append("\nended: ", style="dim")
        text.append(state.exit.description, style="red" if state.exit.failed else "green")
        if state.exit.traceback:
            text.append("\n" + state.exit.traceback.rstrip(), style="red")
    text.append("\n↑↓ browse the ops · t kernels · Enter: the op's recorded values · "
                "3-9 the other views", style="dim")
    return text


def summary_line(s: dict) -> Text:
    """"f32[64,512]  min -1.2  max 3.4  mean 0.01  NaN 3" from a tensor summary."""
    if "scalar" in s:
        return Text(f"scalar {s['scalar']}", style="dim")
    text = Text(str(s.get("type", "?")), style="bold")
    if "min" in s:
        text.append(f"  min {fmt.number(s.get('min'))}  max {fmt.number(s.get('max'))}"
                    f"  mean {fmt.number(s.get('mean'))}  std {fmt.number(s.get('std'))}")
    if s.get("nan_count"):
        text.append(f"  NaN {s['nan_count']:,}", style="bold red")
    if s.get("inf_count"):
        text.append(f"  Inf {s['inf_count']:,}", style="bold red")
    return text


def paused_panel(p: PausedInfo | None, state: RunState) -> Group | Text:
    """The op (or kernel) the script stopped at, its inputs and output."""
    if p is None:
        if state.phase == "running":
            return Text("running… press p to pause", style="dim")
        if state.exit is not None:
            text = Text(state.exit.description, style="red" if state.exit.failed else "")
            if state.exit.traceback:
                text.append("\n" + state.exit.traceback.rstrip(), style="red")
            return text
        if state.phase == "failed":
            return Text(state.message, style="red")
        return Text("not paused", style="dim")
    parts: list = []
    head = Text(f"{p.when} ", style="dim")
    head.append(p.what, style="bold")
    if p.scope:
        head.append(f"  [{p.scope}]", style="magenta")
    parts.append(head)
    if p.reason:
        parts.append(Text(f"reason: {p.reason}", style="yellow"))
    if p.hunt and p.hunt.get("text"):  # first: at 80x24 only a few lines show
        parts.append(Text("origin: " + p.hunt["text"].rstrip(), style="bold red"))
    for i, s in enumerate(p.inputs):
        line = Text(f"  input:{i}  ", style="dim")
        parts.append(line + summary_line(s))
    if p.output is not None:
        parts.append(Text("  output   ", style="dim") + summary_line(p.output))
    elif p.when == "before" and p.mode == "eager":
        parts.append(Text("  output   (not computed yet: s steps over it)", style="dim"))
    if p.kernel:
        for m in p.kernel.get("members") or ():
            loc = SourceRef.from_json(m.get("location"))
            parts.append(Text(f"  %{m.get('id')} {m.get('op')} {m.get('type', '')}"
                              f"  {loc.short if loc else ''}", style="cyan"))
    if p.traceback:
        parts.append(Text(p.traceback.rstrip(), style="red"))
    return Group(*parts)


def stack_lines(p: PausedInfo | None) -> list[Text]:
    if p is None:
        return []
    lines = []
    for i, frame in enumerate(p.stack):
        text = Text(f"{'→' if i == 0 else ' '} {frame.function or '?'}", style="bold")
        text.append(f"  {frame.short}", style="cyan")
        lines.append(text)
    if p.scope:
        lines.append(Text(f"scope: {p.scope}", style="magenta"))
    return lines


def pending_details(p: PausedInfo) -> Text:
    """The op (or kernel) the script is paused before: what it will run on."""
    failed = p.when == "exception"
    text = Text("raised in: " if failed else "next: ", style="dim")
    text.append(p.what, style="bold red" if failed else "bold yellow")
    args = ", ".join(s.get("type", "?") if "scalar" not in s else str(s["scalar"])
                     for s in p.inputs)
    text.append(f"({args})")
    if p.where is not None:
        text.append(f"  at {p.where.short} in {p.where.function}", style="cyan")
    if p.scope:
        text.append(f"  [{p.scope}]", style="magenta")
    if failed:
        text.append("\nits inputs are in the Tensor view (2); c ends the script", style="dim")
    else:
        text.append("\nnot run yet: " + _step_hint(p), style="dim")
    return text


def _step_hint(p: PausedInfo) -> str:
    """What n and s do from here (graph mode: over or into a fused kernel)."""
    if p.member is not None:
        return "s or n: the kernel's next op, c continues"
    members = (p.kernel or {}).get("member_ops") or ()
    if len(members) > 1:
        return "s steps into the kernel (its ops), n steps over it, c continues"
    if p.kernel:
        return "s or n runs it, c continues"
    return "s runs it, n runs to the next line, c continues"


def op_details(row: OpRow | None, position: int) -> Text:
    """The op under the cursor of the op list (op number ``position``), in full."""
    if row is None:
        return Text("")
    text = Text(f"op {position}: ", style="dim")
    text.append(row.op, style="bold")
    if row.attrs:
        text.append(f"[{row.attrs}]", style="dim")
    text.append(f"  ({row.inputs}) → {row.output}  on {row.device}")
    text.append(f"\n{fmt.duration(row.dur_ns)}, {fmt.size(row.bytes)} allocated", style="green")
    text.append(f"  at {fmt.where(row.file, row.line)} in {row.function or '?'}", style="cyan")
    if row.scope:
        text.append(f"  [{row.scope}]", style="magenta")
    if row.v_min is not None or row.v_nan:
        text.append(f"\nvalues: min {fmt.number(row.v_min)} max {fmt.number(row.v_max)} "
                    f"mean {fmt.number(row.v_mean)} std {fmt.number(row.v_std)}")
        if row.v_nan or row.v_inf:
            text.append(f"  NaN {row.v_nan or 0}  Inf {row.v_inf or 0}", style="bold red")
    return text


def recorded_summary(row: OpRow) -> dict | None:
    """A tensor summary (as the agent sends) from an op's recorded value columns."""
    if row.v_min is None and row.v_nan is None:
        return None
    return {"type": row.output, "shape": [], "dtype": row.output.split("[")[0],
            "device": row.device, "min": row.v_min, "max": row.v_max, "mean": row.v_mean,
            "std": row.v_std, "nan_count": row.v_nan or 0, "inf_count": row.v_inf or 0}


def kernel_details(row: KernelRow | None, position: int) -> Text:
    """The kernel run under the cursor of the kernel list."""
    if row is None:
        return Text("")
    ops = fmt.op_names(row.member_ops)
    text = Text(f"kernel run {position}: ", style="dim")
    text.append(f"{row.graph_id} {row.kernel}", style="bold")
    text.append(f" ({row.step_kind}) {ops} → {row.output or '?'}")
    text.append(f"\n{fmt.duration(row.dur_ns)}, {fmt.size(row.bytes)}", style="green")
    if row.file:
        text.append(f"  at {fmt.where(row.file, row.line)}", style="cyan")
    return text


def tensor_table(s: dict) -> Table:
    """Every statistic of a tensor summary, one per row."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim", no_wrap=True)
    table.add_column()
    table.add_row("type", Text(str(s.get("type", "?")), style="bold"))
    if s.get("shape"):
        table.add_row("shape", str(tuple(s["shape"])))
    table.add_row("dtype / device", f"{s.get('dtype', '?')} / {s.get('device', '?')}")
    if s.get("size") is not None:
        table.add_row("elements", fmt.count(s.get("size")))
    if s.get("base_nbytes") is not None:  # a view's nbytes is not memory it allocated
        table.add_row("memory", f"a view of a {fmt.size(s['base_nbytes'])} base (shared)")
    elif s.get("nbytes") is not None:
        table.add_row("memory", fmt.size(s["nbytes"]))
    for key in ("min", "max", "mean", "std", "abs_max"):
        if key in s:
            table.add_row(key, fmt.number(s.get(key)))
    for key, label in (("nan_count", "NaN"), ("inf_count", "Inf")):
        n = s.get(key) or 0
        table.add_row(label, Text(f"{n:,}", style="bold red" if n else "green"))
    return table


def histogram_text(hist: dict | None, width: int = 40) -> Text:
    """Horizontal bars, one per bin, labelled with the bin's lower edge."""
    if not hist or not hist.get("counts"):
        return Text("no histogram (no finite values)", style="dim")
    counts, edges = hist["counts"], hist["edges"]
    top = max(counts) or 1
    text = Text(no_wrap=True, overflow="ellipsis")
    for i, n in enumerate(counts):
        bar = "█" * round(width * n / top)
        text.append(f"{edges[i]:>11.4g} ", style="dim")
        text.append(bar or "▏", style="blue")
        text.append(f" {n:,}\n")
    text.append(f"{edges[-1]:>11.4g}", style="dim")
    return text
