"""The BLAS NumPy itself calls, for matmuls inside a whole-graph program (program.py).

A program is one C function: a matmul in it cannot be ``np.matmul``. It calls the same
CBLAS functions NumPy's matmul calls, in the same library (found at run time among the
libraries this process has loaded, never from a fixed path), with the arguments NumPy's
``@TYPE@_matmul`` loop would pass (numpy/_core/src/umath/matmul.c.src): gemm for
matrix @ matrix, syrk when both operands are one matrix and its transpose, gemv for a
vector operand, dot for a 1x1 result. Same function, same arguments: the same bits as
eager, whose matmul *is* NumPy's.

The function pointers are read once (ctypes) and handed to the program in its buffer
block. Cases NumPy computes without BLAS (a dimension of 1 on the inner axis, zero-size
operands, layouts it would copy first) are not mirrored: :func:`matmul_call` raises
:class:`NoBlas` with the reason and the program is not built (the plan replays instead).
When NumPy was built against a BLAS whose symbols this module does not know, or none,
:func:`find` returns None and :func:`reason` says why.

:func:`thread_control` finds the same library's thread count functions (OpenBLAS's), for
threads.py, which gives the BLAS execmode's thread count.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os

import numpy as np

# CBLAS enum values (cblas.h).
ROW_MAJOR, COL_MAJOR = 101, 102
NO_TRANS, TRANS = 111, 112
UPPER = 121

ROUTINES = ("gemm", "gemv", "syrk", "dot")
# (prefix, suffix, 64-bit integers): NumPy 2 wheels use scipy-openblas64 (ILP64 with
# renamed symbols); distributions link a plain CBLAS (LP64), some an ILP64 one.
NAMINGS = (("scipy_cblas_", "64_", True), ("cblas_", "64_", True),
           ("scipy_cblas_", "", False), ("cblas_", "", False))


class NoBlas(Exception):
    """This matmul is not one NumPy computes with BLAS (or no BLAS was found)."""


class Blas:
    """The CBLAS functions of one library: ``pointer(dtype, routine)`` and the integer
    type its functions take."""

    def __init__(self, path: str, prefix: str, suffix: str, ilp64: bool, pointers: dict):
        self.path, self.prefix, self.suffix, self.ilp64 = path, prefix, suffix, ilp64
        self._pointers = pointers       # ("s" | "d", routine) -> address

    @property
    def int_type(self) -> str:
        return "long long" if self.ilp64 else "int"

    @property
    def max_size(self) -> int:
        return 2**63 - 2 if self.ilp64 else 2**31 - 2

    def pointer(self, letter: str, routine: str) -> int:
        """The address of ``cblas_<letter><routine>`` (letter "s" or "d")."""
        return self._pointers[(letter, routine)]

    def describe(self) -> str:
        return f"{os.path.basename(self.path)} ({self.prefix}*{self.suffix}, " \
               f"{'64' if self.ilp64 else '32'}-bit integers)"


_reason = ""


@functools.lru_cache(maxsize=1)
def find() -> Blas | None:
    """NumPy's BLAS in this process, or None (``reason()`` says why)."""
    global _reason
    candidates = _loaded_libraries()
    if not candidates:
        _reason = "no BLAS library among the loaded ones (not Linux, or NumPy without BLAS)"
        return None
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)  # already loaded: the same handle NumPy uses
        except OSError:
            continue
        for prefix, suffix, ilp64 in NAMINGS:
            pointers = {}
            for letter in "sd":
                for routine in ROUTINES:
                    fn = getattr(lib, f"{prefix}{letter}{routine}{suffix}", None)
                    if fn is None:
                        break
                    pointers[(letter, routine)] = ctypes.cast(fn, ctypes.c_void_p).value
            if len(pointers) == 2 * len(ROUTINES):
                return Blas(path, prefix, suffix, ilp64, pointers)
    _reason = f"no CBLAS symbols NumPy would call in {', '.join(map(os.path.basename, candidates))}"
    return None


def reason() -> str:
    find()
    return _reason


# --- its thread count ------------------------------------------------------------------

# OpenBLAS's own functions for its thread count, (set, get) by build: NumPy 2's wheels
# (scipy-openblas64, then scipy-openblas32), then plain OpenBLAS (ILP64, LP64). Both take
# and return a C int in every build.
THREAD_FUNCTIONS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)


