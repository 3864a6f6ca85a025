"""A CNN's sliding windows inside a whole-graph program (program.py): ``im2col``,
``col2im``, ``max_pool2d`` and its gradient call the C functions eager calls
(native/windows.c, through codegen/eager_windows.py's library), by addresses kept in the
program's block with their dims array: the same function with the same arguments, so
eager's bits. A max pool whose offsets table could not be allocated returns a status:
the program sets its failure word and returns (program_checks.py), and the plan's replay
raises eager's error. ``pad`` is the padded shape filled with the value (cast as
``np.full`` casts it) and the input copied inside (program_indexing.py's loops).

Without the windows library (no compiler, ``EXECMODE_EAGER_OPERATORS=0``) or for another
dtype, the graph is left to the plan, with the reason.
"""

from __future__ import annotations

import numpy as np

from execmode.ops import window_kernels
from execmode.ops.conv import output_size

from .program_indexing import NotInProgram

WINDOW_OPS = frozenset({"im2col", "col2im", "max_pool2d", "max_pool2d_backward"})
# op -> (the library's entry point, how many pointers it takes, whether it returns a status)
_ENTRIES = {"im2col": ("im2col", 3, False), "col2im": ("col2im", 3, False),
            "max_pool2d": ("max_pool_select", 5, True),
            "max_pool2d_backward": ("max_pool_scatter", 4, True)}


def window_call(node, operands: list, dtype) -> tuple:
    """(the entry point's address, its dims array, pointers it takes, returns a status)
    for ``node``; raises NotInProgram where the plan must run it."""
    dtype = np.dtype(dtype)
    kernels = window_kernels.kernels_for(np, dtype)
    if kernels is None:
        raise NotInProgram("no C windows library here (or not float32/float64)")
    name, pointers, status = _ENTRIES[node.op]
    return kernels.address(name, dtype), _dims(node, operands), pointers, status


def _dims(node, operands: list) -> np.ndarray:
    a = node.attr
    kernel, stride, dilation = tuple(a["kernel"]), tuple(a["stride"]), tuple(a["dilation"])
    if node.op in ("max_pool2d", "max_pool2d_backward"):
        n, c, h, w = operands[-1].shape  # the pooled input (the backward's second operand)
        return window_kernels.dims(n * c, h, w, tuple(a["out_size"]), kernel, stride,
                                   tuple(a["padding"]), dilation)
    if node.op == "im2col":
        n, c, h, w = operands[0].shape
    else:  # col2im: the columns of (n, c * kh * kw, oh * ow) back into size
        n, rows, _ = operands[0].shape
        c, (h, w) = rows // (kernel[0] * kernel[1]), tuple(a["size"])
    oh = output_size(h, kernel[0], stride[0], dilation[0])
    ow = output_size(w, kernel[1], stride[1], dilation[1])
    return window_kernels.dims(n * c, h, w, (oh, ow), kernel, stride, (0, 0), dilation)


def window_lines(node, pointers: int, status: bool, function: int, dims: int,
                 operands: list, out: int, failed: int | None) -> list[str]:
    """The call: ``im2col(x, cols, dims)``, ``col2im(cols, out, dims)``,
    ``max_pool_select(x, x, out, NULL, dims)`` (h is x, no index), or
    ``max_pool_scatter(g, x, out, dims)``; a status stops the program."""
    if node.op == "max_pool2d":
        args = [f"b[{operands[0]}]", f"b[{operands[0]}]", f"b[{out}]", "0"]
    else:
        args = [f"b[{i}]" for i in operands] + [f"b[{out}]"]
    args.append(f"b[{dims}]")
    signature = ", ".join(["void *"] * pointers)
    call = f"(({'int' if status else 'void'} (*)({signature}))b[{function}])({', '.join(args)})"
    if not status:
        return [f"{call};"]
    return [f"if ({call}) {{", f"    *(int *)b[{failed}] = 1;", "    return;", "}"]
