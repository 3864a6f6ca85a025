"""The kernel IR interpreter: runs kernels over NumPy when no C compiler works.

Each statement is the op's own eager implementation (``OPS[op].impl``) applied to NumPy
views, so results are eager's by construction. The loop nest is walked in chunks along its
outermost loop (about ``CHUNK_POINTS`` points at a time), so a chain of ten ops over 16M
elements makes ten cache-sized temporaries per chunk instead of ten 64 MB arrays.

Loads are ``as_strided`` views of the inputs with the kernel's loop strides (stride 0 for a
broadcast), which is exactly the index arithmetic the C and CUDA renderers print: running
the interpreter in tests checks the kernel IR independently of any compiler.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from execmode.ops import OPS

from . import eager_sum
from .buffers import OutputPool, arranged, has_strides
from .kernel_ir import Apply, Cast, Const, Kernel, Load, Var

CHUNK_POINTS = 1 << 15

_COMBINE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
_REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


class InterpretedKernel:
    """Same interface as a compiled kernel: ``fn(*args)`` and ``run_into(out, *args)``."""

    backend = "interpreter"
    language = "kernel-ir"

    def __init__(self, kernel: Kernel, source: str = ""):
        self.kernel = kernel
        self.name = kernel.name
        self.source = source
        self._positions = {p.name: p.position for p in kernel.params}
        self._pool = OutputPool(kernel.output.shape, kernel.output.dtype)
        self._mm = {p.name: np.empty(p.shape, p.dtype) for p in kernel.scratch}

    def __repr__(self) -> str:
        return f"<InterpretedKernel {self.kernel.describe()}>"

    def __call__(self, *args):
        return self.run_into(self._pool.take()[0], *args)

    def run_into(self, out, *args):
        k = self.kernel
        arrays = {}
        for p in k.params:
            a = np.asarray(args[p.position])
            if a.dtype != p.dtype or a.shape != p.shape or not has_strides(a, p.element_strides):
                # Loads index the array with the strides the kernel was built for.
                a = arranged(np, np.asarray(a).reshape(p.shape), p.dtype, p.element_strides)
            arrays[p.name] = a
        with np.errstate(all="ignore"):
            if k.matmul is not None:
                product = np.matmul(arrays[k.matmul.a], arrays[k.matmul.b])
                if k.matmul.library:
                    arrays["mm"] = self._mm["mm"]
                    arrays["mm"][...] = product
                else:
                    arrays["acc"] = product
            run(k, arrays, out)
        return out


def run(k: Kernel, arrays: dict, out: np.ndarray) -> None:
    """Execute kernel ``k`` over ``arrays`` (by parameter name) into ``out``."""
    sizes = [loop.size for loop in k.loops]
    if 0 in sizes and k.reduction is None:
        return
    rows = _rows_per_chunk(sizes)
    if k.reduction is None:
        target = _view(out, k.store.strides, sizes)
        for lo in range(0, max(sizes[0], 1) if sizes else 1, rows):
            env = _chunk_env(k, arrays, sizes, lo, lo + rows)
            target_chunk = target[lo:lo + rows] if sizes else target
            target_chunk[...] = _evaluate(k.store.value, env)
        return
    _run_reduction(k, arrays, out, sizes, rows)


def _run_reduction(k: Kernel, arrays, out, sizes, rows) -> None:
    red = k.reduction
    reduce_axes = tuple(d for d, loop in enumerate(k.loops) if loop.role == "reduce")
    kept = [d for d in range(len(sizes)) if d not in reduce_axes]
    target = _view(out, [k.store.strides[d] for d in kept], [sizes[d] for d in kept])
    if 0 in sizes:  # nothing to reduce: every output is the identity
        target[...] = red.identity.value
        return
    # NumPy reduces from the identity: a sum of one -0.0 is 0.0 + -0.0 = 0.0 (fuzz
    # 1795535866-5060), so values that reach the output unreduced start from it too.
    identity = np.asarray(red.identity.value, dtype=red.acc_dtype)
    if not sizes:   # a single point (every axis had size 1)
        env = _chunk_env(k, arrays, sizes, 0, 1)
        value = np.asarray(_evaluate(k.store.value, env), dtype=red.acc_dtype)
        target[...] = _COMBINE[red.op](identity, value)
        return
    # Chunks along the outermost loop: independent outputs when it is kept, partial
    # results combined in order when it is reduced.
    chunk_on_reduced = 0 in reduce_axes
    acc = None
    for lo in range(0, sizes[0], rows):
        hi = min(lo + rows, sizes[0])
        env = _chunk_env(k, arrays, sizes, lo, hi)
        value = np.asarray(_evaluate(k.store.value, env), dtype=red.acc_dtype)
        value = np.broadcast_to(value, [hi - lo] + list(sizes[1:]))
        part = _REDUCE[red.op](value, axis=reduce_axes) if reduce_axes else \
            _COMBINE[red.op](identity, value)
        part = np.asarray(part, dtype=red.acc_dtype)
        if chunk_on_reduced:
            acc = part if acc is None else _COMBINE[red.op](acc, part)
        else:
            target[lo:hi] = part
    if chunk_on_reduced:
        target[...] = acc
    if red.overflow_bound:
        _eager_resum(k, arrays, sizes, target)


def _eager_resum(k: Kernel, arrays, sizes, target) -> None:
    """Outputs whose sum of |values| passed the bound, summed again in NumPy's order and
    dtype (codegen/eager_sum.py), as the C kernels do: eager's overflow, exactly."""
    red = k.reduction
    value = k.store.value
    if isinstance(value, Cast) and value.dtype == red.acc_dtype:
        value = value.arg
    env = _chunk_env(k, arrays, sizes, 0, sizes[0])
    points = np.broadcast_to(np.asarray(_evaluate(value, env), dtype=k.output.dtype), sizes)
    reduce_axes = [d for d, loop in enumerate(k.loops) if loop.role == "reduce"]
    kept = [d for d in range(len(sizes)) if d not in reduce_axes]
    magnitude = np.abs(points.astype(np.float64)).sum(axis=tuple(reduce_axes))
    flagged = ~(magnitude <= red.overflow_bound)
    if not flagged.any():
        return
    order = list(red.eager_order) + [d for d in reduce_axes if d not in red.eager_order]
    moved = np.transpose(points, kept + order).reshape(magnitude.shape + (-1,))
    for index in np.argwhere(flagged):  # (rows of output indices; one empty for a 0-d)
        index = tuple(index)
        target[index] = eager_sum.eager_sum(moved[index], red.eager_run)