class BlasThreads:
    """The thread count of the BLAS NumPy calls: ``get()`` and ``set(n)`` (threads.py
    decides the count)."""

    def __init__(self, path: str, set_fn, get_fn):
        self.path = path
        self._set, self._get = set_fn, get_fn

    def get(self) -> int:
        return int(self._get())

    def set(self, n: int) -> None:
        self._set(int(n))


_thread_reason = ""


@functools.lru_cache(maxsize=1)
def thread_control() -> BlasThreads | None:
    """The thread count functions of NumPy's BLAS in this process, or None
    (``thread_control_reason()`` says why). OpenBLAS only: MKL and BLIS builds of NumPy
    keep their own settings."""
    global _thread_reason
    candidates = _loaded_libraries()
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)  # already loaded: the same handle NumPy uses
        except OSError:
            continue
        for set_name, get_name in THREAD_FUNCTIONS:
            set_fn, get_fn = getattr(lib, set_name, None), getattr(lib, get_name, None)
            if set_fn is not None and get_fn is not None:
                set_fn.argtypes, set_fn.restype = [ctypes.c_int], None
                get_fn.argtypes, get_fn.restype = [], ctypes.c_int
                return BlasThreads(path, set_fn, get_fn)
    names = ", ".join(map(os.path.basename, candidates)) or "no BLAS library loaded"
    _thread_reason = f"no OpenBLAS thread functions in {names}"
    return None


def thread_control_reason() -> str:
    thread_control()
    return _thread_reason


