"""The C statements of a whole-graph program (program.py), node by node: a kernel's call,
a matmul through NumPy's BLAS (or the program's own GEMM), the loops written out here
(checks, indexing, windows: program_checks.py, program_indexing.py, program_windows.py),
a copy, and a write-back of functionalized state. Each refuses what it cannot do in C
with :class:`Refused`, whose message becomes ``plan.program_reason``."""

from __future__ import annotations

import numpy as np

from execmode.dtypes import KERNEL_DTYPES, short_name
from execmode.graph.ir import FUSED, INPUT, Node, make_attrs
from execmode.ops import OPS
from execmode.passes.fuse import fusable_elementwise

from . import blas as blas_mod
from . import gemm_kernel, gemm_orientation, layout, matmul_policy
from .kernel_ir import Param
from .lower import REDUCTIONS, Unsupported, arrival_strides, lower_fused, member_comment
from .program_checks import CHECKS, along_axis_lines, check_lines
from .program_indexing import NotInProgram, basic_lines, rows_index, rows_lines, slices_lines
from .program_windows import WINDOW_OPS, window_call, window_lines


class Refused(Exception):
    """The graph cannot be one C function; the message says why."""


def assign_lines(node, producers, buffer_of, views, constants, kernels, renderer) -> list[str]:
    """The C of a write-back: the value's buffer copied into the assigned input's own.

    A value that is a permuted view of a computed one is copied by a one-member kernel
    that reads it with the view's strides. A value that is (a view of) an input or a
    constant is refused: Plan.apply_assigns copies the former before any write (an
    assigned input may be what it reads), and the program keeps no such copies.
    """
    target, value = node.inputs
    if not isinstance(value, int):
        raise Refused(f"%{node.id}: assign of a literal")
    root = value
    while root in views:
        root = producers[root].inputs[0]
    if producers[root].op == INPUT or root in constants:
        raise Refused(f"%{node.id}: the assigned value %{value} is (a view of) an input "
                       "or a constant")
    source, target_node = producers[value], producers[target]
    if target_node.op != INPUT:
        raise Refused(f"%{node.id}: assign into a value that is not an input")
    if np.dtype(source.dtype) != np.dtype(target_node.dtype) or \
            tuple(source.shape) != tuple(target_node.shape):
        raise Refused(f"%{node.id}: the value's type differs from the input's")
    return [f"/* {member_comment(node)} */"] + copy_lines(
        node, value, producers, buffer_of, buffer_of[target], kernels, renderer)


def blas_matmul_lines(mm: Node, producers, buffer_of, target: int, fixed: dict, shapes,
                 owned: dict, features: set) -> list:
    """C statements computing matmul ``mm`` into buffer ``target`` through NumPy's BLAS, or
    the program's own kernel where that gives the same bits faster (gemm_kernel.py; it
    adds "em_gemm" to ``features``)."""
    blas = blas_mod.find()
    if blas is None:
        raise Refused(f"%{mm.id} matmul: no BLAS to call from C ({blas_mod.reason()})")
    a_id, b_id = mm.inputs
    if not (isinstance(a_id, int) and isinstance(b_id, int)):
        raise Refused(f"%{mm.id} matmul of a literal")
    a, b = producers[a_id], producers[b_id]
    dtype = np.dtype(mm.dtype)
    if np.dtype(a.dtype) != dtype or np.dtype(b.dtype) != dtype:
        raise Refused(f"%{mm.id} matmul of mixed dtypes (NumPy casts first)")
    if dtype not in (np.float32, np.float64):
        raise Refused(f"%{mm.id} matmul of {short_name(dtype)}: BLAS multiplies float32 "
                       "and float64")
    letter = "s" if dtype == np.float32 else "d"
    fn = {}
    for routine in blas_mod.ROUTINES:
        key = (letter, routine)
        if key not in fixed:
            fixed[key] = len(shapes)
            shapes[fixed[key]] = None
        fn[routine] = f"b[{fixed[key]}]"
    t = "float" if letter == "s" else "double"

    def turn(m, n, p, a_trans, b_trans):
        # A p x m scratch buffer when the product is faster turned round (same bits).
        if not gemm_orientation.transposed(dtype, m, n, p, a_trans, b_trans):
            return None
        index = len(shapes)
        shapes[index] = None
        owned[index] = np.empty((p, m), dtype)
        return f"b[{index}]"

    def own(m, n, p, a_trans, b_trans, lda, ldb, ldc):
        chosen = gemm_kernel.choice(dtype, m, n, p, a_trans, b_trans)
        if chosen is None:
            return None
        form, q = chosen
        scratch = None
        if form == "nt":  # A transposed into an n x m buffer the program owns
            scratch = len(shapes)
            shapes[scratch] = None
            owned[scratch] = np.empty((n, m), dtype)
            scratch = f"b[{scratch}]"
        features.add("em_gemm")
        return gemm_kernel.call_lines(form, q, m, n, p, lda, ldb, ldc, scratch)

    try:
        return blas_mod.matmul_call(
            blas, dtype, tuple(a.shape), _strides(a_id, producers), tuple(b.shape),
            _strides(b_id, producers), tuple(mm.shape),
            f"(const {t} *)b[{buffer_of[a_id]}]", f"(const {t} *)b[{buffer_of[b_id]}]",
            f"({t} *)b[{target}]", fn, turn, own)
    except blas_mod.NoBlas as exc:
        raise Refused(f"%{mm.id} matmul: {exc}") from None


