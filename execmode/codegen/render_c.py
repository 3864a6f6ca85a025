"""The C renderer: kernel IR -> readable C, one function per kernel.

Everything a dialect shares lives here: expressions from op templates, literals, index
expressions, statements with the original op as a comment, the kernel header. The CUDA
renderer (render_cuda.py) subclasses this one and overrides a few class attributes
(kernel prefix, restrict spelling, type names, dialect header) and the methods that lay out
the work over threads (``elementwise_loops``, ``reduction_loops``, ``matmul_loops``).

A rendered elementwise kernel::

    /* k0: elementwise kernel for %9 of step:0
     * x: f32[64,256]  <- %0 x
     * b: f32[256]  <- %1 b */
    void k0(const float *restrict x, const float *restrict b, float *restrict out)
    {
        #pragma omp parallel for num_threads(em_team()) schedule(guided)
        for (int64_t i0 = 0; i0 < 64; ++i0) {
            #pragma omp simd
            for (int64_t i1 = 0; i1 < 256; ++i1) {
                /* %7 = add %0 %1   train.py:12 */
                const float v7 = (x[i0 * 256 + i1] + b[i1]);
                ...
"""

from __future__ import annotations

import math
import os
from collections import Counter
from functools import cache

import numpy as np

from execmode.dtypes import short_name

from . import matmul_overflow, runtime_library
from .kernel_ir import Apply, Cast, Const, Kernel, Load, Var, canonical, loads_of, point_cost
from .render_reduction import ReductionRendering

HERE = os.path.dirname(os.path.abspath(__file__))


@cache
def read_header(name: str) -> str:
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


