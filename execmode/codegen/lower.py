"""Lowering: a fused graph node -> a :class:`~execmode.codegen.kernel_ir.Kernel`.

The fused node's members become one statement each, built from the op's scalar template.
Operands are converted to the op's *compute dtype* exactly as NumPy converts them, so that
a kernel returns eager's dtypes and values:

* ``cast`` computes in its target dtype;
* ``where`` computes in ``result_type(a, b)`` and keeps its bool condition;
* ops with a bool result (comparisons, logical ops, isnan...) compute in
  ``result_type(operands)`` (``less(int32, 2.5)`` compares in float64);
* every other op computes in its output dtype (``exp(int32)`` in float64, ``add(int32,
  float32)`` in float64, float functions of bool in float32).

Python-scalar operands are weak (NEP 50): ``result_type`` sees them as values, and the
constant is printed in the compute dtype.
"""

from __future__ import annotations

import keyword
import math
import os
import re
from dataclasses import replace

import numpy as np

from execmode.dtypes import KERNEL_DTYPES, short_name, type_text
from execmode.graph.ir import FUSED, INPUT, Literal, Node
from execmode.ops import OPS
from execmode.ops.registry import ELEMENTWISE_KINDS

from . import eager_sum, layout
from .kernel_ir import (
    Apply,
    Assign,
    Cast,
    Const,
    Kernel,
    Load,
    Loop,
    MatMul,
    Param,
    Reduction,
    Store,
    Var,
)


class Unsupported(Exception):
    """This fused node cannot become a kernel (the plan runs it op by op); the message
    says why, for backend reports."""


REDUCTIONS = ("sum", "prod", "max", "min")
# A full reduction at least this large is cut into SPLIT_CHUNKS chunks run in parallel
# (and combined in a fixed order, so results do not depend on the thread count).
SPLIT_MIN_ELEMENTS = 1 << 20
SPLIT_CHUNKS = 64


def lower_fused(node: Node, producers: dict, *, graph_id: str = "",
                matmul_inline=None, inplace_input: int | None = None) -> Kernel:
    """Lower fused ``node``. ``producers`` maps the ids of its inputs to their graph nodes
    (for shapes, dtypes, labels). ``matmul_inline(m, n, k, dtype)`` says whether a
    matmul_epilogue computes its matmul in generated loops (default: never).
    ``inplace_input``: the input whose buffer the memory plan reuses for the output."""
    if node.op != FUSED or not node.body:
        raise Unsupported(f"%{node.id} is not a fused node")
    kind = node.attr.get("kind", "elementwise")
    lowering = _Lowering(node, producers, graph_id)
    if kind == "elementwise":
        kernel = lowering.elementwise()
    elif kind == "reduction":
        kernel = lowering.reduction()
    elif kind == "matmul_epilogue":
        inline = matmul_inline or (lambda *a: False)
        if inplace_input is not None and inplace_input in node.body[0].inputs:
            # Generated loops write outputs while the operand is still being read.
            inline = lambda *a: False  # noqa: E731
        kernel = lowering.matmul_epilogue(inline)
    else:
        raise Unsupported(f"fused kind {kind!r} has no kernel lowering")
    if inplace_input is not None and inplace_input in lowering.param_of:
        kernel = replace(kernel, inplace=lowering.param_of[inplace_input].name)
    return kernel


# --- names -------------------------------------------------------------------------------

_C_KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "typedef", "union", "unsigned", "void", "volatile", "while", "bool", "true", "false",
    "out", "acc", "partial", "main", "new", "delete", "class", "this", "template",
}
# Names the renderers use for loop variables, accumulators and temporaries.
_RESERVED = re.compile(r"^(i\d*|r\d*|v\d+|o|s|c|k|ib|ie|mm|val|begin|end|acc_row|a_ik|"
                       r"rest_.*|em_.*|__.*)$")


