"""Ops that may raise, inside a whole-graph program (program.py): the label check of the
losses and embeddings, and the gather and scatter along an axis (a cross-entropy's pick of
each target's logit and its gradient).

A kernel cannot raise, so a plan ran such an op as a NumPy step of its own, and a graph
holding one had no program at all: a classifier's training step ran its steps one by one
from Python. In a program the op is a loop that, at the first bad value, sets the
program's failure word and returns at once, before any write-back into an input, so the
call has changed nothing the caller sees. ``Program.run`` then answers None and the plan
runs the call again step by step, where the op's own step raises eager's error, naming
the value and its position.

Every operand is a C-contiguous buffer of the program (program.py refuses views here).
The scatter adds in the order NumPy's ``add.at`` does (the index's positions in C order,
one rounding per add), so its bits are eager's.
"""

from __future__ import annotations

import math

import numpy as np

from .layout import contiguous_strides
from .program_indexing import loop_nest

CHECKS = frozenset({"check_labels", "take_along_axis", "scatter_add"})


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


def along_axis_lines(node, x, index, types: dict, buffers: dict, failed: int) -> list[str]:
    """The C of ``take_along_axis`` (``out[p] = x[q]``) or ``scatter_add`` (``out`` is a
    copy of ``x``, then ``out[q] += src[p]``): ``p`` runs over the index's positions in C
    order, ``q`` is that position in ``x`` with the index's value on ``axis``. ``types``
    and ``buffers``: the C type and block index of "x", "index", "out" (and "src")."""
    ishape, xshape = tuple(index.shape), tuple(x.shape)
    rank = len(ishape)
    axis = int(node.attr["axis"]) % rank
    size = xshape[axis]
    ix, xs = contiguous_strides(ishape), contiguous_strides(xshape)
    p = " + ".join(f"i{d} * {ix[d]}LL" for d in range(rank)) or "0"
    q = " + ".join(f"{'v' if d == axis else f'i{d}'} * {xs[d]}LL" for d in range(rank)) or "0"
    scatter = node.op == "scatter_add"
    lines = ["{",
             f"    const {types['x']} *x = (const {types['x']} *)b[{buffers['x']}];",
             f"    const {types['index']} *ix = (const {types['index']} *)b[{buffers['index']}];",
             f"    {types['out']} *out = ({types['out']} *)b[{buffers['out']}];"]
    if scatter:
        nbytes = math.prod(xshape) * np.dtype(x.dtype).itemsize
        lines += [f"    const {types['src']} *src = (const {types['src']} *)b[{buffers['src']}];",
                  f"    __builtin_memcpy(out, x, {nbytes});"]
    return lines + loop_nest(ishape, [
        f"const long long p = {p};",
        "const long long v = (long long)ix[p];",
        f"if (v < 0 || v >= {size}LL) {{",
        f"    *(int *)b[{failed}] = 1;",
        "    return;",
        "}",
        f"out[{q if scatter else 'p'}] {'+=' if scatter else '='} "
        f"{'src[p]' if scatter else f'x[{q}]'};"]) + ["}"]

