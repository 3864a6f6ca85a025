"""The function API (Array API names where one exists): ``em.exp(x)``, ``em.sum(x, axis=1)``.

Each function normalises its arguments (axes, shapes, dtypes) and hands one primitive to
:func:`execmode.dispatch.apply`. Array-level composites (mean, var, stack, tensordot, ...)
are written over primitives; the ML composites live in ``execmode.nn.functional``.

The functions live in one module per op family, as ``ops/`` and ``tests/engine/`` are
split: ``creation``, ``elementwise``, ``reductions``, ``linalg`` (and ``einsum_lowering``),
``shape``, ``indexing``, ``state``, ``gather_scatter``, ``scan``, ``triangular``; the
argument checks they share are in ``arguments``, the door to dispatch in ``primitives``.
No module is named after a function it holds (``gather``, ``einsum``): the submodule would
shadow the function as an attribute of this package.

This module only re-exports them, so ``execmode.functional.<name>`` and ``em.<name>`` stay
the one public spelling. The private helpers re-exported below are those ``nn``, ``optim``,
``random`` and ``tensor_methods`` reach as ``F._name``. ``arguments`` must load first: it
closes its import cycle with ``creation`` (see the end of arguments.py), and it sorts first.
"""

from __future__ import annotations

from .._tensor import Tensor  # noqa: F401 - reached as F.Tensor
from ..dtypes import bool_, int64  # noqa: F401 - reached as F.bool_, F.int64

# arguments first: it closes its import cycle with creation (see the end of arguments.py).
from .arguments import (
    _bool_arg,
    _int_arg,
    _is_int,
    _number_arg,
    _one_axis_keyword,
    _require_tensor,
    _tensor_arg,
    _torch_axis,
    normalize_axis_for,
    size_arg,
)
from .array_api import (
    broadcast_arrays,
    broadcast_shapes,
    conj,
    diff,
    empty,
    empty_like,
    imag,
    moveaxis,
    real,
    take,
    unstack,
    vecdot,
)
from .array_api_info import (
    __array_namespace_info__,
)
from .creation import (
    _random,
    arange,
    asarray,
    astype,
    eye,
    from_dlpack,
    full,
    full_like,
    linspace,
    multinomial,
    ones,
    ones_like,
    randn,
    tensor,
    to_device,
    zeros,
    zeros_like,
)
from .data_types import (
    can_cast,
    finfo,
    iinfo,
    isdtype,
    result_type,
)
from .einsum_lowering import (
    einsum,
)
from .elementwise import (  # noqa: A004 - Array API names shadow builtins
    abs,
    acos,
    acosh,
    add,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    clamp,
    clip,
    copy,
    copysign,
    cos,
    cosh,
    divide,
    equal,
    erf,
    exp,
    expm1,
    floor,
    floor_divide,
    greater,
    greater_equal,
    hypot,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    negative,
    nextafter,
    not_equal,
    positive,
    pow,
    power,
    reciprocal,
    remainder,
    round,
    sign,
    signbit,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    trunc,
    where,
)
from .gather_scatter import (
    gather,
    index_add,
    scatter,
    scatter_add,
    take_along_axis,
)
from .indexing import (
    argwhere,
    getitem,
    index_select,
    masked_fill,
    nonzero,
    one_hot,
    repeat,
    repeat_interleave,
    setitem,
)
from .linalg import (
    addmm,
    baddbmm,
    matmul,
    matrix_transpose,
    tensordot,
)
from .primitives import (
    apply,
    apply_op,
)
from .reductions import (  # noqa: A004 - Array API names shadow builtins
    all,
    any,
    argmax,
    argmin,
    count_nonzero,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from .scan import (
    argsort,
    cumsum,
    cumulative_prod,
    cumulative_sum,
    searchsorted,
    sort,
    topk,
)
from .sets import (
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from .shape import (
    broadcast_to,
    cat,
    chunk,
    concat,
    expand,
    expand_dims,
    flatten,
    flip,
    meshgrid,
    permute_dims,
    reshape,
    roll,
    split,
    squeeze,
    stack,
    swapaxes,
    tile,
    transpose,
)
from .state import (
    assign,
    debug_print,
)
from .triangular import (
    tril,
    triu,
)

__all__ = [
    "tensor", "asarray", "full", "zeros", "ones", "full_like", "zeros_like", "ones_like",
    "arange", "linspace", "eye", "randn", "copy", "negative", "abs", "sign", "exp", "log",
    "log1p", "expm1", "sqrt", "square", "sin", "cos", "tanh", "erf", "reciprocal", "floor",
    "ceil", "round", "logical_not", "isnan", "isinf", "isfinite", "add", "subtract",
    "multiply", "divide", "floor_divide", "remainder", "power", "pow", "maximum", "minimum",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "where", "clip", "astype", "to_device", "sum", "prod", "max", "min",
    "argmax", "argmin", "mean", "var", "std", "any", "all", "matmul", "matrix_transpose",
    "tensordot", "reshape", "permute_dims", "transpose", "swapaxes", "expand_dims", "squeeze",
    "flatten", "broadcast_to", "concat", "stack", "getitem", "setitem", "assign", "argwhere",
    "nonzero", "count_nonzero", "debug_print", "einsum", "split", "chunk", "cat", "clamp",
    "masked_fill", "expand", "repeat", "logaddexp", "multinomial", "cumsum", "argsort", "sort",
    "topk", "take_along_axis", "gather", "scatter_add", "index_add", "one_hot", "tril", "triu",
    # PyTorch's and the Array API's, for PyTorch programs (execmode.torch)
    "sinh", "cosh", "flip", "roll", "meshgrid", "index_select", "repeat_interleave", "scatter",
    "addmm", "baddbmm",
    # the Array API's elementwise functions (issue 36)
    "tan", "acos", "asin", "atan", "acosh", "asinh", "atanh", "log2", "log10", "trunc",
    "signbit", "atan2", "copysign", "hypot", "nextafter", "positive", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert", "bitwise_left_shift",
    "bitwise_right_shift",
    # the Array API's data type functions (issue 36)
    "finfo", "iinfo", "isdtype", "result_type", "can_cast",
    "empty", "empty_like", "moveaxis", "vecdot", "broadcast_shapes", "broadcast_arrays",
    "__array_namespace_info__", "tile", "unstack", "diff", "take", "cumulative_sum",
    "cumulative_prod", "searchsorted", "unique_all", "unique_counts", "unique_inverse",
    "unique_values", "conj", "real", "imag", "from_dlpack",
]