def c_identifier(text: str, taken: set) -> str:
    """A readable, unique C identifier for a tensor label ("fc1.weight" -> fc1_weight)."""
    name = re.sub(r"[^0-9A-Za-z_]", "_", text).strip("_") or "x"
    if name[0].isdigit():
        name = "t_" + name
    if name in _C_KEYWORDS or keyword.iskeyword(name) or _RESERVED.match(name):
        name = "in_" + name
    base, n = name, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def member_comment(m: Node) -> str:
    """``%7 = multiply %5 0.5   train.py:12`` (safe inside /* */)."""
    attrs = ""
    shown = [(k, v) for k, v in m.attrs if k != "device"]
    if shown:
        def fmt(v):
            return short_name(v) if isinstance(v, np.dtype) else repr(v)
        attrs = "[" + ", ".join(f"{k}={fmt(v)}" for k, v in shown) + "]"
    operands = " ".join(f"%{i}" if isinstance(i, int) else str(i) for i in m.inputs)
    text = f"%{m.id} = {m.op}{attrs} {operands}".rstrip()
    if m.loc is not None:
        text += f"   {os.path.basename(m.loc.filename)}:{m.loc.lineno}"
    return text.replace("*/", "* /")


# --- dtype rules ---------------------------------------------------------------------------

def compute_dtype(m: Node, operands: list) -> np.dtype:
    """The dtype ``m``'s template computes in; ``operands`` are dtypes or Python scalars."""
    if m.op == "cast":
        return m.dtype
    if m.op == "where":
        return np.result_type(*operands[1:])
    if m.dtype == np.bool_:
        return np.result_type(*operands)
    return m.dtype


def convert_const(value, dtype: np.dtype) -> Const:
    with np.errstate(all="ignore"):
        return Const(np.dtype(dtype).type(value).item(), np.dtype(dtype))


# --- the lowering ---------------------------------------------------------------------------