class CRenderer(ReductionRendering):
    language = "c"
    dialect_header = "em_dialect_c.h"
    kernel_prefix = ""
    restrict = "restrict"
    index_type = "int64_t"
    type_names = {
        np.dtype("float32"): "float",
        np.dtype("float64"): "double",
        np.dtype("int32"): "int32_t",
        np.dtype("int64"): "int64_t",
        np.dtype("bool"): "bool",
    }
    # The element type of an array in memory, where it differs from its values' type:
    # NumPy's bools are bytes holding 0 or 1, declared uint8_t and read back as bool
    # (``expr``). GCC 12 vectorizes no loop that loads a _Bool array: a where() on
    # attention's causal mask, (16, 4, 32, 32), ran one element at a time, ~50 us where
    # the vector loop takes ~5.
    array_type_names = {**type_names, np.dtype("bool"): "uint8_t"}
    int64_suffix = "LL"
    # Op templates that this dialect spells differently from the registry's.
    op_spellings: dict = {}
    # Threads (OpenMP, threads.py): a kernel runs its outermost loop in parallel when its
    # estimated work (loop points x point_cost, ~adds) reaches parallel_min_work. Measured
    # on the 2-core VM (benchmarks/bench_threads.py --sweep, docs/kernels.md "Threads"):
    # waking the sleeping worker costs a few us, and 2 threads paid from ~4K points of a
    # tanh chain (cost 17) and ~64K points of (x + a) * 0.5 (cost 4), i.e. from ~10-15 us
    # of one-thread work; the threshold sits ~2-4x above that, since on a shared machine a
    # region also waits for a worker that found no free core. Below it: one thread, no
    # OpenMP call at all. The thread count never changes a result (threads.py).
    parallel_min_work = 1 << 18
    # Generated matmuls: multiply-adds (the policy keeps them far below this).
    parallel_min_points = 1 << 20
    # Inner-axis reductions accumulate a block of outputs at a time (in registers/L1).
    reduction_block = 256
    # Square tiles for elementwise kernels that read a transposed input.
    tile = 32
    indent_unit = "    "

    # --- translation units ------------------------------------------------------------------
    def prelude(self) -> str:
        """Headers and the helpers every kernel may call (once per translation unit)."""
        headers = [self.helpers()]
        if self.language == "c":  # eager's float sums, for the overflow check (C only)
            headers.append(read_header("em_eager_sum.h"))
        return "\n".join([*headers, self.runtime_globals()])

    def helpers(self) -> str:
        """The dialect's types and math helpers (the runtime library's source too)."""
        return "\n".join([read_header(self.dialect_header), read_header("em_common.h")])

    def runtime_globals(self) -> str:
        return "\n".join([
            "/* Threads used by parallel loops; the loader sets it from EXECMODE_NUM_THREADS. */",
            "static int em_num_threads = 1;",
            "/* Set once a team of more than one thread started: libgomp's pool does not",
            " * survive fork(), so a child forked after that stays on one (threads.py). */",
            "static int em_threads_started = 0;",
            "void em_set_num_threads(int n) { em_num_threads = n > 0 ? n : 1; }",
            "int em_threads_used(void) { return em_threads_started; }",
            "static inline int em_team(void)",
            "{",
            "    const int n = em_num_threads;",
            "    if (n > 1)",
            "        __atomic_store_n(&em_threads_started, 1, __ATOMIC_RELAXED);",
            "    return n;",
            "}",
            "",
        ])

    def translation_unit(self, kernels, runtime: bool = False) -> str:
        """The prelude and every kernel; a kernel identical to an earlier one (up to names
        and comments) becomes a one-line alias, so the compiler sees each code once.
        ``runtime``: a kernel with more float32 transcendentals than
        runtime_library.INLINE_MAX calls them from the runtime library instead of
        inlining each; smaller kernels keep them inlined (C only; the caller says
        whether its toolchain allows it)."""
        keys = [canonical(k) for k in kernels]
        called: set = set()  # runtime-library helpers some kernel calls
        counts = Counter(keys)  # not keys.count per key: quadratic in a 1000-kernel program
        shared = {key for key, n in counts.items() if n > 1}
        parts, seen = [], {}
        for k, key in zip(kernels, keys):
            if key in seen:
                parts.append(self.alias(k, seen[key]))
                continue
            seen[key] = k
            text = self.kernel(k)
            if key in shared and not self.kernel_prefix:
                # Called by its aliases: inlining it into each would compile it again.
                text = text.replace(f"\nvoid {k.name}(", f"\n__attribute__((noinline)) "
                                    f"void {k.name}(", 1)
            if runtime and self.language == "c" and \
                    runtime_library.call_sites(text) > runtime_library.INLINE_MAX:
                names = runtime_library.calls_in(text)
                called.update(names)
                text = runtime_library.redirected(text, names)
            parts.append(text)
        declared = [name for name in runtime_library.HELPERS if name in called]
        calls = runtime_library.declarations(declared) + "\n" if declared else ""
        if any("em_blas_fn[" in text for text in parts):
            calls += matmul_overflow.unit_globals() + "\n"
        return self.prelude() + "\n" + calls + "\n\n".join(parts) + "\n"

    def alias(self, k: Kernel, same: Kernel) -> str:
        """``k`` computes exactly what ``same`` computes: call it."""
        if self.kernel_prefix:  # CUDA: a __global__ kernel cannot call another one
            return self.kernel(k)
        names = ", ".join(p.name for p in self.signature_params(k))
        lines = [f"/* {k.name}: the code of {same.name} ({' '.join(k.member_ops)}) */",
                 self.signature(k), "{", f"{self.indent_unit}{same.name}({names});", "}"]
        return "\n".join(lines + self.entry_point(k))

    # --- one kernel ------------------------------------------------------------------------
    def kernel(self, k: Kernel) -> str:
        """``k``'s C. Kept per renderer: the translation unit and the kernel object that
        shows the source both ask (rendering a 5000-op chain twice cost ~80 ms)."""
        memo = self.__dict__.setdefault("_rendered", {})
        kept = memo.get(id(k))
        if kept is None or kept[0] is not k:
            kept = memo[id(k)] = (k, self._render(k))
        return kept[1]

    def _render(self, k: Kernel) -> str:
        self.k = k
        lines = self.header_comment(k)
        lines.append(self.signature(k))
        lines.append("{")
        if k.kind == "reduction":
            body = self.reduction_loops(k)
        elif k.matmul is not None and not k.matmul.library:
            body = self.matmul_loops(k)
        else:
            body = self.elementwise_loops(k)
        lines.extend(self.indent_unit + line if line else line for line in body)
        lines.append("}")
        lines.extend(self.entry_point(k))
        return "\n".join(lines)

    def entry_point(self, k: Kernel) -> list:
        """``k0_entry(args)``: the kernel called with one pointer to an array of pointers
        (one ctypes argument costs half of five; see call_path.py)."""
        params = self.signature_params(k)
        casts = ", ".join(
            f"({'' if p is k.output else 'const '}{self.array_type_names[p.dtype]} *)args[{i}]"
            for i, p in enumerate(params))
        return ["", f"void {k.name}_entry(void *const *args) {{ {k.name}({casts}); }}"]

    def header_comment(self, k: Kernel) -> list:
        text = list(k.header)
        if k.matmul is not None and k.matmul.library:
            text.append(f"mm: the matmul, computed by the library before this kernel runs "
                        f"({k.matmul.comment})")
        if len(text) == 1:
            return [f"/* {text[0]} */"]
        return ["/* " + text[0]] + [" * " + t for t in text[1:-1]] + [" * " + text[-1] + " */"]

    def signature_params(self, k: Kernel) -> tuple:
        """The pointer parameters the kernel function takes, in order: the inputs it
        reads, scratch arrays, the output."""
        used = {ld.param for ld in loads_of(k)}
        if k.matmul is not None and not k.matmul.library:
            used |= {k.matmul.a, k.matmul.b}
        inputs = tuple(p for p in k.params if p.name in used)
        return inputs + tuple(p for p in k.scratch if p.name in used) + (k.output,)

    def signature(self, k: Kernel) -> str:
        params = []
        aliased = {k.inplace, k.output.name} if k.inplace else set()
        for p in self.signature_params(k):
            const = "" if p is k.output else "const "
            # In place: no restrict for the pair; the loops' omp simd still vectorises
            # (each point reads its inputs before it writes its own output).
            pointer = "*" if p.name in aliased else f"*{self.restrict} "
            params.append(f"{const}{self.array_type_names[p.dtype]} {pointer}{p.name}")
        return f"{self.kernel_prefix}void {k.name}({', '.join(params)})"

    # --- expressions -------------------------------------------------------------------------
    def expr(self, e) -> str:
        if isinstance(e, Var):
            return e.name
        if isinstance(e, Load):
            load = f"{e.param}[{self.index(e.strides)}]"
            t = self.type_names[e.dtype]
            return load if self.array_type_names[e.dtype] == t else f"(({t}){load})"
        if isinstance(e, Const):
            return self.literal(e.value, e.dtype)
        if isinstance(e, Cast):
            return self.convert(self.expr(e.arg), e.arg.dtype, e.dtype)
        if isinstance(e, Apply):
            if e.op == "cast":
                return self.cast(e.args[0], e.compute_dtype, e.template)
            template = self.op_spellings.get(e.op, e.template)
            args = [self.expr(a) for a in e.args]
            return template.format(*args, T=self.type_names[e.compute_dtype],
                                   sfx=short_name(e.compute_dtype))
        raise TypeError(f"not an expression: {e!r}")

    def cast(self, arg, dtype, template: str) -> str:
        """The cast op: C's conversion, except float -> int, which C leaves undefined out of
        range (the dialect's em_f32_to_i32... helpers give NumPy's answer instead)."""
        src = np.dtype(arg.dtype)
        dst = np.dtype(dtype)
        if src.kind == "f" and dst.kind in "iu":
            return f"em_{short_name(src)}_to_{short_name(dst)}({self.expr(arg)})"
        if src.kind in "iu" and dst.kind == "f":
            return self.convert(self.expr(arg), src, dst)
        template = self.op_spellings.get("cast", template)
        return template.format(self.expr(arg), T=self.type_names[dst], sfx=short_name(dst))

    def convert(self, text: str, src, dst) -> str:
        """An implicit conversion (to a compute dtype). int -> float goes through the
        prelude's em_i64_to_f32... helpers: GCC folds (float)(int)x into trunc(x), which
        keeps the sign of -0.3 (-0.0), where NumPy's round trip gives +0.0."""
        src, dst = np.dtype(src), np.dtype(dst)
        if src.kind in "iu" and dst.kind == "f":
            return f"em_{short_name(src)}_to_{short_name(dst)}({text})"
        return f"(({self.type_names[dst]}){text})"

    def literal(self, value, dtype) -> str:
        dtype = np.dtype(dtype)
        if dtype.kind == "b":
            return "true" if value else "false"
        if dtype.kind in "iu":
            v = int(value)
            suffix = self.int64_suffix if dtype.itemsize == 8 else ""
            if v == np.iinfo(dtype).min:  # -2147483648 is "minus (2147483648)": too big
                return f"({v + 1}{suffix} - 1)"
            return f"({v}{suffix})" if v < 0 else f"{v}{suffix}"
        v = float(value)
        bits = "F32" if dtype.itemsize == 4 else "F64"
        if math.isnan(v):
            return f"EM_NAN_{bits}"
        if math.isinf(v):
            return f"EM_INF_{bits}" if v > 0 else f"(-EM_INF_{bits})"
        # The shortest text that reads back to the same value in this dtype.
        text = str(np.float32(v)) if dtype.itemsize == 4 else repr(v)
        if "e" not in text and "." not in text:
            text += ".0"
        text += "f" if dtype.itemsize == 4 else ""
        return f"({text})" if v < 0 or text.startswith("-") else text

    def index(self, strides) -> str:
        terms = []
        for loop, stride in zip(self.k.loops, strides):
            if stride == 0 or loop.size == 1:
                continue
            terms.append(loop.var if stride == 1 else f"{loop.var} * {stride}")
        return " + ".join(terms) if terms else "0"

    # --- statements ------------------------------------------------------------------------------
    def statements(self, k: Kernel) -> list:
        lines = []
        for stmt in k.body:
            if stmt.comment:
                lines.append(f"/* {stmt.comment} */")
            lines.append(f"const {self.type_names[stmt.dtype]} {stmt.name} = "
                         f"{self.expr(stmt.value)};")
        return lines

    def store_line(self, k: Kernel, value: str | None = None) -> str:
        value = self.expr(k.store.value) if value is None else value
        if k.store.value.dtype != k.output.dtype and value == self.expr(k.store.value):
            value = self.convert(value, k.store.value.dtype, k.output.dtype)
        return f"{k.output.name}[{self.index(k.store.strides)}] = {value};"

    def for_line(self, var: str, size, start="0") -> str:
        return f"for ({self.index_type} {var} = {start}; {var} < {size}; ++{var}) {{"

    def nest(self, headers: list, inner: list) -> list:
        """Nest ``inner`` lines inside ``headers`` (each a list of lines ending with '{')."""
        lines, depth = [], 0
        for header in headers:
            lines.extend(self.indent_unit * depth + h for h in header)
            depth += 1
        lines.extend(self.indent_unit * depth + line for line in inner)
        for d in range(depth - 1, -1, -1):
            lines.append(self.indent_unit * d + "}")
        return lines

    def parallel(self, k: Kernel) -> bool:
        return k.size * point_cost(k) >= self.parallel_min_work

    def parallel_pragma(self, simd: bool = False) -> str:
        what = "parallel for simd" if simd else "parallel for"
        # guided: big pieces first, smaller ones at the end, so that a thread that started
        # late (no free core on a shared machine) leaves its share to the others instead
        # of holding up the region; which thread takes a piece never changes a result.
        return f"#pragma omp {what} num_threads(em_team()) schedule(guided)"

    # --- thread layouts: the CUDA renderer overrides these (and reduction_loops) -------------
    def elementwise_loops(self, k: Kernel) -> list:
        inner = self.statements(k) + [self.store_line(k)]
        if not k.loops:
            return inner
        if self.needs_tiles(k):
            return self.tiled_loops(k, inner)
        headers = []
        for depth, loop in enumerate(k.loops):
            innermost = depth == len(k.loops) - 1
            header = []
            if depth == 0 and self.parallel(k):
                header.append(self.parallel_pragma(simd=innermost))
            elif innermost:
                header.append("#pragma omp simd")
            header.append(self.for_line(loop.var, loop.size))
            headers.append(header)
        return self.nest(headers, inner)

    def needs_tiles(self, k: Kernel) -> bool:
        """An input read with a stride along the innermost loop (a transposed view) while
        the output is written contiguously: walk the last two loops in square tiles, so
        that the lines of both stay in L1."""
        if len(k.loops) < 2 or k.loops[-1].size < 2 * self.tile or \
                k.loops[-2].size < 2 * self.tile:
            return False
        strided = any(ld.strides[-1] not in (0, 1) for ld in loads_of(k))
        return strided and k.store.strides[-1] == 1

    def tiled_loops(self, k: Kernel, inner: list) -> list:
        *outer, rows, cols = k.loops
        t = self.tile
        headers = [[self.for_line(loop.var, loop.size)] for loop in outer]
        headers.append([f"for ({self.index_type} {rows.var}_tile = 0; {rows.var}_tile < "
                        f"{rows.size}; {rows.var}_tile += {t}) {{"])
        headers.append([f"for ({self.index_type} {cols.var}_tile = 0; {cols.var}_tile < "
                        f"{cols.size}; {cols.var}_tile += {t}) {{"])
        headers.append([self.for_line(rows.var, self.tile_end(rows, t), f"{rows.var}_tile")])
        headers.append(["#pragma omp simd",
                        self.for_line(cols.var, self.tile_end(cols, t), f"{cols.var}_tile")])
        if self.parallel(k):
            headers[0].insert(0, self.parallel_pragma())
        return ["/* tiled: an input is read across rows (a transposed view) */"] + \
            self.nest(headers, inner)

    @staticmethod
    def tile_end(loop, t: int) -> str:
        v = f"{loop.var}_tile"
        return f"({v} + {t} < {loop.size} ? {v} + {t} : {loop.size})"

    def matmul_loops(self, k: Kernel) -> list:
        mm = k.matmul
        a_row, a_col = mm.a_strides
        b_row, b_col = mm.b_strides
        t = self.type_names[mm.dtype]
        rows, cols = k.loops
        a_ik = f"{mm.a}[{_term(rows.var, a_row)} + {_term('k', a_col)}]"
        lines = [f"/* {mm.comment}: {mm.m}x{mm.k} @ {mm.k}x{mm.n}, then the epilogue */"]
        row_header = ([self.parallel_pragma()] if mm.m * mm.n * mm.k >= self.parallel_min_points
                      and mm.m > 1 else []) + [self.for_line(rows.var, mm.m)]
        epilogue = self.statements(k) + [self.store_line(k)]
        if b_row == 1 and a_col == 1:
            # B's k axis is contiguous (one column: matmul_policy leaves other transposed
            # B to BLAS): one dot product per output.
            b_kj = f"{mm.b}[k + {_term(cols.var, b_col)}]"
            dot = [f"{t} acc = 0;", "#pragma omp simd reduction(+:acc)",
                   self.for_line("k", mm.k), f"    acc += {a_ik} * {b_kj};", "}"]
            loops = self.nest([row_header, [self.for_line(cols.var, mm.n)]], dot + epilogue)
        else:
            # Row-major B: accumulate a whole output row, vectorised along it (i-k-j order).
            b_kj = f"{mm.b}[{_term('k', b_row)} + {_term(cols.var, b_col)}]"
            row = [f"{t} acc_row[{mm.n}];", "#pragma omp simd",
                   self.for_line(cols.var, mm.n), f"    acc_row[{cols.var}] = 0;", "}",
                   self.for_line("k", mm.k), f"    const {t} a_ik = {a_ik};",
                   "    #pragma omp simd", "    " + self.for_line(cols.var, mm.n),
                   f"        acc_row[{cols.var}] += a_ik * {b_kj};", "    }", "}",
                   "#pragma omp simd", self.for_line(cols.var, mm.n),
                   f"    const {t} acc = acc_row[{cols.var}];"]
            row += [self.indent_unit + line for line in epilogue] + ["}"]
            loops = self.nest([row_header], row)
        # near the float limits (or past the loops' size), eager's product instead
        return lines + matmul_overflow.guarded(self, k, loops)


def _term(var: str, stride: int) -> str:
    return var if stride == 1 else f"{var} * {stride}"