def _rows_per_chunk(sizes) -> int:
    if not sizes:
        return 1
    per_row = 1
    for s in sizes[1:]:
        per_row *= s
    return max(1, CHUNK_POINTS // max(per_row, 1))


def _view(array: np.ndarray, strides, sizes) -> np.ndarray:
    item = array.itemsize
    return as_strided(array, shape=tuple(sizes), strides=tuple(s * item for s in strides),
                      writeable=True)


def _chunk_env(k: Kernel, arrays, sizes, lo, hi) -> dict:
    env = {"__loads__": {}, "__arrays__": arrays, "__sizes__": sizes, "__range__": (lo, hi)}
    for stmt in k.body:
        env[stmt.name] = _evaluate(stmt.value, env)
    if "acc" in arrays:
        env["acc"] = _load_matrix(arrays["acc"], env)
    return env


def _load_matrix(product, env):
    lo, hi = env["__range__"]
    return product[lo:hi] if env["__sizes__"] else product


def _evaluate(e, env):
    if isinstance(e, Var):
        if e.name not in env and e.name == "acc":
            env["acc"] = _load_matrix(env["__arrays__"]["acc"], env)
        return env[e.name]
    if isinstance(e, Const):
        return np.dtype(e.dtype).type(e.value)
    if isinstance(e, Load):
        cache = env["__loads__"]
        key = (e.param, e.strides)
        if key not in cache:
            view = _view(env["__arrays__"][e.param], e.strides, env["__sizes__"])
            lo, hi = env["__range__"]
            cache[key] = view[lo:hi] if env["__sizes__"] else view
        return cache[key]
    if isinstance(e, Cast):
        return np.asarray(_evaluate(e.arg, env)).astype(e.dtype)
    if isinstance(e, Apply):
        args = [_evaluate(a, env) for a in e.args]
        if e.op == "cast":
            return np.asarray(args[0]).astype(e.compute_dtype)
        return OPS[e.op].impl(np, *args)
    raise TypeError(f"not an expression: {e!r}")
