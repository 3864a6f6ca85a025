"""Ops that may raise, inside a whole-graph program (program.py).

A kernel cannot raise, so a plan ran such an op (an embedding's or a loss's label check)
as a NumPy step of its own, and a graph holding one had no program at all: a GPT's or a
classifier's training step ran its hundreds of steps one by one from Python. In a program
the check is a loop that, at the first bad value, sets the program's failure word and
returns at once, before any write-back into an input, so the call has changed nothing the
caller sees. ``Program.run`` then answers None and the plan runs the call again step by
step, where the check's own step raises eager's error, naming the value and its position.
"""

from __future__ import annotations

CHECKS = frozenset({"check_labels"})


def check_lines(node, target_type: str, count: int, target: int, keep: int,
                failed: int) -> list[str]:
    """The C of ``check_labels``: ``b[keep]`` (bool) is ``b[target] != ignore_index``;
    a label outside [0, num_classes) that is not ignored sets ``b[failed]`` and returns."""
    classes, ignore = int(node.attr["num_classes"]), int(node.attr["ignore_index"])
    return [
        "{",
        f"    const {target_type} *t = (const {target_type} *)b[{target}];",
        f"    bool *keep = (bool *)b[{keep}];",
        f"    for (long long i = 0; i < {count}LL; ++i) {{",
        "        const long long v = (long long)t[i];",
        f"        const bool k = v != {ignore}LL;",
        f"        if (k && (v < 0 || v >= {classes}LL)) {{",
        f"            *(int *)b[{failed}] = 1;",
        "            return;",
        "        }",
        "        keep[i] = k;",
        "    }",
        "}",
    ]