class _Lowering:
    def __init__(self, node: Node, producers: dict, graph_id: str):
        self.node = node
        self.producers = producers
        self.graph_id = graph_id
        self.taken: set = set()
        self.params: list[Param] = []
        self.param_of: dict[int, Param] = {}
        for position, inp in enumerate(node.inputs):
            if isinstance(inp, Literal):
                continue
            src = producers.get(inp)
            if src is None:
                raise Unsupported(f"input %{inp} of %{node.id} is not in the graph")
            if src.op == INPUT and src.label:
                name = c_identifier(src.label, self.taken)
            else:
                # A value computed by an earlier step: v<id>, as %<id> in the graph (members
                # of this kernel have other ids, so their v<id> temporaries never clash).
                name = f"v{inp}"
                self.taken.add(name)
            describe = f"%{inp} {src.label}" if src.op == INPUT and src.label else f"%{inp}"
            # Generated loops read any strides; a library matmul's operands cannot repeat
            # (a stride of 0), so a broadcast reaches one as a copy.
            strides = arrival_strides(inp, producers,
                                      broadcasts=node.attr.get("kind", "elementwise")
                                      in ("elementwise", "reduction"))
            if strides is not None:
                describe += f" (a {'broadcast' if 0 in strides else 'permuted'} view, " \
                            "read in place)"
            if src.dtype not in KERNEL_DTYPES:  # fuse keeps such ops out; said again here
                raise Unsupported(f"input %{inp} is {short_name(src.dtype)}: the kernels "
                                  "have no such type")
            param = Param(name, np.dtype(src.dtype), tuple(src.shape), position, describe,
                          strides)
            self.params.append(param)
            self.param_of[inp] = param
        self.member_ids = {m.id for m in node.body}
        kind = node.attr.get("kind", "elementwise")
        for k, m in enumerate(node.body):
            op = OPS.get(m.op)
            if op is None:
                raise Unsupported(f"op {m.op!r} is not in the registry")
            if m.dtype not in KERNEL_DTYPES:  # fuse keeps such ops out; said again here
                raise Unsupported(f"member %{m.id} ({m.op}) is {short_name(m.dtype)}: the "
                                  "kernels have no such type")
            special = (kind == "reduction" and k == len(node.body) - 1) or \
                (kind == "matmul_epilogue" and k == 0)
            if not special and (op.kind not in ELEMENTWISE_KINDS or not op.template):
                raise Unsupported(f"member %{m.id} ({m.op}) is not an elementwise op with a "
                                  "scalar template")

    # -- shared pieces --------------------------------------------------------------------
    def header(self, kind: str, params=None) -> tuple:
        lines = [f"{self.node.label or 'fused'}: {kind} kernel for %{self.node.id}"
                 + (f" of {self.graph_id}" if self.graph_id else "")]
        for p in params or self.params:
            lines.append(f"{p.name}: {type_text(p.shape, p.dtype)}  <- {p.describe}")
        return tuple(lines)

    def build_body(self, members, space, plan, seed=None) -> tuple:
        """Statements for elementwise ``members`` over iteration ``space``. ``seed`` gives
        values known before the body (the matmul result of a matmul_epilogue)."""
        env: dict[int, object] = dict(seed or {})
        loads: dict[str, Load] = {}

        def operand(i):
            if isinstance(i, Literal):
                return i.value
            if i in env:
                return env[i]
            param = self.param_of.get(i)
            if param is None:
                raise Unsupported(f"%{i} is neither an input nor an earlier member")
            if param.name not in loads:
                try:
                    strides = layout.broadcast_strides(param.shape, space,
                                                       param.element_strides)
                except ValueError as exc:
                    raise Unsupported(str(exc)) from None
                loads[param.name] = Load(param.name, plan.strides(strides), param.dtype)
            return loads[param.name]

        body = []
        for m in members:
            body.append(self.statement(m, [operand(i) for i in m.inputs]))
            env[m.id] = Var(body[-1].name, body[-1].dtype)
        self.operand = operand
        return tuple(body)

    def statement(self, m: Node, values: list) -> Assign:
        """``v<id> = template(operands converted to the compute dtype)``."""
        op = OPS[m.op]
        if op.kind not in ELEMENTWISE_KINDS or not op.template:
            raise Unsupported(f"op {m.op!r} has no scalar template")
        cdt = compute_dtype(m, [v.dtype if _is_expr(v) else v for v in values])
        args = []
        for position, v in enumerate(values):
            target = np.dtype(np.bool_) if (m.op == "where" and position == 0) else cdt
            if m.op == "cast" and _is_expr(v):
                args.append(v)  # the cast itself converts (the renderer picks how)
                continue
            if not _is_expr(v):
                args.append(convert_const(v, target))
            elif v.dtype != target:
                args.append(Cast(v, target))
            else:
                args.append(v)
        bool_result = m.dtype == np.bool_ and m.op != "cast"
        result_dtype = np.dtype(np.bool_) if bool_result else cdt
        expr = Apply(m.op, op.template, tuple(args), cdt, result_dtype)
        if result_dtype != m.dtype:
            expr = Cast(expr, m.dtype)
        return Assign(f"v{m.id}", expr, np.dtype(m.dtype), member_comment(m))

    def check_space(self, members, space):
        for m in members:
            if len(m.shape) > len(space):
                raise Unsupported(f"member %{m.id} {m.shape} is larger than the kernel {space}")
            try:
                layout.broadcast_strides(m.shape, space)
            except ValueError:
                raise Unsupported(f"member %{m.id} {m.shape} does not broadcast to {space}") \
                    from None

    def input_vectors(self, space):
        vectors = []
        for p in self.params:
            try:
                vectors.append(layout.broadcast_strides(p.shape, space, p.element_strides))
            except ValueError:
                continue  # an input only the matmul reads
        return vectors

    def output_param(self) -> Param:
        return Param("out", np.dtype(self.node.dtype), tuple(self.node.shape), -1,
                     f"%{self.node.id}")

    # -- kinds --------------------------------------------------------------------------------
    def elementwise(self) -> Kernel:
        members = self.node.body
        space = tuple(self.node.shape)
        self.check_space(members, space)
        out_vec = layout.contiguous_strides(space)
        plan = layout.plan_loops(space, ["outer"] * len(space),
                                 self.input_vectors(space) + [out_vec])
        body = self.build_body(members, space, plan)
        last = Var(body[-1].name, body[-1].dtype)
        output = self.output_param()
        return Kernel(
            name=self.node.label or f"fused{self.node.id}", kind="elementwise",
            params=tuple(self.params), output=output, loops=_loops(plan), body=body,
            store=Store("out", plan.strides(out_vec), last, output.dtype),
            members=self.node.member_ids, member_ops=tuple(m.op for m in members),
            header=self.header("elementwise"), device=self.node.device,
        )

    def reduction(self) -> Kernel:
        *members, red = self.node.body
        if red.op not in REDUCTIONS:
            raise Unsupported(f"{red.op} is not a fusable reduction (sum/prod/max/min)")
        source = red.inputs[0]
        if isinstance(source, Literal):
            raise Unsupported("reduction of a literal")
        if source in self.member_ids:
            space = tuple(next(m for m in members if m.id == source).shape)
        else:
            space = tuple(self.producers[source].shape)
        axes = tuple(red.attr.get("axis", ()))
        self.check_space(members, space)
        roles = layout.reduction_roles(space, axes)
        out_vec = layout.reduced_strides(space, axes)
        plan = layout.plan_loops(space, roles, self.input_vectors(space) + [out_vec])
        body = self.build_body(members, space, plan)
        value = self.operand(source)
        out_dtype = np.dtype(red.dtype)
        acc_dtype = np.dtype(np.float64) if (red.op == "sum" and out_dtype == np.float32) \
            else out_dtype
        eager = _eager_fields(red.op, out_dtype, value, body, plan)
        if value.dtype != acc_dtype:
            value = Cast(value, acc_dtype)
        loops = _loops(plan)
        reduce_loops = [lp for lp in loops if lp.role == "reduce"]
        split = 1
        # A float product multiplies in order, as NumPy does (no parallel chunks), so it
        # overflows and underflows where eager's does (eager_sum.py).
        if len(loops) == 1 and len(reduce_loops) == 1 and \
                reduce_loops[0].size >= SPLIT_MIN_ELEMENTS and \
                not (red.op == "prod" and out_dtype.kind == "f"):
            split = SPLIT_CHUNKS
        reduction = Reduction(red.op, acc_dtype, _identity(red.op, acc_dtype),
                              member_comment(red), split, **eager)
        output = self.output_param()
        return Kernel(
            name=self.node.label or f"fused{self.node.id}", kind="reduction",
            params=tuple(self.params), output=output, loops=loops, body=body,
            store=Store("out", plan.strides(out_vec), value, output.dtype),
            reduction=reduction, members=self.node.member_ids,
            member_ops=tuple(m.op for m in self.node.body),
            header=self.header("reduction"), device=self.node.device,
        )

    def matmul_epilogue(self, inline) -> Kernel:
        mm, *members = self.node.body
        if mm.op != "matmul":
            raise Unsupported("a matmul_epilogue group must start with its matmul")
        a_id, b_id = mm.inputs
        a, b = self.param_of.get(a_id), self.param_of.get(b_id)
        if a is None or b is None:
            raise Unsupported("the matmul operands must be inputs of the fused node")
        space = tuple(mm.shape)
        self.check_space(members, space)
        dtype = np.dtype(mm.dtype)
        two_d = len(a.shape) == 2 and len(b.shape) == 2
        same = a.dtype == b.dtype == dtype and dtype.kind == "f"
        generated = two_d and same and inline(space[0], space[1], a.shape[1], dtype,
                                              _matrix_strides(b))
        output = self.output_param()
        comment = member_comment(mm)
        if generated:
            # Two fixed loops (rows, columns): the renderer nests the k loop inside.
            plan = layout.LoopPlan([space[0], space[1]], ["outer", "inner"], [[0], [1]])
            value = Var("acc", dtype)
            matmul = MatMul(a.name, b.name, space[0], space[1], a.shape[1],
                            _matrix_strides(a), _matrix_strides(b), dtype, "acc", False,
                            comment)
            loops = (Loop("i0", space[0], "outer"), Loop("i1", space[1], "inner"))
            scratch = ()
        else:
            scratch = (Param("mm", dtype, space, -1, f"%{mm.id} (matmul result)"),)
            out_vec = layout.contiguous_strides(space)
            vectors = [v for v in self.input_vectors(space)] + [out_vec]
            plan = layout.plan_loops(space, ["outer"] * len(space), vectors)
            value = Load("mm", plan.strides(out_vec), dtype)
            matmul = MatMul(a.name, b.name, 0, 0, 0, (), (), dtype, "mm", True, comment)
            loops = _loops(plan)
        body = self.build_body(members, space, plan, seed={mm.id: value})
        last = Var(body[-1].name, body[-1].dtype) if body else value
        store_strides = plan.strides(layout.contiguous_strides(space))
        return Kernel(
            name=self.node.label or f"fused{self.node.id}", kind="matmul_epilogue",
            params=tuple(self.params), output=output, loops=loops, body=body,
            store=Store("out", store_strides, last, output.dtype), matmul=matmul,
            scratch=scratch, members=self.node.member_ids,
            member_ops=tuple(m.op for m in self.node.body),
            header=self.header("matmul_epilogue", self.params), device=self.node.device,
        )

