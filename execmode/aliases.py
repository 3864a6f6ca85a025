"""Hints for names that PyTorch or NumPy users type and execmode spells differently.

(PyTorch's keywords ``dim=``/``keepdim=`` are accepted by the functions themselves, beside
the Array API's ``axis=``/``keepdims=``; see ``functional.arguments._torch_axis``.)

:data:`MODULE_HINTS` and :data:`TENSOR_HINTS` map names that PyTorch or NumPy users type to
execmode's spelling; ``em.<name>`` and ``tensor.<name>`` raise an AttributeError that says
what to use instead (``em.bmm: use em.matmul, which batches``).
"""

from __future__ import annotations

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
    "sigmoid_": "in-place activations are not provided; use em.sigmoid(x)",
    "relu_": "in-place activations are not provided; use em.relu(x)",
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
    "logical_xor": "use em.not_equal on bool tensors",
    "nonzero_static": "use em.nonzero (its size depends on the values: a graph break)",
    "take": "use x.reshape(-1)[index] or em.take_along_axis",
    "zeros_": "use em.zeros_like(x) or x.zero_()",
}

# tensor.<name> that does not exist, but that a PyTorch or NumPy user types.
TENSOR_HINTS = {
    "bmm": "use x @ y (matmul batches)",
    "mm": "use x @ y",
    "mv": "use x @ y",
    "dot": "use x @ y for 1-D vectors",
    "numpy_": "use x.numpy()",
    "half": "float16 is not supported; use x.float() (float32)",
    "bfloat16": "bfloat16 is not supported; use x.float() (float32)",
    "is_contiguous": "layouts are NumPy's; x.contiguous() returns x",
    "storage": "storages are internal; use x.numpy()",
    "data_ptr": "storages are internal; use x.numpy()",
    "neg": "use -x",
    "amax": "use x.max(axis=...)",
    "amin": "use x.min(axis=...)",
}


def module_attribute_error(name: str) -> AttributeError:
    hint = MODULE_HINTS.get(name)
    if hint is not None:
        return AttributeError(f"em.{name}: {hint}")
    return AttributeError(f"execmode has no attribute {name!r}")


def tensor_attribute_error(name: str) -> AttributeError:
    hint = TENSOR_HINTS.get(name)
    if hint is not None:
        return AttributeError(f"Tensor.{name}: {hint}")
    return AttributeError(f"'Tensor' object has no attribute {name!r}")
