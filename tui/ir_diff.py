"""The IR text as lines that know their node, and the coloured diff the Passes view shows.

The engine prints graphs one node per line (``%3:f32[4,3] = maximum %2 0  # t.py:4``;
fused kernels list their members as ``| %4:...`` lines under them). A pass record keeps
the text after every pass and a node-level diff (kept, changed, removed, added, merged,
fused). :func:`diff_lines` lines the two texts up by node id and marks each line, and
can show the graph part-way through a pass: only the nodes of the rewrites applied so far
take their new form, which is how the view steps through rewrites one at a time.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import NamedTuple

from execmode.tui.records import SourceRef

_NODE = re.compile(r"^\s*(?:let\s+)?(\|\s+)?%(\d+):")


class IrLine(NamedTuple):
    text: str
    node: int | None     # the node the line defines (None for the header and footer)
    body: bool = False   # a member line under a fused kernel


def parse_ir(text: str) -> list[IrLine]:
    out = []
    for line in text.splitlines():
        m = _NODE.match(line)
        if m:
            out.append(IrLine(line, int(m.group(2)), bool(m.group(1))))
        else:
            out.append(IrLine(line, None))
    return out


def node_locations(ir_json: dict) -> dict[int, SourceRef]:
    """node id -> the user's source line, fused members included."""
    out: dict[int, SourceRef] = {}
    stack = list(ir_json.get("nodes") or [])
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        loc = SourceRef.from_json(node.get("loc"))
        if loc is not None and isinstance(node.get("id"), int):
            out[node["id"]] = loc
        stack.extend(node.get("body") or [])
    return out


class DiffLine(NamedTuple):
    text: str
    node: int | None
    status: str          # plain | changed | added | removed | merged | fused
    note: str = ""       # "merged into %4", "fused into %9"
    highlight: bool = False


def diff_lines(before_text: str, after_text: str, diff: dict,
               applied: set[int] | None = None, highlight=()) -> list[DiffLine]:
    """The graph after a pass, with what the pass did marked line by line.

    ``applied`` limits the changes shown to those nodes (the rest keep their form before
    the pass); None shows the whole pass. Nodes in ``highlight`` are flagged (the rewrite
    being looked at).
    """
    before, after = parse_ir(before_text), parse_ir(after_text)
    merged = {int(k): v for k, v in (diff.get("merged") or {}).items()}
    fused = {int(k): v for k, v in (diff.get("fused") or {}).items()}
    changed = set(diff.get("changed") or ())
    members_of: dict[int, set[int]] = {}
    for member, target in {**fused, **merged}.items():
        members_of.setdefault(int(target), set()).add(member)
    marked = set(highlight)

    def is_applied(node: int) -> bool:
        if applied is None or node in applied:
            return True
        return bool(members_of.get(node, set()) & applied)

    frame = after if applied is None else before
    head, tail = _frame(frame)
    out = [DiffLine(line.text, None, "plain") for line in head]
    for prev, cur in _align(before, after):
        node = (cur or prev).node
        hi = node in marked
        if not is_applied(node):
            if prev is not None:
                out.append(DiffLine(prev.text, node, "plain", "", hi))
            continue
        if prev is not None and cur is not None:
            status = "fused" if cur.body and not prev.body else (
                "changed" if node in changed else "plain")
            out.append(DiffLine(cur.text, node, status, "", hi))
        elif cur is not None:
            out.append(DiffLine(cur.text, node, "added", "", hi))
        elif node in merged:
            out.append(DiffLine(prev.text, node, "merged", f"merged into %{merged[node]}", hi))
        elif node in fused:
            out.append(DiffLine(prev.text, node, "fused", f"fused into %{fused[node]}", hi))
        else:
            out.append(DiffLine(prev.text, node, "removed", "removed", hi))
    out.extend(DiffLine(line.text, None, "plain") for line in tail)
    return out


def _frame(lines: list[IrLine]) -> tuple[list[IrLine], list[IrLine]]:
    """The lines before the first node line and after the last one."""
    nodes = [i for i, line in enumerate(lines) if line.node is not None]
    if not nodes:
        return lines, []
    return lines[: nodes[0]], lines[nodes[-1] + 1:]


def _align(before: list[IrLine], after: list[IrLine]):
    """Pairs (before line or None, after line or None) in display order, by node id."""
    b = [line for line in before if line.node is not None]
    a = [line for line in after if line.node is not None]
    matcher = SequenceMatcher(a=[x.node for x in b], b=[x.node for x in a], autojunk=False)
    pairs = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs.extend(zip(b[i1:i2], a[j1:j2]))
        else:
            pairs.extend((x, None) for x in b[i1:i2])
            pairs.extend((None, y) for y in a[j1:j2])
    # A node that moved shows once, where it now is.
    moved = {cur.node for prev, cur in pairs if prev is None} & \
        {prev.node for prev, cur in pairs if cur is None}
    out = []
    for prev, cur in pairs:
        if cur is None and prev.node in moved:
            continue
        if prev is None and cur.node in moved:
            prev = next(x for x in b if x.node == cur.node)
        out.append((prev, cur))
    return out