def _is_expr(v) -> bool:
    return isinstance(v, Load | Const | Var | Cast | Apply)


def _eager_fields(op: str, dtype, value, body, plan: layout.LoopPlan) -> dict:
    """A float sum's overflow check and NumPy's order (eager_sum.py), for Reduction."""
    if not eager_sum.checks_overflow(op, dtype):
        return {}
    points = math.prod(size for size, role in zip(plan.sizes, plan.roles) if role == "reduce")
    order, run = eager_sum.eager_plan(plan.sizes, plan.roles,
                                      _eager_layout(value, body, plan.sizes))
    return {"overflow_bound": eager_sum.overflow_bound(dtype, points), "eager_order": order,
            "eager_run": run}


def _eager_layout(value, body, sizes) -> tuple:
    """Strides (per loop) of the array eager holds for ``value``: an input's own, or for a
    member the layout NumPy gives each op's fresh result from its operands' layouts."""
    layouts: dict = {}

    def of(expr):
        while isinstance(expr, Cast):  # a conversion inside the op: no array of its own
            expr = expr.arg
        if isinstance(expr, Load):
            return [expr.strides]
        if isinstance(expr, Var):
            return [layouts[expr.name]] if expr.name in layouts else []
        if isinstance(expr, Apply):
            return [strides for arg in expr.args for strides in of(arg)]
        return []  # a constant: 0-d, strided along nothing

    for stmt in body:
        layouts[stmt.name] = eager_sum.fresh_strides(of(stmt.value), sizes)
    found = of(value)
    return found[0] if found else eager_sum.fresh_strides([], sizes)