def _loaded_libraries() -> list[str]:
    """Shared libraries this process has mapped that look like a BLAS, NumPy's own
    extension module last (a BLAS linked statically into it)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[-1].strip() for line in maps if "/" in line}
    except OSError:
        return []
    names = ("blas", "mkl_rt", "libflame", "blis")
    found = sorted(p for p in paths if any(n in os.path.basename(p).lower() for n in names))
    core = getattr(getattr(np, "_core", None), "_multiarray_umath", None)
    if core is not None and getattr(core, "__file__", None):
        found.append(core.__file__)
    return found


def _letter(dtype) -> str:
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return "s"
    if dtype == np.float64:
        return "d"
    raise NoBlas(f"{dtype} matmul: NumPy's BLAS path covers float32 and float64")


# --- the C a matmul becomes -------------------------------------------------------------

def c_typedefs(blas: Blas) -> str:
    """Function pointer types of the routines (prepended to a program's source)."""
    i = "em_blas_int"
    lines = [f"typedef {blas.int_type} {i};"]
    for letter, t in (("s", "float"), ("d", "double")):
        lines += [
            f"typedef void (*em_{letter}gemm_t)(int, int, int, {i}, {i}, {i}, {t}, "
            f"const {t} *, {i}, const {t} *, {i}, {t}, {t} *, {i});",
            f"typedef void (*em_{letter}gemv_t)(int, int, {i}, {i}, {t}, const {t} *, {i}, "
            f"const {t} *, {i}, {t}, {t} *, {i});",
            f"typedef void (*em_{letter}syrk_t)(int, int, int, {i}, {i}, {t}, const {t} *, "
            f"{i}, {t}, {t} *, {i});",
            f"typedef {t} (*em_{letter}dot_t)({i}, const {t} *, {i}, const {t} *, {i});",
        ]
    return "\n".join(lines)


def _blasable2d(s1: int, s2: int, d1: int, d2: int, max_size: int) -> bool:
    # numpy's is_blasable2d, in element strides (the byte stride is a whole number of
    # elements for every array a program holds).
    return s2 == 1 and d2 <= s1 <= max_size


def matmul_call(blas: Blas, dtype, a_shape, a_strides, b_shape, b_strides, out_shape,
                a: str, b: str, out: str, fn: dict, turn=None, own=None) -> list[str]:
    """C statements computing ``out = a @ b`` as numpy.matmul does (C-contiguous ``out``).

    ``a``/``b``/``out``: C expressions of the data pointers (``const T *`` / ``T *``);
    ``*_strides``: element strides of the operands as NumPy would see them; ``fn``: routine
    -> C expression of its function pointer (``b[17]``). Raises NoBlas where NumPy would
    not call BLAS.

    ``turn(m, n, p, a_trans, b_trans)``, for a plain 2-d gemm: the C expression of a
    ``p x m`` scratch buffer when the product is to be computed as ``b^T @ a^T`` there and
    transposed into ``out`` (gemm_orientation.py: the same bits, faster), else None.
    ``own(m, n, p, a_trans, b_trans, lda, ldb, ldc)``, for a plain 2-d gemm: the C lines
    computing it with the program's own kernel (gemm_kernel.py: the same bits, faster),
    else None; asked before ``turn``.
    """
    dtype = np.dtype(dtype)
    letter = _letter(dtype)
    t = "float" if letter == "s" else "double"
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise NoBlas("a 1-d matmul operand")
    dm, dn = a_shape[-2:]
    dp = b_shape[-1]
    if 0 in (dm, dn, dp) or math.prod(out_shape) == 0:
        raise NoBlas("a zero-size matmul (NumPy's loops, no BLAS)")
    if max(dm, dn, dp) > blas.max_size:
        raise NoBlas("a matmul too large for BLAS integers")
    is1_m, is1_n = a_strides[-2:]
    is2_n, is2_p = b_strides[-2:]
    os_m, os_p = dp, 1
    big = blas.max_size
    i1 = _blasable2d(is1_m, is1_n, dm, dn, big) or _blasable2d(is1_n, is1_m, dn, dm, big)
    i2 = _blasable2d(is2_n, is2_p, dn, dp, big) or _blasable2d(is2_p, is2_n, dp, dn, big)
    special = 1 in (dm, dn, dp)
    batch = tuple(out_shape[:-2])
    if special:
        if dm == 1 and dp == 1:
            if is1_n <= 0 or is2_n <= 0:
                raise NoBlas("a dot over non-positive strides (NumPy's loop)")
            body = [f"double sum = 0.; /* as NumPy's {t}_dot */",
                    f"sum += ((em_{letter}dot_t){fn['dot']})({dn}, A, {is1_n}, B, {is2_n});",
                    f"C[0] = ({t})sum;"]
        elif dn == 1:
            raise NoBlas("an outer product (NumPy's loops, no BLAS)")
        elif dm == 1 and i2 and _blasable2d(is1_n, 1, dn, 1, big):
            body = _gemv(letter, fn, "B", is2_p, is2_n, "A", is1_n, os_p, dp, dn, big)
        elif dp == 1 and i1 and _blasable2d(is2_n, 1, dn, 1, big):
            body = _gemv(letter, fn, "A", is1_m, is1_n, "B", is2_n, os_m, dm, dn, big)
        else:
            raise NoBlas("a vector operand NumPy would not hand to BLAS")
    else:
        if not (i1 and i2):
            raise NoBlas("an operand layout NumPy copies before BLAS")
        body = _matrix_matrix(letter, fn, is1_m, is1_n, is2_n, is2_p, os_m, dm, dn, dp, big,
                              None if batch else turn, None if batch else own)
    lines = []
    if not batch:
        lines.append("{")
        lines.append(f"    const {t} *A = {a}; const {t} *B = {b}; {t} *C = {out};")
        lines += ["    " + line for line in body]
        lines.append("}")
        return lines
    # A batch: NumPy's outer loop, one matrix at a time (each is independent of the rest,
    # so the order does not change any bit).
    a_batch = _batch_strides(a_shape, a_strides, batch)
    b_batch = _batch_strides(b_shape, b_strides, batch)
    n_batch = math.prod(batch)
    lines.append(f"for (long em_t = 0; em_t < {n_batch}L; em_t++) {{")
    lines.append("    long em_r = em_t, em_oa = 0, em_ob = 0;")
    for axis in reversed(range(len(batch))):
        lines.append(f"    {{ long em_i = em_r % {batch[axis]}L; em_r /= {batch[axis]}L; "
                     f"em_oa += em_i * {a_batch[axis]}L; em_ob += em_i * {b_batch[axis]}L; }}")
    lines.append(f"    const {t} *A = {a} + em_oa; const {t} *B = {b} + em_ob; "
                 f"{t} *C = {out} + em_t * {dm * dp}L;")
    lines += ["    " + line for line in body]
    lines.append("}")
    return lines


def _batch_strides(shape, strides, batch) -> list[int]:
    """An operand's element strides along the output's batch axes (0 where broadcast)."""
    own = len(shape) - 2
    pad = len(batch) - own
    out = []
    for axis in range(len(batch)):
        k = axis - pad
        out.append(0 if k < 0 or shape[k] == 1 else strides[k])
    return out


def _gemv(letter, fn, ip1, is1_m, is1_n, ip2, is2_n, op_m, m, n, big) -> list[str]:
    # numpy's @TYPE@_gemv.
    if _blasable2d(is1_m, is1_n, m, n, big):
        order, lda = COL_MAJOR, is1_m
    else:
        order, lda = ROW_MAJOR, is1_n
    one, zero = ("1.F", "0.F") if letter == "s" else ("1.", "0.")
    return [f"((em_{letter}gemv_t){fn['gemv']})({order}, {TRANS}, {n}, {m}, {one}, {ip1}, "
            f"{lda}, {ip2}, {is2_n}, {zero}, C, {op_m});"]


def _matrix_matrix(letter, fn, is1_m, is1_n, is2_n, is2_p, os_m, m, n, p, big,
                   turn=None, own=None) -> list[str]:
    # numpy's @TYPE@_matmul_matrixmatrix (the output is C-contiguous: no transposed form).
    one, zero = ("1.F", "0.F") if letter == "s" else ("1.", "0.")
    ldc = os_m
    if _blasable2d(is1_m, is1_n, m, n, big):
        trans1, lda = NO_TRANS, is1_m
    else:
        trans1, lda = TRANS, is1_n
    if _blasable2d(is2_n, is2_p, n, p, big):
        trans2, ldb = NO_TRANS, is2_n
    else:
        trans2, ldb = TRANS, is2_p
    gemm = (f"((em_{letter}gemm_t){fn['gemm']})({ROW_MAJOR}, {trans1}, {trans2}, {m}, {p}, "
            f"{n}, {one}, A, {lda}, B, {ldb}, {zero}, C, {ldc});")
    syrk_possible = m == p and is1_m == is2_p and is1_n == is2_n and trans1 != trans2
    mine = None if own is None or syrk_possible else \
        own(m, n, p, trans1 == TRANS, trans2 == TRANS, lda, ldb, ldc)
    if mine is not None:
        return mine
    scratch = None if turn is None or syrk_possible else \
        turn(m, n, p, trans1 == TRANS, trans2 == TRANS)
    if scratch is not None:
        return _turned_gemm(letter, fn, scratch, trans1, lda, trans2, ldb, ldc, m, n, p)
    if not syrk_possible:
        return [gemm]
    # A matrix times its own transpose: NumPy calls syrk when both are one pointer.
    ld = lda if trans1 == NO_TRANS else ldb
    return [
        "if ((const void *)A == (const void *)B) {",
        f"    ((em_{letter}syrk_t){fn['syrk']})({ROW_MAJOR}, {UPPER}, {trans1}, {p}, {n}, "
        f"{one}, A, {ld}, {zero}, C, {ldc});",
        f"    for (long i = 0; i < {p}; i++)",
        f"        for (long j = i + 1; j < {p}; j++)",
        f"            C[j * {ldc} + i] = C[i * {ldc} + j];",
        "} else {",
        "    " + gemm,
        "}",
    ]


def _turned_gemm(letter, fn, scratch, trans1, lda, trans2, ldb, ldc, m, n, p) -> list[str]:
    """``C = A @ B`` as ``D = B^T @ A^T`` (p x m, in ``scratch``), then C = D^T in tiles:
    the call NumPy makes for ``b.T @ a.T`` (each flag flipped, the operands swapped)."""
    one, zero = ("1.F", "0.F") if letter == "s" else ("1.", "0.")
    flip = {NO_TRANS: TRANS, TRANS: NO_TRANS}
    t = "float" if letter == "s" else "double"
    return [
        f"{t} *D = ({t} *){scratch}; /* the product turned round: the same bits, faster */",
        f"((em_{letter}gemm_t){fn['gemm']})({ROW_MAJOR}, {flip[trans2]}, {flip[trans1]}, "
        f"{p}, {m}, {n}, {one}, B, {ldb}, A, {lda}, {zero}, D, {m});",
        f"for (long i0 = 0; i0 < {m}; i0 += 32)",
        f"    for (long j0 = 0; j0 < {p}; j0 += 32)",
        f"        for (long i = i0; i < i0 + 32 && i < {m}; i++)",
        f"            for (long j = j0; j < j0 + 32 && j < {p}; j++)",
        f"                C[i * {ldc} + j] = D[j * {m} + i];",
    ]
