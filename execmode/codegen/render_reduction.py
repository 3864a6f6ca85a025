"""How the C renderer lays out reductions (a mixin of CRenderer; CUDA has its own).

Three shapes, by the kernel's loop roles (outer x reduce x inner, see layout.py):

* no inner loops: each output reduces its points into a scalar ``acc`` in a vectorised
  ``omp simd reduction`` loop (float32 sums accumulate in float64; max/min keep a separate
  NaN flag, since the vector max instructions drop NaNs NumPy propagates); a sum along one
  loop of at least two vectors' worth keeps its partial sums in a vector's lanes instead,
  combined as a tree (:meth:`ReductionRendering.lane_sum`);
* one big full reduction: 64 fixed chunks reduced in parallel, combined in order;
* inner loops (kept trailing axes): a block of outputs along the last kept axis
  accumulates in a local array while the reduced axes stream past, the vector loop
  running along the contiguous kept axis.

Float sums also sum ``|value|``; an output where that passes the kernel's overflow bound
is summed again in NumPy's order, in the output dtype (``eager_resum``, eager_sum.py), so
eager's overflow to inf, -inf or NaN comes out here too. Float products multiply in order
(no vector reduction clause), as NumPy does.
"""

from __future__ import annotations

from execmode.dtypes import short_name

from .kernel_ir import Cast, Kernel


