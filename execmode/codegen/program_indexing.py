"""Indexing inside a whole-graph program (program.py): ``getitem`` and its gradient
``index_add`` for the two forms a model's step is made of, and ``scatter_slices`` (the
sum of a split's ``index_add``s, passes/slice_sums.py).

* **Basic indices** (slices, integers, ``None``, ``...``: an attention's ``qkv[:, :, 64:128]``,
  a mask's ``[:, :, :T, :T]``): the plan hands out a NumPy view, which a kernel then reads
  copied into its layout; the program copies the view's elements into a buffer of its own
  in C order, and ``index_add`` writes them into zeros, as eager's ``out[key] = g``.
* **One index tensor on the first axis** (an embedding's ``weight[ids]``): whole rows
  gathered in the index's order; ``index_add`` adds them into zeros in the same order,
  one rounding per add, as NumPy's ``add.at`` (and ops/movement.py's rounds) do. A value
  outside [-rows, rows) sets the program's failure word and returns, as a check does
  (program_checks.py); a negative one counts from the end, as in NumPy.

Anything else (several index tensors, a tensor after a slice, a view as operand) is left
to the plan, with the reason.
"""

from __future__ import annotations

import math

import numpy as np

from ..ops.movement import basic_key
from ..ops.scatter_slices import common_loops, permuted_shape
from .layout import contiguous_strides, permuted_strides


class NotInProgram(Exception):
    """This index has no program form; the message says why."""


def basic_view(shape: tuple, index) -> tuple:
    """(offset, element strides, shape) of ``x[index]`` within ``x`` of ``shape``, stored
    C-contiguous. NumPy itself applies the index, to a stand-in of one byte whose strides
    count elements: no memory of ``x``'s size is made or read."""
    if any(item[0] == "tensor" for item in index):
        raise NotInProgram("an index tensor among slices")
    stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape=shape,
                                               strides=contiguous_strides(shape))
    view = stand_in[basic_key(index)]
    if not isinstance(view, np.ndarray) or view.base is None:
        raise NotInProgram("the index does not make a view")
    offset = view.__array_interface__["data"][0] - stand_in.__array_interface__["data"][0]
    return offset, tuple(view.strides), tuple(view.shape)


def rows_index(index) -> bool:
    """Whether ``index`` is one index tensor on the first axis (``x[ids]``)."""
    return tuple(index) == (("tensor", 0),)


def basic_lines(node, base_shape: tuple, t: str, source: int, target: int,
                scatter: bool, index=None, fill: str | None = None) -> list[str]:
    """``getitem`` (``scatter`` False): ``b[target]`` gets the view's elements in C order.
    ``index_add`` (True): ``b[target]`` (of ``base_shape``) is zeros (or ``fill``, a C
    literal: a pad's value) with the value in ``b[source]`` written at the view's
    elements. ``index``: the node's own by default."""
    offset, strides, shape = basic_view(base_shape, node.attr["index"] if index is None
                                        else index)
    lines = ["{", f"    const {t} *src = (const {t} *)b[{source}];",
             f"    {t} *out = ({t} *)b[{target}];", "    long long p = 0;"]
    if scatter and fill is None:
        lines.append(f"    __builtin_memset(out, 0, {math.prod(base_shape) * _size(node)});")
    elif scatter:
        lines.append(f"    for (long long i = 0; i < {math.prod(base_shape)}LL; ++i) "
                     f"out[i] = {fill};")
    if math.prod(shape) == 0:
        return lines + ["    (void)p;", "}"]
    at = " + ".join([f"{offset}LL"] + [f"i{d} * {s}LL" for d, s in enumerate(strides)])
    return lines + loop_nest(shape, [f"out[{at}] = src[p++];" if scatter else
                                     f"out[p++] = src[{at}];"]) + ["}"]


