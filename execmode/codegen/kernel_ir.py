"""The kernel IR: one fused group as a loop nest, loads, an expression tree and a store.

Shapes are static: a graph is traced per signature, so every size and stride below is a
number, and the renderers print them as constants (the compiler unrolls and vectorises
with them). A kernel reads like this::

    Kernel k0 (reduction)                         loops: i0[outer 64] i1[reduce 256]
      x: f32[64,256]  (%0 arg x)                  body:  v3 = exp(Load x[i0*256 + i1])
      out: f32[64]                                reduction: sum into f64, store out[i0]

* :class:`Loop` - the loop nest, outermost first. Elementwise kernels have only "outer"
  loops; reductions are normalised to outer x reduce x inner (reduced axes in the middle,
  kept axes after the last reduced axis innermost, the other kept axes outermost), after
  which adjacent loops that every array walks contiguously are merged into one.
* Expressions - :class:`Load` (a parameter indexed by one stride per loop; stride 0 is a
  broadcast), :class:`Const`, :class:`Var` (an earlier statement), :class:`Cast`, and
  :class:`Apply` (an op's scalar template from the registry, computed in ``compute_dtype``).
* :class:`Assign` - one statement per fused member, keeping the member's node id, op and
  source line for the comment the renderers print above it.
* :class:`Store` - where each output point goes; :class:`Reduction` - the combiner;
  :class:`MatMul` - the matmul that feeds a matmul-epilogue kernel's body.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# --- parameters and loops ---------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """An array argument of the kernel. ``position`` is its index among the fused node's
    inputs (-1 for the output and for scratch arrays the runtime fills).

    ``strides`` are the element strides the array arrives with: C-contiguous unless the
    graph makes it a permuted view (``x.mT`` of a weight, a transposed gradient) or, for
    an elementwise or reduction kernel, a broadcast one (0 along the repeated axes: a
    layer norm's statistics over the last axis), which the kernel then reads in place
    instead of copying.
    """

    name: str
    dtype: np.dtype
    shape: tuple
    position: int = -1
    describe: str = ""           # "%0 arg x" for the kernel's header comment
    strides: tuple | None = None

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def element_strides(self) -> tuple:
        if self.strides is not None:
            return self.strides
        from .layout import contiguous_strides

        return contiguous_strides(self.shape)


@dataclass(frozen=True)
class Loop:
    var: str                     # "i0"
    size: int
    role: str = "outer"          # "outer" | "reduce" | "inner"


# --- expressions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    param: str
    strides: tuple               # element stride per loop of the kernel (0 = broadcast)
    dtype: np.dtype


@dataclass(frozen=True)
class Const:
    value: object                # a Python scalar, already converted to ``dtype``
    dtype: np.dtype


@dataclass(frozen=True)
class Var:
    name: str
    dtype: np.dtype


@dataclass(frozen=True)
class Cast:
    arg: object
    dtype: np.dtype


@dataclass(frozen=True)
class Apply:
    """One op: its template from the registry, applied to ``args`` (already converted to
    ``compute_dtype``); the value has ``dtype`` (bool for comparisons, else the compute
    dtype)."""

    op: str
    template: str
    args: tuple
    compute_dtype: np.dtype
    dtype: np.dtype


Expr = Load | Const | Var | Cast | Apply


# --- statements ------------------------------------------------------------------------


@dataclass(frozen=True)
class Assign:
    name: str                    # "v7" for node %7
    value: Expr
    dtype: np.dtype
    comment: str = ""            # "%7 = multiply %5 %6   train.py:12"


@dataclass(frozen=True)
class Store:
    """Where each point of the loop nest goes. In a reduction kernel ``value`` is the value
    reduced at each point and the store happens once per output element."""

    param: str
    strides: tuple               # per loop; 0 along reduced loops
    value: Expr
    dtype: np.dtype


@dataclass(frozen=True)
class Reduction:
    op: str                      # "sum" | "prod" | "max" | "min"
    acc_dtype: np.dtype          # float32 sums accumulate in float64
    identity: Const
    comment: str = ""
    split: int = 1               # > 1: a full reduction cut into this many chunks
    # Float sums: eager's overflow, NaN and Inf behaviour (eager_sum.py). An output whose
    # sum of |values| passes ``overflow_bound`` (0.0: no check) is summed again as NumPy
    # sums it: the reduce loops nested in ``eager_order`` (loop indices), in pairwise
    # blocks of ``eager_run`` points added one after another.
    overflow_bound: float = 0.0
    eager_order: tuple = ()
    eager_run: int = 1


@dataclass(frozen=True)
class MatMul:
    """``C[m, n] = sum_k A[m, k] B[k, n]`` feeding the epilogue (a matmul_epilogue kernel).

    ``library``: the runtime computes C with NumPy/cuBLAS into the scratch parameter
    ``result`` and the body loads it; otherwise the renderer generates the loops (small
    static shapes, where a library call costs more than the arithmetic).
    """

    a: str
    b: str
    m: int
    n: int
    k: int
    a_strides: tuple             # (row, column) element strides
    b_strides: tuple
    dtype: np.dtype
    result: str                  # the Var (generated) or scratch Param (library) name
    library: bool
    comment: str = ""


# --- the kernel ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Kernel:
    name: str                    # "k0": the fused node's label, a C identifier
    kind: str                    # "elementwise" | "reduction" | "matmul_epilogue"
    params: tuple                # input Params, in call order
    output: Param
    loops: tuple
    body: tuple                  # Assigns, in order
    store: Store
    reduction: Reduction | None = None
    matmul: MatMul | None = None
    scratch: tuple = ()          # Params the runtime fills before the call (library matmul)
    members: tuple = ()          # node ids of the fused members
    member_ops: tuple = ()
    header: tuple = ()           # comment lines printed above the kernel
    device: str = "cpu"
    # The input parameter the memory plan may hand in as the output buffer too (an
    # elementwise kernel written in place): the renderers drop ``restrict`` for the pair.
    inplace: str = ""
    extras: dict = field(default_factory=dict, compare=False)

    @property
    def size(self) -> int:
        """Points of the loop nest (the work; for a reduction, input elements)."""
        return math.prod(loop.size for loop in self.loops)

    def loops_with_role(self, *roles) -> tuple:
        return tuple(loop for loop in self.loops if loop.role in roles)

    @property
    def all_params(self) -> tuple:
        """Every pointer argument in signature order: inputs, scratch, output."""
        return self.params + self.scratch + (self.output,)

    def describe(self) -> str:
        """A short human summary: ``k0 elementwise f32[64,256] (multiply add tanh)``."""
        from execmode.dtypes import type_text

        return (f"{self.name} {self.kind} {type_text(self.output.shape, self.output.dtype)} "
                f"({' '.join(self.member_ops)})")


def walk(expr):
    """Every sub-expression of ``expr``, children first."""
    if isinstance(expr, Apply):
        for arg in expr.args:
            yield from walk(arg)
    elif isinstance(expr, Cast):
        yield from walk(expr.arg)
    yield expr


def loads_of(kernel: Kernel) -> list:
    """Every Load of the kernel's body and store, in order."""
    out = []
    for stmt in kernel.body:
        out.extend(e for e in walk(stmt.value) if isinstance(e, Load))
    out.extend(e for e in walk(kernel.store.value) if isinstance(e, Load))
    return out


# Ops that cost roughly this many adds per point: our float32 approximations (a polynomial
# and a range reduction each) and libm calls. Only a rough weight for the threading
# threshold (render_c.py): it decides speed, never a result.
COSTLY_OPS = {"exp": 8, "log": 8, "tanh": 8, "erf": 8, "expm1": 8, "log1p": 8, "sin": 8,
              "cos": 8, "power": 8, "floor_divide": 4, "remainder": 4, "divide": 2,
              "reciprocal": 2, "sqrt": 2}


def point_cost(kernel: Kernel) -> int:
    """Estimated work per loop point, in adds: one per load and per op, more for costly
    ops (COSTLY_OPS) and the float64 calls to libm, one for a reduction's update."""
    cost = 1 if kernel.reduction is not None else 0
    exprs = [e for stmt in kernel.body for e in walk(stmt.value)]
    exprs += list(walk(kernel.store.value))
    for e in exprs:
        if isinstance(e, Load):
            cost += 1
        elif isinstance(e, Apply):
            weight = COSTLY_OPS.get(e.op, 1)
            if weight == 8 and e.compute_dtype.itemsize == 8:
                weight = 16  # float64: a scalar libm call per point, no vector loop
            cost += weight
    return max(cost, 1)


def canonical(kernel: Kernel) -> str:
    """A key equal for kernels that compile to the same code: names, node ids, comments
    and source lines left out (100 chained 10x10 matmuls are one kernel compiled once)."""
    names: dict[str, str] = {}

    def rename(name: str) -> str:
        return names.setdefault(name, f"n{len(names)}")

    def expr(e):
        if isinstance(e, Load):
            return ("load", rename(e.param), e.strides, e.dtype.str)
        if isinstance(e, Var):
            return ("var", rename(e.name), e.dtype.str)
        if isinstance(e, Const):
            return ("const", repr(e.value), e.dtype.str)
        if isinstance(e, Cast):
            return ("cast", expr(e.arg), e.dtype.str)
        return ("apply", e.op, e.template, tuple(expr(a) for a in e.args),
                e.compute_dtype.str, e.dtype.str)

    params = tuple((rename(p.name), p.dtype.str, p.shape, p.element_strides, p.position)
                   for p in kernel.all_params)
    body = tuple((rename(a.name), expr(a.value), a.dtype.str) for a in kernel.body)
    mm = kernel.matmul
    matmul = None if mm is None else (rename(mm.a), rename(mm.b), mm.m, mm.n, mm.k,
                                      mm.a_strides, mm.b_strides, mm.dtype.str, mm.library)
    red = kernel.reduction
    reduction = None if red is None else (red.op, red.acc_dtype.str, repr(red.identity.value),
                                          red.split)
    store = (rename(kernel.store.param), kernel.store.strides, expr(kernel.store.value))
    loops = tuple((lp.var, lp.size, lp.role) for lp in kernel.loops)
    return repr((kernel.kind, params, loops, body, store, reduction, matmul, kernel.inplace,
                 kernel.device))
