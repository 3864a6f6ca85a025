"""What a missing name says: what to use instead, or that it is not supported.

(PyTorch's keywords ``dim=``/``keepdim=`` are accepted by the functions themselves, beside
the Array API's ``axis=``/``keepdims=``; see ``functional.arguments._torch_axis``.)

One lookup, :func:`missing_attribute`, for every namespace a PyTorch or NumPy user reaches
into: ``em``, ``execmode.torch``, a Tensor, ``nn``, ``nn.functional``, ``optim``. In order:

1. a hint from this module's tables (``em.bmm: use em.matmul, which batches``);
2. a name of PyTorch's own namespace (``pytorch_names.py``) that execmode lacks: it says so
   ("PyTorch's torch.nn.Bilinear is not supported by execmode"), and on ``em`` a name that
   ``execmode.torch`` has says to use it there;
3. anything else: "has no attribute", where Python may add its "Did you mean".

Python's "Did you mean" is left off the first two: the name is a real spelling of another
API, so the nearest of ours is a wrong guess (``long`` -> ``log``, ``type`` -> ``dtype``,
``sinh`` -> ``sin``, ``backends`` -> ``backend`` were all reported). It is off when the
AttributeError's ``obj`` is None (CPython's suggestions read ``name`` and ``obj``).
"""

from __future__ import annotations

import sys

from .pytorch_names import NAMES

# em.<name> that does not exist, but that a PyTorch or NumPy user types.
MODULE_HINTS = {
    "bmm": "use em.matmul, which batches",
    "mm": "use em.matmul (or the @ operator)",
    "mv": "use em.matmul (or the @ operator)",
    "dot": "use em.matmul for 1-D vectors, or em.tensordot",
    "concatenate": "use em.concat (em.cat also works)",
    "hstack": "use em.concat(tensors, axis=1) (axis=0 for 1-D tensors)",
    "vstack": "use em.concat(tensors, axis=0) after em.expand_dims for 1-D tensors",
    "unsqueeze": "use em.expand_dims(x, axis) or x.unsqueeze(dim)",
    "clamp_min": "use em.clamp(x, min=...)",
    "clamp_max": "use em.clamp(x, max=...)",
    "from_numpy": "use em.tensor(array) (it copies) or em.asarray(array)",
    "as_tensor": "use em.asarray(data)",
    "FloatTensor": "use em.tensor(data, dtype=em.float32)",
    "LongTensor": "use em.tensor(data, dtype=em.int64)",
    "manual_seed": "use em.random.seed(n)",
    "seed": "use em.random.seed(n)",
    "rand": "use em.random.uniform(shape)",
    "randint": "use em.random.randint(low, high, shape)",
    "normal": "use em.random.normal(shape, mean, std)",
    "randn_like": "use em.randn(*x.shape)",
    "no_grad_": "use em.no_grad()",
    "inference_mode": "use em.no_grad()",
    "set_grad_enabled": "use em.no_grad() or em.enable_grad()",
    "compile": "use em.jit(fn)",
    "sigmoid_": "use x.sigmoid_() (or em.nn.functional.sigmoid(x))",
    "relu_": "use x.relu_() (or em.relu(x))",
    "clamp_": "use x = em.clamp(x, ...) (or em.assign(x, em.clamp(x, ...)) to write in place)",
    "numel": "use x.size (the Array API attribute) or x.numel()",
    "ge": "use em.greater_equal (or >=)",
    "gt": "use em.greater (or >)",
    "le": "use em.less_equal (or <=)",
    "lt": "use em.less (or <)",
    "eq": "use em.equal (or ==)",
    "ne": "use em.not_equal (or !=)",
    "mul": "use em.multiply (or *)",
    "div": "use em.divide (or /)",
    "sub": "use em.subtract (or -)",
    "neg": "use em.negative (or unary -)",
    "amax": "use em.max(x, axis=...)",
    "amin": "use em.min(x, axis=...)",
    "rsqrt": "use 1 / em.sqrt(x)",
    "nonzero_static": "use em.nonzero (its size depends on the values: a graph break)",
    "zeros_": "use em.zeros_like(x) or x.zero_()",
    # dtype names of PyTorch: em keeps the Array API's
    "long": "use em.int64 (PyTorch's torch.long; execmode.torch has that name)",
    "int": "use em.int64 or em.int32 (PyTorch's torch.int is int32)",
    "float": "use em.float32 (PyTorch's torch.float)",
    "double": "use em.float64 (PyTorch's torch.double)",
    "half": "float16 is not supported; execmode computes in em.float32 or em.float64",
    "float16": "float16 is not supported; execmode computes in em.float32 or em.float64",
    "bfloat16": "bfloat16 is not supported; execmode computes in em.float32 or em.float64",
    "type": "tensors have x.dtype; x.type() is PyTorch's (it works on tensors)",
}