def slices_lines(node, operands: list, t: str, sources: list, target: int) -> list[str]:
    """``scatter_slices``: ``b[target]`` (of the node's shape) is zeros with each piece
    plus zero (a float's -0.0 becomes +0.0, as eager's adds make it) written at its slice;
    the zeros only where the slices leave elements uncovered. A piece read through a
    permutation walks its operand and its slice in common loops."""
    shape = tuple(node.attr["shape"])
    views = [basic_view(shape, index) for index in node.attr["indices"]]
    plus = " + 0" if node.dtype.kind == "f" else ""
    lines = ["{", f"    {t} *out = ({t} *)b[{target}];"]
    if sum(math.prod(view) for _, _, view in views) < math.prod(shape):
        lines.append(f"    __builtin_memset(out, 0, {math.prod(shape) * _size(node)});")
    for operand, source, axes, (offset, strides, view) in zip(
            operands, sources, node.attr["reads"], views):
        if math.prod(view) == 0:
            continue
        if axes is None:
            loops = [(n, d, 1, None, 1) for d, n in enumerate(view)]
            src_strides, read = (), "src[p++]"
        else:
            loops = common_loops(view, permuted_shape(tuple(operand.shape), axes))
            if loops is None:
                raise NotInProgram("a permuted piece whose shape does not nest in its slice's")
            src_strides = permuted_strides(contiguous_strides(tuple(operand.shape)), axes)
            read = "src[" + " + ".join(["0LL"] + [
                f"i{k} * {src_strides[j] * inner}LL"
                for k, (_, _, _, j, inner) in enumerate(loops)]) + "]"
        at = " + ".join([f"{offset}LL"] + [f"i{k} * {strides[d] * inner}LL"
                                           for k, (_, d, inner, _, _) in enumerate(loops)])
        lines += ["    {", f"        const {t} *src = (const {t} *)b[{source}];"]
        if axes is None:
            lines.append("        long long p = 0;")
        lines += ["    " + line for line in loop_nest(tuple(n for n, *_ in loops),
                                                       [f"out[{at}] = {read}{plus};"])]
        lines.append("    }")
    return lines + ["}"]


def loop_nest(shape: tuple, body: list[str]) -> list[str]:
    """``body`` inside one C loop per axis of ``shape`` (``i0``, ``i1`` ... in C order),
    indented inside a block."""
    lines, indent = [], "    "
    for d, n in enumerate(shape):
        lines.append(f"{indent}for (long long i{d} = 0; i{d} < {n}LL; ++i{d}) {{")
        indent += "    "
    lines += [indent + line for line in body]
    for _ in shape:
        indent = indent[:-4]
        lines.append(f"{indent}}}")
    return lines


def rows_lines(node, base_shape: tuple, t: str, it: str, count: int, source: int,
               index: int, target: int, failed: int, scatter: bool) -> list[str]:
    """``getitem`` of rows (``out[r] = x[ids[r]]``) or its ``index_add`` (zeros of
    ``base_shape``, then ``out[ids[r]] += g[r]`` for r in order); ``count`` index values."""
    rows, width = base_shape[0], math.prod(base_shape[1:])
    lines = ["{", f"    const {t} *src = (const {t} *)b[{source}];",
             f"    const {it} *ids = (const {it} *)b[{index}];",
             f"    {t} *out = ({t} *)b[{target}];"]
    if scatter:
        lines.append(f"    __builtin_memset(out, 0, {math.prod(base_shape) * _size(node)});")
    into, read = ("v", "r") if scatter else ("r", "v")
    lines += [f"    for (long long r = 0; r < {count}LL; ++r) {{",
              "        long long v = (long long)ids[r];",
              f"        if (v < -{rows}LL || v >= {rows}LL) {{",
              f"            *(int *)b[{failed}] = 1;",
              "            return;",
              "        }",
              f"        if (v < 0) v += {rows}LL;",
              f"        {t} *o = out + {into} * {width}LL;",
              f"        const {t} *s = src + {read} * {width}LL;",
              f"        for (long long j = 0; j < {width}LL; ++j) o[j] {'+=' if scatter else '='} s[j];",
              "    }", "}"]
    return lines


def _size(node) -> int:
    return np.dtype(node.dtype).itemsize