# The ops whose C this module writes out itself, as loops or calls.
WRITTEN_OUT = CHECKS | WINDOW_OPS | {"pad", "getitem", "index_add", "scatter_slices"}


def flat_operands(node, producers) -> list:
    """``node``'s operand nodes, each a C-contiguous buffer of a kernel dtype (not a
    literal, a permuted or a broadcast view)."""
    operands = [producers.get(i) if isinstance(i, int) else None for i in node.inputs]
    if any(o is None or o.dtype not in KERNEL_DTYPES
           or arrival_strides(i, producers, broadcasts=True)
           for i, o in zip(node.inputs, operands)):
        raise Refused(f"%{node.id} ({node.op}) reads a view or a literal")
    return operands


def written_out_lines(node, operands: list, inputs: list, out: int, renderer, failure_word,
                 called_at) -> list[str]:
    """The C lines of a WRITTEN_OUT op reading block indices ``inputs`` into ``out``;
    ``failure_word()`` and ``called_at(address, dims)`` give the block indices of the
    program's failure word and of a called function and its dims."""
    t = renderer.type_names[np.dtype(node.dtype)]
    try:
        if node.op in WINDOW_OPS or node.op == "pad":
            if node.dtype.kind != "f":
                raise Refused(f"%{node.id} ({node.op}) is not float")
            if node.op == "pad":
                inside = tuple(("slice", b, b + d, None)
                               for (b, _), d in zip(node.attr["widths"], operands[0].shape))
                fill = float(np.array(node.attr["value"], node.dtype)).hex()
                return basic_lines(node, tuple(node.shape), t, inputs[0], out, True,
                                   index=inside, fill=None if fill == "0x0.0p+0" else fill)
            address, dims, pointers, status = window_call(node, operands, node.dtype)
            function, dims_at = called_at(address, dims)
            return window_lines(node, pointers, status, function, dims_at, inputs, out,
                                failure_word() if status else None)
        if node.op == "scatter_slices":
            return slices_lines(node, operands, t, inputs, out)
        if node.op in ("getitem", "index_add"):
            scatter = node.op == "index_add"
            base = tuple(node.attr["shape"]) if scatter else tuple(operands[0].shape)
            if len(inputs) == 1:
                return basic_lines(node, base, t, inputs[0], out, scatter)
            if len(inputs) == 2 and rows_index(node.attr["index"]) and \
                    np.dtype(operands[1].dtype).kind in "iu":
                return rows_lines(node, base, t,
                                  renderer.type_names[np.dtype(operands[1].dtype)],
                                  int(np.prod(operands[1].shape)), inputs[0], inputs[1],
                                  out, failure_word(), scatter)
            raise NotInProgram("several index tensors, or one after other items")
    except NotInProgram as exc:
        raise Refused(f"%{node.id} ({node.op}): {exc}") from None
    if node.op == "scatter_add" and not \
            np.dtype(operands[0].dtype) == np.dtype(operands[2].dtype) == node.dtype:
        raise Refused(f"%{node.id} ({node.op}) adds across dtypes")
    if node.op == "check_labels":
        return check_lines(node, renderer.type_names[np.dtype(operands[0].dtype)],
                           int(np.prod(node.shape)), inputs[0], out, failure_word())
    names = ("x", "index", "src")
    types = {name: renderer.type_names[np.dtype(o.dtype)]
             for name, o in zip(names, operands)}
    types["out"] = t
    buffers = dict(zip(names, inputs), out=out)
    return along_axis_lines(node, operands[0], operands[1], types, buffers, failure_word())