# tensor.<name> that does not exist, but that a PyTorch or NumPy user types.
TENSOR_HINTS = {
    "numpy_": "use x.numpy()",
    "half": "float16 is not supported; use x.float() (float32)",
    "bfloat16": "bfloat16 is not supported; use x.float() (float32)",
    "storage": "storages are internal; use x.numpy()",
    "data_ptr": "storages are internal; use x.numpy()",
    "neg": "use -x",
}


# execmode.torch.<name> that does not exist, but that a PyTorch user types.
TORCH_HINTS = {
    "set_default_dtype": "execmode's default float dtype is float32; pass dtype= where a "
                         "tensor is made (or x.double())",
    "set_default_tensor_type": "execmode's default float dtype is float32; pass dtype=",
    "vmap": "not supported; write the batched computation (matmul and friends batch)",
    "func": "torch.func (vmap, grad, jacrev) is not supported; use backward()",
    "fx": "torch.fx is not supported; em.jit(fn).trace(*args) gives execmode's graph",
    "export": "torch.export is not supported; em.jit(fn).lower(*args) gives the optimized graph",
    "quantization": "quantization is not supported",
    "sparse": "sparse tensors are not supported",
    "complex64": "complex dtypes are not supported",
    "complex128": "complex dtypes are not supported",
    "cfloat": "complex dtypes are not supported",
    "hub": "torch.hub (downloads) is not supported; build the model and load_state_dict",
    "multiprocessing": "torch.multiprocessing is not supported; DataLoader loads in the "
                       "main process",
    "distributed": "execmode.torch.distributed (execmode.distributed): collectives over MPI",
}

# torch.nn / em.nn, torch.nn.functional, torch.optim names with a better answer than
# "not supported".
NN_HINTS = {
    "DataParallel": "in execmode.torch.nn (import execmode.torch.nn as nn): the module "
                    "itself on the one device execmode uses",
    "DistributedDataParallel": "in execmode.torch.nn (import execmode.torch.nn as nn): "
                               "one replica per process over execmode.distributed",
}
FUNCTIONAL_HINTS: dict[str, str] = {}
OPTIM_HINTS: dict[str, str] = {}

# The names execmode.torch adds to em's (kept equal to execmode/torch/_namespace.py's by
# tests/torch_front/test_missing_names.py): em.<one of them> says where it is.
TORCH_FRONT_END_NAMES = frozenset("""
BoolTensor DoubleTensor FloatTensor Generator IntTensor LongTensor Size accelerator
allclose amax amin amp as_tensor autocast backends bernoulli bfloat16 bmm clone
compile cuda default_generator detach device distributions div dot double dtype
eq float float16 from_numpy ge get_default_dtype
get_float32_matmul_precision get_rng_state gt half hstack inference_mode
initial_seed int is_autocast_enabled is_floating_point is_tensor isclose le
long lt manual_seed mm mul mv narrow ne neg norm normal numel
outer permute rand rand_like randint randint_like randn_like randperm rsqrt seed
set_default_dtype set_float32_matmul_precision set_grad_enabled set_rng_state short
std_mean sub swapdims t take_along_dim true_divide unbind unsqueeze utils var_mean vstack
arctan arctan2 bincount cdist cosine_similarity cumprod diag dist fix fmod
lerp masked_select nan_to_num trace tril_indices triu_indices unique
onnx
""".split())