class ReductionRendering:
    """Reduction layouts of the C renderer; uses its expression and loop helpers."""

    def reduction_loops(self, k: Kernel) -> list:
        if k.loops_with_role("inner"):
            return self.inner_reduction(k)
        if k.reduction.split > 1:
            return self.split_reduction(k)
        outer = k.loops_with_role("outer")
        headers = []
        for depth, loop in enumerate(outer):
            header = []
            if depth == 0 and self.parallel(k):
                header.append(self.parallel_pragma())
            header.append(self.for_line(loop.var, loop.size))
            headers.append(header)
        per_output = self.scalar_reduce(k, k.loops_with_role("reduce"))
        per_output += self.eager_resum(k, "acc", "acc_abs")
        per_output.append(self.store_line(k, self.cast_out(k, self.finish_acc(k))))
        return self.nest(headers, per_output)

    def acc_type(self, k: Kernel) -> str:
        return self.type_names[k.reduction.acc_dtype]

    def value_line(self, k: Kernel) -> str:
        """``val``: the value reduced at this point, in the accumulator's dtype."""
        return f"const {self.acc_type(k)} val = {self.expr(k.store.value)};"

    def vector_reduction_clause(self, k: Kernel) -> str | None:
        """The ``omp simd reduction`` clause that lets the compiler vectorise this
        reduction (reassociation is what the clause permits), or None."""
        red = k.reduction
        if red.op == "sum":
            return "reduction(+:acc)" + (" reduction(+:acc_abs)" if red.overflow_bound else "")
        if red.op == "prod":
            # Floats multiply in order, as NumPy does: reassociated, a product overflows
            # or underflows at other points (1e30 * 1e30 * 0 is NaN eagerly, 0 reordered).
            return None if red.acc_dtype.kind == "f" else "reduction(*:acc)"
        if red.acc_dtype.kind == "b":
            return None
        clause = f"reduction({red.op}:acc)"
        return clause + " reduction(|:acc_nan)" if red.acc_dtype.kind == "f" else clause

    def vector_update(self, k: Kernel, value: str) -> list:
        """The update of ``acc`` in the vectorised loop. max/min track NaN separately: the
        vector max instructions would drop NaNs that NumPy propagates."""
        red = k.reduction
        if red.op == "sum":
            return [f"acc += {value};"] + (
                [f"acc_abs += {self.abs_value(k, value)};"] if red.overflow_bound else [])
        if red.op == "prod":
            return [f"acc *= {value};"]
        if red.acc_dtype.kind == "b":
            return [f"acc = acc {'||' if red.op == 'max' else '&&'} {value};"]
        cmp = ">" if red.op == "max" else "<"
        # np.maximum(acc, v): a tie (0.0 against -0.0) keeps the newer value, as NumPy's
        # reduction loop does (fuzz 1795535866-2802).
        lines = [f"acc = acc {cmp} {value} ? acc : {value};"]
        if red.acc_dtype.kind == "f":
            lines.append(f"acc_nan |= {value} != {value};")
        return lines

    def combine(self, k: Kernel, left: str, right: str) -> str:
        """NumPy's exact combiner (NaN-propagating max/min), for partials and blocks."""
        red = k.reduction
        if red.op == "sum":
            return f"{left} + {right}"
        if red.op == "prod":
            return f"{left} * {right}"
        return f"em_{red.op}_{short_name(red.acc_dtype)}({left}, {right})"

    def finish_acc(self, k: Kernel) -> str:
        red = k.reduction
        if red.op in ("max", "min") and red.acc_dtype.kind == "f":
            nan = "EM_NAN_F32" if red.acc_dtype.itemsize == 4 else "EM_NAN_F64"
            return f"(acc_nan ? {nan} : acc)"
        return "acc"

    def cast_out(self, k: Kernel, value: str) -> str:
        if k.reduction.acc_dtype != k.output.dtype:
            return f"({self.type_names[k.output.dtype]}){value}"
        return value

    def scalar_reduce(self, k: Kernel, reduce_loops, ranges=None) -> list:
        """Reduce the points of ``reduce_loops`` into ``acc`` (declared here)."""
        red = k.reduction
        if ranges is None and len(reduce_loops) == 1 and red.op == "sum" and \
                isinstance(reduce_loops[0].size, int) and \
                reduce_loops[0].size >= 2 * self.sum_lanes(k):
            return self.lane_sum(k, reduce_loops[0])
        lines = [f"/* {red.comment} */",
                 f"{self.acc_type(k)} acc = {self.expr(red.identity)};"]
        if red.overflow_bound:
            lines.append(f"{self.abs_type(k)} acc_abs = 0;  /* sum of |value|: the overflow check */")
        if red.op in ("max", "min") and red.acc_dtype.kind == "f":
            lines.append("int acc_nan = 0;")
        inner = self.point_update(k)
        clause = self.vector_reduction_clause(k)
        headers = []
        for depth, loop in enumerate(reduce_loops):
            header = []
            if depth == len(reduce_loops) - 1 and clause:
                header.append(f"#pragma omp simd {clause}")
            start, stop = (ranges or {}).get(loop.var, ("0", loop.size))
            header.append(self.for_line(loop.var, stop, start))
            headers.append(header)
        return lines + self.nest(headers, inner)

    def point_update(self, k: Kernel) -> list:
        """One point's statements, its ``val`` and the update of ``acc`` with it."""
        return self.statements(k) + [self.value_line(k)] + self.vector_update(k, "val")

    def sum_lanes(self, k: Kernel) -> int:
        """Partial sums kept side by side in :meth:`lane_sum`: one 512-bit vector of the
        accumulator's dtype."""
        return 64 // k.reduction.acc_dtype.itemsize

    def lane_sum(self, k: Kernel, loop) -> list:
        """A sum along one loop of a row's points (layer norm's, softmax's rows) into
        ``acc``, through partial sums in a vector's lanes combined as a tree. An
        ``omp simd reduction`` combines its lanes one after another after the loop (GCC
        keeps that order without -ffast-math): a chain of dependent adds per output, which
        on short rows cost more than the row itself. Reassociating is what the reduction
        clause allowed already (float sums accumulate in float64)."""
        red = k.reduction
        lanes = self.sum_lanes(k)
        t = self.acc_type(k)
        checked = bool(red.overflow_bound)
        v, size = loop.var, loop.size
        whole = size - size % lanes
        lines = [f"/* {red.comment} */",
                 f"{t} acc_lane[{lanes}] = {{0}};"]  # a sum's identity
        if checked:
            lines.append(f"{self.abs_type(k)} acc_abs_lane[{lanes}] = {{0}};"
                         "  /* sums of |value|: the overflow check */")
        # The lane loop counts a constant number of steps (em_l): GCC then makes it whole
        # vector operations and keeps the partial sums in registers (a loop from em_j to
        # em_j + lanes has a count it cannot see as constant, and keeps them in memory).
        update = [f"const {self.index_type} {v} = em_j + em_l;"] + self.statements(k) + [
            self.value_line(k), "acc_lane[em_l] += val;"]
        if checked:
            update.append(f"acc_abs_lane[em_l] += {self.abs_value(k, 'val')};")
        lines += self.nest(
            [[f"for ({self.index_type} em_j = 0; em_j < {whole}; em_j += {lanes}) {{"],
             ["#pragma omp simd", f"for (int em_l = 0; em_l < {lanes}; ++em_l) {{"]], update)
        half = lanes // 2
        while half >= 1:
            fold = [f"acc_lane[em_l] += acc_lane[em_l + {half}];"]
            if checked:
                fold.append(f"acc_abs_lane[em_l] += acc_abs_lane[em_l + {half}];")
            lines += self.nest([["#pragma omp simd", f"for (int em_l = 0; em_l < {half}; "
                                 "++em_l) {"]], fold)
            half //= 2
        lines.append(f"{t} acc = acc_lane[0];")
        if checked:
            lines.append(f"{self.abs_type(k)} acc_abs = acc_abs_lane[0];")
        if whole < size:  # the points past the last whole vector
            lines += self.nest([[self.for_line(v, size, str(whole))]], self.point_update(k))
        return lines

    def split_reduction(self, k: Kernel) -> list:
        """A big full reduction: fixed chunks reduced in parallel, then combined in order
        (the result does not depend on the number of threads)."""
        (loop,) = k.loops
        chunks = k.reduction.split
        per_chunk = -(-loop.size // chunks)
        t = self.acc_type(k)
        chunk_body = [
            f"const {self.index_type} begin = c * {per_chunk}{self.int64_suffix};",
            f"const {self.index_type} end = begin + {per_chunk} < {loop.size} ? "
            f"begin + {per_chunk} : {loop.size};",
        ]
        chunk_body += self.scalar_reduce(k, (loop,), {loop.var: ("begin", "end")})
        chunk_body.append(f"partial[c] = {self.finish_acc(k)};")
        checked = bool(k.reduction.overflow_bound)
        if checked:
            chunk_body.append("partial_abs[c] = acc_abs;")
        lines = [f"{t} partial[{chunks}];"]
        if checked:
            lines.append(f"{self.abs_type(k)} partial_abs[{chunks}];")
        lines += self.nest([[self.parallel_pragma(), self.for_line("c", chunks)]], chunk_body)
        lines.append(f"{t} acc = partial[0];")
        combine = [f"acc = {self.combine(k, 'acc', 'partial[c]')};"]
        if checked:
            lines.append(f"{self.abs_type(k)} acc_abs = partial_abs[0];")
            combine.append("acc_abs += partial_abs[c];")
        lines += self.nest([[self.for_line("c", chunks, "1")]], combine)
        lines += self.eager_resum(k, "acc", "acc_abs")
        lines.append(self.store_line(k, self.cast_out(k, "acc")))
        return lines

    def abs_type(self, k: Kernel) -> str:
        """The sum of |value| is kept in the output dtype (float32: twice the vector lanes
        of the float64 sum; eager_sum.overflow_bound allows for its rounding)."""
        return self.type_names[k.output.dtype]

    def abs_value(self, k: Kernel, val: str) -> str:
        """|value| in the output dtype (``val`` is in the accumulator's)."""
        if k.output.dtype == k.reduction.acc_dtype:
            return f"em_fabs_{short_name(k.output.dtype)}({val})"
        return f"em_fabs_{short_name(k.output.dtype)}(({self.abs_type(k)}){val})"

    def eager_resum(self, k: Kernel, acc: str, acc_abs: str) -> list:
        """Where ``acc_abs`` passed the bound (or is NaN), sum this output again in NumPy's
        order and dtype into ``acc`` (eager_sum.py): eager's inf, -inf or NaN exactly."""
        red = k.reduction
        if not red.overflow_bound:
            return []
        t = self.type_names[k.output.dtype]
        sfx = short_name(k.output.dtype)
        value = k.store.value
        if isinstance(value, Cast) and value.dtype == red.acc_dtype:
            value = value.arg  # the value in the output dtype, as eager holds it
        point = f"const {t} em_point = {self.expr(value)};"
        run = red.eager_run
        if run > 1:
            add = ["em_run[em_filled++] = em_point;",
                   f"if (em_filled == {run}) {{",
                   f"    em_eager = em_eager + em_pairwise_sum_{sfx}(em_run, {run});",
                   "    em_filled = 0;", "}"]
        else:
            add = ["em_eager = em_eager + em_point;"]
        loops = [[self.for_line(k.loops[i].var, k.loops[i].size)] for i in red.eager_order]
        body = self.nest(loops, self.statements(k) + [point] + add)
        lines = [f"if (!({acc_abs} <= {red.overflow_bound!r})) {{",
                 f"    /* past the overflow bound: NumPy's order, in {t} */",
                 f"    {t} em_eager = 0;"]
        if run > 1:
            lines += [f"    {t} *em_run = ({t} *)malloc({run} * sizeof({t}));",
                      f"    {self.index_type} em_filled = 0;",
                      "    if (em_run != NULL) {  /* (no memory: the wider sum stands) */"]
            lines += ["        " + line for line in body]
            lines += ["        free(em_run);", f"        {acc} = em_eager;", "    }"]
        else:
            lines += ["    " + line for line in body]
            lines.append(f"    {acc} = em_eager;")
        lines.append("}")
        return lines

    def inner_reduction(self, k: Kernel) -> list:
        """Reductions that keep trailing axes: a block of outputs along the last kept axis
        accumulates in a local array while the reduced axes stream past (the vector loop
        runs along the contiguous kept axis)."""
        red = k.reduction
        outer = list(k.loops_with_role("outer")) + list(k.loops_with_role("inner")[:-1])
        last = k.loops_with_role("inner")[-1]
        reduce_loops = k.loops_with_role("reduce")
        block = min(self.reduction_block, last.size)
        t = self.acc_type(k)
        v = last.var
        headers = []
        for loop in outer:
            headers.append([self.for_line(loop.var, loop.size)])
        if last.size > block:
            headers.append([f"for ({self.index_type} ib = 0; ib < {last.size}; ib += {block}) {{"])
            begin, end = "ib", f"(ib + {block} < {last.size} ? ib + {block} : {last.size})"
            per_block = [f"const {self.index_type} ie = {end};"]
            end = "ie"
        else:
            begin, end = "0", str(last.size)
            per_block = []
        if headers and self.parallel(k):
            headers[0].insert(0, self.parallel_pragma())
        slot = f"acc[{v} - {begin}]" if begin != "0" else f"acc[{v}]"
        abs_slot = slot.replace("acc[", "acc_abs[", 1)
        checked = bool(red.overflow_bound)
        per_block += [f"/* {red.comment} */", f"{t} acc[{block}];"]
        init = [f"{slot} = {self.expr(red.identity)};"]
        if checked:
            per_block.append(f"{self.abs_type(k)} acc_abs[{block}];")
            init.append(f"{abs_slot} = 0;")
        per_block += self.nest([["#pragma omp simd", self.for_line(v, end, begin)]], init)
        update = self.statements(k) + [self.value_line(k),
                                       f"{slot} = {self.combine(k, slot, 'val')};"]
        if checked:
            update.append(f"{abs_slot} += {self.abs_value(k, 'val')};")
        stream = [[self.for_line(loop.var, loop.size)] for loop in reduce_loops]
        stream.append(["#pragma omp simd", self.for_line(v, end, begin)])
        per_block += self.nest(stream, update)
        if checked:  # outputs past the bound, one at a time (rare)
            per_block += self.nest([[self.for_line(v, end, begin)]],
                                   self.eager_resum(k, slot, abs_slot))
        per_block += self.nest([["#pragma omp simd", self.for_line(v, end, begin)]],
                               [self.store_line(k, self.cast_out(k, slot))])
        return self.nest(headers, per_block) if headers else per_block