def copy_lines(node, value: int, producers, buffer_of, target: int, kernels,
                renderer) -> list[str]:
    """C copying ``value`` into ``b[target]`` in C order, for ``node``: its bytes as they
    are, or, where it is a permuted view, a one-member kernel that reads it with the
    view's strides (added to ``kernels``)."""
    src = producers[value]
    if not arrival_strides(value, producers, broadcasts=True):
        nbytes = int(np.prod(src.shape)) * np.dtype(src.dtype).itemsize
        return [f"__builtin_memcpy(b[{target}], b[{buffer_of[value]}], {nbytes});"]
    copy = Node(node.id, "copy", (value,), make_attrs({}), src.shape, src.dtype,
                src.device, node.scope, node.loc)
    kernel, _ = lower_node(copy, producers, "copy")
    kernels.append(kernel)
    params = renderer.signature_params(kernel)
    args = [target if p is kernel.output else buffer_of[value] for p in params]
    return [call_line(kernel, params, args, None, renderer)]


def call_line(kernel, params, args, slot, renderer) -> str:
    """The call of ``kernel`` on block indices ``args`` (one per param): by its name, or
    through the address in ``b[slot]`` (a plan's kernel)."""
    types = [f"{'' if p is kernel.output else 'const '}{renderer.array_type_names[p.dtype]} *"
             for p in params]
    casts = ", ".join(f"({t})b[{i}]" for t, i in zip(types, args))
    function = kernel.name if slot is None else f"((void (*)({', '.join(types)}))b[{slot}])"
    return f"{function}({casts});"


def reads_in_place(node, producers) -> bool:
    """Whether ``node`` is a generated loop that reads a broadcast operand in place (zero
    strides: lower.arrival_strides with broadcasts), as elementwise kernels and
    reductions do."""
    if node.op == FUSED:
        return node.attr.get("kind", "elementwise") in ("elementwise", "reduction")
    return OPS.get(node.op) is not None and (
        fusable_elementwise(node, producers) or node.op in REDUCTIONS)


def _strides(node_id: int, producers) -> tuple:
    """Element strides of ``node_id``'s value as the program holds it."""
    node = producers[node_id]
    return arrival_strides(node_id, producers) or layout.contiguous_strides(tuple(node.shape))


def param_of(node: Node) -> Param:
    return Param(node.label or f"v{node.id}", np.dtype(node.dtype), tuple(node.shape), 0)


def lower_node(node: Node, producers, graph_id, inplace_input: int | None = None):
    """(the kernel computing ``node``, the node ids its parameters' positions index); the
    kernel's matmul is left to BLAS when ``kernel.matmul.library``, and a matmul that is a
    BLAS call alone has no kernel (None). ``inplace_input``: the input whose memory the
    output takes too (the memory plan's in-place step)."""
    op = OPS.get(node.op)
    kind = "elementwise"
    if node.op == FUSED:
        wrapper = node
    elif node.op == "matmul":
        a = producers.get(node.inputs[0])
        if len(node.shape) != 2 or a is None or len(a.shape) != 2 or \
                not matmul_policy.inline_on_cpu(node.shape[0], node.shape[1], a.shape[1],
                                                node.dtype,
                                                arrival_strides(node.inputs[1], producers)):
            return None, ()
        wrapper = Node(node.id, FUSED, node.inputs, make_attrs({"kind": "matmul_epilogue"}),
                       node.shape, node.dtype, node.device, node.scope, node.loc, (node,),
                       f"mm{node.id}")
    elif op is not None and (fusable_elementwise(node, producers) or node.op in REDUCTIONS):
        # A single op the fusion passes left alone (a copy that keeps two outputs apart,
        # a relu between two matmuls, a bias gradient's sum) is a one-member kernel.
        if node.op in REDUCTIONS:
            kind = "reduction"
        # One parameter per distinct value (``add %1 %1`` reads one array).
        inputs = tuple(dict.fromkeys(i for i in node.inputs if isinstance(i, int)))
        wrapper = Node(node.id, FUSED, inputs, make_attrs({"kind": kind}),
                       node.shape, node.dtype, node.device, node.scope, node.loc, (node,),
                       f"s{node.id}_{node.op}")  # not f"{op}{id}": exp10, log2 are libm's
    else:
        raise Refused(f"%{node.id} ({node.op}) has no C lowering")
    try:
        return lower_fused(wrapper, producers, graph_id=graph_id,
                           matmul_inline=matmul_policy.inline_on_cpu,
                           inplace_input=inplace_input), wrapper.inputs
    except Unsupported as exc:
        raise Refused(f"%{node.id} ({node.op}): {exc}") from None