# Where each namespace's PyTorch names are listed (pytorch_names.py), and how its names
# are spelled in messages.
_SPACES = {
    "execmode": ("em", MODULE_HINTS, "torch", "em"),
    "execmode.torch": ("torch", TORCH_HINTS, "torch", "torch"),
    "Tensor": ("Tensor", None, "Tensor", "Tensor"),
    "execmode.nn": ("nn", NN_HINTS, "torch.nn", "torch.nn"),
    "execmode.nn.functional": ("F", FUNCTIONAL_HINTS, "torch.nn.functional",
                               "torch.nn.functional"),
    "execmode.optim": ("optim", OPTIM_HINTS, "torch.optim", "torch.optim"),
    "execmode.optim.lr_scheduler": ("lr_scheduler", {}, "torch.optim.lr_scheduler",
                                    "torch.optim.lr_scheduler"),
    "execmode.torch.cuda": ("torch.cuda", {}, "torch.cuda", "torch.cuda"),
    "execmode.torch.utils.data": ("torch.utils.data", {}, "torch.utils.data",
                                  "torch.utils.data"),
    "execmode.torch.distributions": ("torch.distributions", {}, "torch.distributions",
                                     "torch.distributions"),
}
_SPACES["execmode.torch.nn"] = _SPACES["execmode.nn"]
_SPACES["execmode.torch.nn.functional"] = _SPACES["execmode.nn.functional"]
_SPACES["execmode.torch.optim"] = _SPACES["execmode.optim"]
_SPACES["execmode.torch.optim.lr_scheduler"] = _SPACES["execmode.optim.lr_scheduler"]


def missing_attribute(space: str, name: str, obj=None) -> AttributeError:
    """The AttributeError for ``<space>.<name>`` that does not exist (``space``: a module's
    ``__name__``, or ``"Tensor"``). ``obj`` is the object asked, for Python's "Did you mean"
    when the name is nobody's spelling."""
    label, hints, torch_space, _ = _SPACES.get(space, (space, {}, None, None))
    if space == "Tensor":
        hints = TENSOR_HINTS
    hint = (hints or {}).get(name)
    if hint is not None:
        return AttributeError(f"{label}.{name}: {hint}", name=name, obj=None)
    if space == "execmode" and name in TORCH_FRONT_END_NAMES:
        return AttributeError(
            f"em.{name}: PyTorch's spelling, in execmode.torch: import execmode.torch as "
            f"torch; torch.{name} (em keeps the Array API's names)", name=name, obj=None)
    if torch_space is not None and name in NAMES.get(torch_space, ()):
        return AttributeError(
            f"{label}.{name}: PyTorch's {torch_space}.{name} is not supported by execmode "
            "(docs/pytorch.md lists what is)", name=name, obj=None)
    what = {"Tensor": "'Tensor' object", "execmode": "execmode"}.get(space, f"module {space!r}")
    return AttributeError(f"{what} has no attribute {name!r}", name=name, obj=obj)


def module_attribute_error(name: str) -> AttributeError:
    """``em.<name>`` that does not exist."""
    return missing_attribute("execmode", name, sys.modules.get("execmode"))


def tensor_attribute_error(name: str) -> AttributeError:
    """``tensor.<name>`` that does not exist."""
    return missing_attribute("Tensor", name)


def tensor_hint_names(existing) -> list[str]:
    """The names to put a hint under on Tensor: the table's, and PyTorch's Tensor names
    that Tensor lacks (``existing``: the names it has)."""
    return sorted(set(TENSOR_HINTS) | {n for n in NAMES["Tensor"] if n not in existing})
