"""Which methods the engine puts onto Tensor, and what each calls: tables of names only.

``tensor_methods`` builds the methods from these tables once the engine is loaded.
``_tensor.py`` reads the same tables to hold a placeholder under every name until then, so
a tensor made by a module imported on its own (``from execmode.nn import Linear``) loads
the engine on its first ``+`` or ``.sum()`` instead of lacking the method. This module
imports nothing: the bottom layer can read it.
"""

from __future__ import annotations

# x.method() -> em.<function>(x)
UNARY = {
    "__neg__": "negative", "__abs__": "abs", "abs": "abs", "exp": "exp", "log": "log",
    "sqrt": "sqrt", "tanh": "tanh", "clone": "copy",
}
# x.method() -> em.nn.functional.<function>(x)
UNARY_NN = {"relu": "relu", "sigmoid": "sigmoid"}
# x.method(y) -> em.<function>(x, y)
BINARY = {
    "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "power",
    "__matmul__": "matmul", "__lshift__": "bitwise_left_shift",
    "__rshift__": "bitwise_right_shift",
    # & | ^ are bitwise on ints and logical on bools (the standard's, NumPy's and torch's)
    "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor",
    "__eq__": "equal", "__ne__": "not_equal", "__lt__": "less", "__le__": "less_equal",
    "__gt__": "greater", "__ge__": "greater_equal", "__getitem__": "getitem",
    "broadcast_to": "broadcast_to", "pow": "power",
}
# y <op> x, with x on the right -> em.<function>(y, x)
REFLECTED = {
    "__rfloordiv__": "floor_divide", "__rmod__": "remainder", "__rpow__": "power",
    "__rmatmul__": "matmul", "__rand__": "bitwise_and", "__ror__": "bitwise_or",
    "__rxor__": "bitwise_xor", "__rlshift__": "bitwise_left_shift",
    "__rrshift__": "bitwise_right_shift",
}
# x.method(*args, **kwargs) -> em.<function>(x, *args, **kwargs): PyTorch's dim= and
# keepdim= reach the functions that accept them.
FORWARDED = {
    **{name: name for name in (
        "sum", "mean", "prod", "max", "min", "argmax", "argmin", "var", "std", "any", "all",
        "clip", "flatten", "squeeze", "expand_dims", "expand", "clamp",
        "masked_fill", "cumsum", "argsort", "topk", "take_along_axis", "tril", "triu",
        "split", "chunk", "logaddexp", "square", "sin", "cos", "log1p", "expm1", "sign",
        "floor", "ceil", "round", "maximum", "minimum", "scatter_add", "index_add",
        "gather", "flip", "roll", "sinh", "cosh", "index_select", "repeat_interleave",
        "scatter", "addmm", "baddbmm", "astype",
    )},
    "unsqueeze": "expand_dims",
    "repeat": "tile",  # PyTorch's x.repeat(2, 3) tiles; em.repeat is the Array API's
    # PyTorch's comparison and arithmetic methods
    "eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
    "ge": "greater_equal", "mul": "multiply", "div": "divide",
}
# x.exp_() -> em.assign(x, em.exp(x)): PyTorch's in-place unary methods (em.nn.functional's
# for relu_ and sigmoid_); under jit each is an assign node, as every in-place write.
IN_PLACE = {
    "exp_": "exp", "log_": "log", "sqrt_": "sqrt", "abs_": "abs", "neg_": "negative",
    "tanh_": "tanh", "sin_": "sin", "cos_": "cos", "floor_": "floor", "ceil_": "ceil",
    "round_": "round", "sign_": "sign", "reciprocal_": "reciprocal", "square_": "square",
}
IN_PLACE_NN = {"relu_": "relu", "sigmoid_": "sigmoid"}
# x.float() -> em.astype(x, em.float32): PyTorch's casts, by dtype name
CASTS = {"float": "float32", "double": "float64", "long": "int64", "int": "int32",
         "bool": "bool_"}
# + - * / and their reflections: dispatch builds them with the eager fast path inlined.
FAST_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide"}
# The methods with bodies of their own (tensor_methods/engine.py's _EngineMethods; install() checks
# that this list and the class agree).
WITH_BODIES = (
    "grad", "backward", "register_post_accumulate_grad_hook", "_concrete", "detach", "to",
    "cpu", "zero_", "__iadd__",
    "__isub__", "__imul__", "__itruediv__", "__setitem__", "__invert__", "reshape", "view",
    "transpose", "permute", "T", "mT", "t", "to_device", "__dlpack__", "__dlpack_device__",
    "__complex__", "contiguous", "expand_as", "dim", "numel",
    "clamp_min", "clamp_max", "sort", "where", "softmax", "log_softmax",
)
# PyTorch's methods with bodies of their own (tensor_methods/torch_spellings.py's _PyTorchMethods): in-place
# updates, the torch spellings of casts and sizes, var/std with PyTorch's default.
WITH_TORCH_BODIES = (
    "view_as", "type", "type_as", "nelement", "ndimension", "element_size", "is_contiguous",
    "is_floating_point", "new_zeros", "new_ones", "new_full", "new_empty", "new_tensor",
    "cuda", "is_cuda", "get_device", "pin_memory", "add", "sub", "var", "std", "fill_",
    "copy_", "add_", "sub_", "mul_", "div_", "clamp_", "masked_fill_", "scatter_", "normal_",
    "uniform_", "mm", "bmm", "mv", "dot", "unbind", "narrow", "lerp", "lerp_", "addcmul_",
    "addcdiv_", "clamp_min_", "clamp_max_", "index_fill_", "bernoulli_", "matmul", "amax",
    "amin", "logsumexp", "norm", "isnan", "isinf", "isfinite", "nonzero", "masked_select",
    "unique", "cumprod", "trunc", "fmod", "diag", "trace", "diff", "nan_to_num",
    "scatter_add_", "index_add_", "atan", "atan2",
)


def installed_names() -> tuple[str, ...]:
    """Every name tensor_methods.install() puts onto Tensor."""
    names = [*UNARY, *UNARY_NN, *BINARY, *REFLECTED, *FORWARDED, *CASTS, *IN_PLACE,
             *IN_PLACE_NN]
    for dunder in FAST_OPERATORS:
        names += [f"__{dunder}__", f"__r{dunder}__"]
    return (*names, *WITH_BODIES, *WITH_TORCH_BODIES)
