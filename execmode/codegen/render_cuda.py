"""The CUDA renderer: the C renderer with CUDA's spellings and thread layouts.

What differs from C, and nothing else:

* class attributes: the kernel prefix (``extern "C" __global__``), ``__restrict__``,
  type names (``long long``), the dialect header (CUDA's math library instead of our
  vectorisable approximations), no thread-count global;
* the index origin: one linear index per thread (a grid-stride loop), split into the loop
  variables by division, instead of a nest of ``for`` loops - the index expressions that
  follow are the same text;
* reductions: one block per output element, the threads of the block striding over the
  reduced points, then a tree in shared memory (``REDUCE_THREADS`` threads, a power of two);
* small generated matmuls: one thread per output element.
"""

from __future__ import annotations

import numpy as np

from .kernel_ir import Kernel
from .render_c import CRenderer, _term

# Threads per block of a reduction kernel (the shared-memory tree assumes a power of two).
REDUCE_THREADS = 256


class CUDARenderer(CRenderer):
    language = "cuda"
    dialect_header = "em_dialect_cuda.h"
    kernel_prefix = 'extern "C" __global__ '
    restrict = "__restrict__"
    index_type = "long long"
    type_names = dict(CRenderer.type_names)
    type_names.update({np.dtype("int32"): "int", np.dtype("int64"): "long long"})
    array_type_names = type_names  # (bytes for bools are for GCC's vectorizer, in C)

    def runtime_globals(self) -> str:
        return ""

    def entry_point(self, k: Kernel) -> list:
        return []  # CuPy launches kernels with their own arguments

    def grid_stride(self, var: str, total) -> str:
        return (f"for (long long {var} = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                f"{var} < {total}; {var} += (long long)gridDim.x * blockDim.x) {{")

    def split_index(self, linear: str, loops) -> list:
        """Loop variables from a linear index (the last loop varies fastest)."""
        loops = list(loops)
        if not loops:
            return []
        if len(loops) == 1:
            return [f"const long long {loops[0].var} = {linear};"]
        lines = [f"long long rest_{linear} = {linear};"]
        for loop in reversed(loops[1:]):
            lines.append(f"const long long {loop.var} = rest_{linear} % {loop.size};")
            lines.append(f"rest_{linear} /= {loop.size};")
        lines.append(f"const long long {loops[0].var} = rest_{linear};")
        return lines

    # --- thread layouts --------------------------------------------------------------------
    def elementwise_loops(self, k: Kernel) -> list:
        inner = self.statements(k) + [self.store_line(k)]
        if not k.loops:
            return self.nest([["if (blockIdx.x == 0 && threadIdx.x == 0) {"]], inner)
        return self.nest([[self.grid_stride("i", k.size)]],
                         self.split_index("i", k.loops) + inner)

    def reduction_loops(self, k: Kernel) -> list:
        red = k.reduction
        kept = [loop for loop in k.loops if loop.role != "reduce"]
        reduce_loops = k.loops_with_role("reduce")
        points = 1
        for loop in kept:
            points *= loop.size
        reduced = 1
        for loop in reduce_loops:
            reduced *= loop.size
        t = self.acc_type(k)
        combine_tree = self.combine(k, "em_partial[threadIdx.x]",
                                    "em_partial[threadIdx.x + s]")
        per_thread = self.split_index("r", reduce_loops) + self.statements(k) + [
            self.value_line(k), f"acc = {self.combine(k, 'acc', 'val')};"]
        per_output = self.split_index("o", kept) + [
            f"/* {red.comment} */",
            f"{t} acc = {self.expr(red.identity)};",
        ]
        per_output += self.nest(
            [[f"for (long long r = threadIdx.x; r < {reduced}; r += blockDim.x) {{"]],
            per_thread)
        per_output += [
            "em_partial[threadIdx.x] = acc;",
            "__syncthreads();",
            "for (int s = blockDim.x / 2; s > 0; s >>= 1) {",
            f"    if (threadIdx.x < s) em_partial[threadIdx.x] = {combine_tree};",
            "    __syncthreads();",
            "}",
            f"if (threadIdx.x == 0) {self.store_line(k, self.cast_out(k, 'em_partial[0]'))}",
            "__syncthreads();",
        ]
        return [f"__shared__ {t} em_partial[{REDUCE_THREADS}];"] + self.nest(
            [[f"for (long long o = blockIdx.x; o < {points}; o += gridDim.x) {{"]],
            per_output)

    def matmul_loops(self, k: Kernel) -> list:
        mm = k.matmul
        a_row, a_col = mm.a_strides
        b_row, b_col = mm.b_strides
        rows, cols = k.loops
        t = self.type_names[mm.dtype]
        dot = [f"{t} acc = 0;",
               "for (long long k = 0; k < " + str(mm.k) + "; ++k) {",
               f"    acc += {mm.a}[{_term(rows.var, a_row)} + {_term('k', a_col)}] * "
               f"{mm.b}[{_term('k', b_row)} + {_term(cols.var, b_col)}];",
               "}"]
        body = self.split_index("i", k.loops) + dot + self.statements(k) + [self.store_line(k)]
        return [f"/* {mm.comment}: {mm.m}x{mm.k} @ {mm.k}x{mm.n}, one thread per output */"] \
            + self.nest([[self.grid_stride("i", mm.m * mm.n)]], body)