def _loops(plan: layout.LoopPlan) -> tuple:
    return tuple(Loop(f"i{k}", size, role)
                 for k, (size, role) in enumerate(zip(plan.sizes, plan.roles)))


def _matrix_strides(p: Param) -> tuple:
    return tuple(p.element_strides)


def arrival_strides(node_id: int, producers: dict, *, broadcasts: bool = False):
    """Element strides of the array the plan passes for ``node_id`` when it is a permuted
    view (``permute_dims`` of a value the plan keeps C-contiguous) or, with ``broadcasts``,
    a broadcast one (``broadcast_to``: 0 along the repeated axes), else None (the array
    arrives C-contiguous; the runtime copies anything else into that layout:
    buffers.arranged)."""
    src = producers.get(node_id)
    if src is None or src.op not in ("permute_dims", "broadcast_to") or \
            not isinstance(src.inputs[0], int):
        return None
    if src.op == "broadcast_to" and not broadcasts:
        return None
    inner = producers.get(src.inputs[0])
    if inner is None:
        return None
    base = arrival_strides(src.inputs[0], producers, broadcasts=broadcasts) or \
        layout.contiguous_strides(inner.shape)
    if src.op == "permute_dims":
        strides = layout.permuted_strides(base, tuple(src.attr.get("axes", ())))
    else:
        strides = layout.broadcast_strides(tuple(inner.shape), tuple(src.shape), base)
    return None if layout.is_contiguous(src.shape, strides) else strides


def _identity(op: str, dtype: np.dtype) -> Const:
    dtype = np.dtype(dtype)
    if op == "sum":
        return convert_const(0, dtype)
    if op == "prod":
        return convert_const(1, dtype)
    if dtype.kind == "f":
        return Const(float("-inf") if op == "max" else float("inf"), dtype)
    if dtype.kind == "b":
        return Const(op != "max", dtype)
    info = np.iinfo(dtype)
    return Const(int(info.min if op == "max" else info.max), dtype)
