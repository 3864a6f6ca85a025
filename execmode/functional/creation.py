"""Creation: new tensors from data, fill values, ranges and the seeded generator, and
the conversions to another dtype or device (``asarray`` is one of those or ``tensor``)."""

from __future__ import annotations

import builtins

import numpy as np

from .._tensor import Tensor
from ..backend import cuda_problem, cupy_module
from ..dispatch import apply, current_tracer
from ..dtypes import DEFAULT_COMPLEX, DEFAULT_FLOAT, int64
from ..errors import ArgumentError, ArgumentValueError, DeviceError, DTypeError
from ..op_errors import op_error
from ..ops import OPS
from ..symbolic_sizes import SymInt
from .arguments import (
    _bool_arg,
    _device_arg,
    _dtype_arg,
    _dtype_of_data,
    _int_arg,
    _is_int,
    _number_arg,
    _require_tensor,
    _shape_arg,
    _tensor_arg,
    constant,
)


def _sizes_arg(shape, op: str) -> tuple:
    """``_shape_arg``'s shape with the symbolic sizes kept (``em.ones(t + 1)`` under jit
    keeps ``t``'s symbol, so one graph serves every size, symbolic_sizes.py). The sign
    test of a symbolic size is recorded, so a size where it turns negative traces again
    and raises the error eager raises."""
    out = _shape_arg(shape, op)
    given = shape[0] if len(shape) == 1 and not _is_int(shape[0]) else shape
    given = (given,) if _is_int(given) else tuple(given)
    if not builtins.any(isinstance(d, SymInt) for d in given):
        return out
    kept = tuple(g if isinstance(g, SymInt) else d for g, d in zip(given, out))
    for d in kept:
        if isinstance(d, SymInt) and d < 0:  # (the comparison is recorded)
            raise op_error(ArgumentError, op, (), f"negative dimension in shape {out}")
    return kept


def _size_int(op: str, name: str, v) -> int:
    """``_int_arg``, keeping a symbolic size as it is (``em.eye(t)``)."""
    if isinstance(v, SymInt):
        return v
    return _int_arg(op, name, v)


def _finish(t: Tensor, requires_grad: bool, op: str = "tensor") -> Tensor:
    if _bool_arg(op, "requires_grad", requires_grad):
        if t.dtype.kind not in "fc":
            raise op_error(ArgumentError, op, (t,),
                           "only floating-point and complex tensors can require gradients")
        t.requires_grad_(True)
    return t


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, NumPy arrays, numbers, or an
    array in GPU memory: CuPy, a CUDA torch tensor, anything with
    ``__cuda_array_interface__``, copied on its GPU).

    Floats default to float32 and ints to int64, as in PyTorch.
    """
    if isinstance(data, Tensor):
        data = data.numpy()
    elif hasattr(data, "__cuda_array_interface__"):  # CuPy, a CUDA torch tensor, Numba
        return _finish(_from_cuda_array(data, dtype, device), requires_grad)
    try:
        dt = _dtype_arg("tensor", dtype) if dtype is not None else _dtype_of_data("tensor", data)
        value = np.array(data, dtype=dt)
    except OverflowError as exc:  # em.asarray([-1], dtype=em.uint8)
        raise op_error(ArgumentValueError, "tensor", (data,), f"{exc}") from None
    except (ValueError, TypeError) as exc:
        if isinstance(exc, DTypeError):
            raise
        raise op_error(ArgumentError, "tensor", (data,),
                       f"cannot make a tensor from this {type(data).__name__}: {exc}") from None
    return _finish(constant(value, dt, _device_arg("tensor", device)), requires_grad)


def _from_cuda_array(data, dtype, device) -> Tensor:
    """A copy of an array in GPU memory, made on the GPU: on its own device unless
    ``device`` says otherwise (``torch.as_tensor``'s rule)."""
    cp = cupy_module()
    if cp is None:
        raise op_error(DeviceError, "tensor", (data,),
                       f"this {type(data).__name__} is in GPU memory: {cuda_problem()}")
    arr = cp.asarray(data)
    dt = _dtype_arg("tensor", dtype) if dtype is not None else _dtype_of_data("tensor", arr)
    target = _device_arg("tensor", device if device is not None else f"cuda:{arr.device.id}")
    if target == "cpu" or current_tracer() is not None:
        # A traced constant is host data in the graph, as every other literal is.
        arr = cp.asnumpy(arr)
    return constant(arr, dt, target)


def asarray(data, dtype=None, device=None, copy=None) -> Tensor:
    """``data`` as a tensor. ``copy`` as the Array API's: None copies only when it must
    (a tensor of that dtype and device comes back as itself); True always copies; False
    never does, and raises ``ValueError`` (ArgumentError) where it would have to: for
    anything that is not already such a tensor."""
    if copy is not None and not isinstance(copy, bool):
        raise op_error(ArgumentError, "asarray", (data,), f"copy must be a bool or None, "
                       f"got {copy!r}")
    if isinstance(data, Tensor):
        out = data
        if dtype is not None:
            out = astype(out, dtype, copy=False)
        if device is not None:
            out = to_device(out, device)
        if out is data and copy:
            out = apply(OPS["copy"], data)
        elif out is not data and copy is False:
            raise op_error(ArgumentValueError, "asarray", (data,),
                           f"copy=False, but making it {out.dtype} on {out.device} copies it")
        return out
    if copy is False:
        raise op_error(ArgumentValueError, "asarray", (data,),
                       f"copy=False, but a {type(data).__name__} is copied into a tensor")
    return tensor(data, dtype=dtype, device=device)


def from_dlpack(x, /, *, device=None, copy=None) -> Tensor:
    """A tensor over the memory of ``x``, any object with ``__dlpack__`` (a NumPy array, a
    torch tensor, a CuPy array, another execmode tensor): shared unless ``copy`` is True
    or ``device`` asks for another place (then copied there; ``copy=False`` then raises)."""
    if not hasattr(x, "__dlpack__"):
        raise op_error(ArgumentError, "from_dlpack", (x,),
                       f"a {type(x).__name__} has no __dlpack__")
    on_gpu = hasattr(x, "__dlpack_device__") and x.__dlpack_device__()[0] != 1  # 1: CPU
    if on_gpu:
        cp = cupy_module()
        if cp is None:
            raise op_error(DeviceError, "from_dlpack", (x,),
                           f"this {type(x).__name__} is in GPU memory: {cuda_problem()}")
        arr = cp.from_dlpack(x)
        here = f"cuda:{arr.device.id}"
    else:
        arr, here = np.from_dlpack(x), "cpu"
    target = here if device is None else _device_arg("from_dlpack", device)
    if copy is False and target != here:
        raise op_error(ArgumentValueError, "from_dlpack", (x,),
                       f"copy=False, but the data is on {here}, not {target}")
    dt = _dtype_arg("from_dlpack", arr.dtype, (x,))  # a dtype execmode has, or DTypeError
    if target != here or copy or current_tracer() is not None:
        # a copy: asked for, on another device, or a literal of the traced graph
        out = constant(arr.copy() if copy else arr, dt, here)
        return out if target == here else to_device(out, target)
    shared = Tensor.__new__(Tensor)  # the array itself, as torch.from_numpy shares it
    shared._data = arr
    shared.requires_grad = False
    return shared


def full(shape, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    shape = _sizes_arg((shape,), "full")
    if isinstance(fill_value, complex | np.complexfloating):  # complex64 without a dtype
        fill_value = complex(fill_value)
    else:
        fill_value = _number_arg("full", "fill_value", fill_value)
    dt = _dtype_arg("full", dtype) if dtype is not None else _dtype_of_data("full", fill_value)
    t = apply(OPS["full"], shape=shape, value=fill_value, dtype=dt,
              device=_device_arg("full", device))
    return _finish(t, requires_grad, "full")


def zeros(shape, *more, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ``shape`` (one tuple, the Array API's, or ints, PyTorch's) filled with
    zeros, float32 unless ``dtype`` says otherwise."""
    return full(_sizes_arg((shape, *more), "zeros"), 0, dtype=dtype or DEFAULT_FLOAT, device=device,
                requires_grad=requires_grad)


def ones(shape, *more, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ``shape`` (one tuple, the Array API's, or ints, PyTorch's) filled with
    ones, float32 unless ``dtype`` says otherwise."""
    return full(_sizes_arg((shape, *more), "ones"), 1, dtype=dtype or DEFAULT_FLOAT, device=device,
                requires_grad=requires_grad)


def full_like(x, fill_value, dtype=None, device=None) -> Tensor:
    x = _require_tensor("full_like", x)
    return full(x.shape, fill_value, dtype=x.dtype if dtype is None else dtype,
                device=x.device if device is None else device)


def zeros_like(x, dtype=None, device=None) -> Tensor:
    return full_like(x, 0, dtype=dtype, device=device)


def ones_like(x, dtype=None, device=None) -> Tensor:
    return full_like(x, 1, dtype=dtype, device=device)


def arange(start, stop=None, step=1, dtype=None, device=None) -> Tensor:
    """Evenly spaced values in [start, stop). Int arguments give int64, floats float32."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_number_arg("arange", name, v) for name, v in
                         (("start", start), ("stop", stop), ("step", step)))
    if dtype is None:
        all_int = builtins.all(isinstance(v, int | np.integer) for v in (start, stop, step))
        dt = int64 if all_int else DEFAULT_FLOAT
    else:
        dt = _dtype_arg("arange", dtype)
    if step == 0:
        raise op_error(ArgumentError, "arange", (start, stop, step), "step must not be zero")
    return apply(OPS["arange"], start=start, stop=stop, step=step, dtype=dt,
                 device=_device_arg("arange", device))


def _linspace_end(name: str, value):
    if isinstance(value, complex | np.complexfloating):  # the standard's complex linspace
        return complex(value)
    return float(_number_arg("linspace", name, value))


def linspace(start, stop, num=50, endpoint=True, dtype=None, device=None) -> Tensor:
    start = _linspace_end("start", start)
    stop = _linspace_end("stop", stop)
    if dtype is None:
        dtype = DEFAULT_COMPLEX if complex in (type(start), type(stop)) else DEFAULT_FLOAT
    num = _int_arg("linspace", "num", num)
    if num < 0:
        raise op_error(ArgumentError, "linspace", (), f"num must be >= 0, got {num}")
    return apply(OPS["linspace"], start=start, stop=stop, num=num,
                 endpoint=_bool_arg("linspace", "endpoint", endpoint),
                 dtype=_dtype_arg("linspace", dtype), device=_device_arg("linspace", device))


def eye(n, m=None, k=0, dtype=None, device=None) -> Tensor:
    n = _size_int("eye", "n", n)
    m = n if m is None else _size_int("eye", "m", m)
    if n < 0 or m < 0:
        raise op_error(ArgumentError, "eye", (), f"negative size {n} x {m}")
    return apply(OPS["eye"], n=n, m=m, k=_int_arg("eye", "k", k),
                 dtype=_dtype_arg("eye", dtype or DEFAULT_FLOAT), device=_device_arg("eye", device))


def _random(op_name, shape, dtype, device, requires_grad, **params):
    shape = _sizes_arg((shape,), op_name)
    t = apply(OPS[op_name], shape=shape, dtype=_dtype_arg(op_name, dtype or DEFAULT_FLOAT),
              device=_device_arg(op_name, device), **params)
    return _finish(t, requires_grad, op_name)


def randn(*shape, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples from execmode's seeded generator."""
    return _random("random_normal", _sizes_arg(shape, "randn"), dtype, device, requires_grad,
                   mean=0.0, std=1.0)


def astype(x, dtype, copy=True, device=None) -> Tensor:
    """``x`` as ``dtype`` (and on ``device`` when given). A new tensor unless ``copy`` is
    False and ``x`` already has that dtype and device (the Array API's rule; NumPy's
    ``astype`` copies by default too); the engine's own casts pass ``copy=False``."""
    x = _tensor_arg("astype", x)
    dt = _dtype_arg("astype", dtype, (x,))
    out = x if x.dtype == dt else apply(OPS["cast"], x, dtype=dt)
    if device is not None:
        out = to_device(out, device)
    if out is x and _bool_arg("astype", "copy", copy):
        out = apply(OPS["copy"], x)
    return out


def to_device(x, device, /, *, stream=None) -> Tensor:
    """``x`` on ``device`` (itself when it is there). ``stream`` is the Array API's: only
    None is taken (execmode copies on the current CUDA stream)."""
    x = _tensor_arg("to_device", x)
    if stream is not None:
        raise op_error(ArgumentError, "to_device", (x,), "only stream=None is supported")
    dev = _device_arg("to_device", device, (x,))
    if x.device == dev:
        return x
    return apply(OPS["to_device"], x, device=dev)


def multinomial(probs, num_samples, replacement=False):
    """Indices drawn from each row of (unnormalised) probabilities, on execmode's seeded
    generator: the same draws eagerly and under jit for the same seed."""
    probs = _require_tensor("multinomial", probs)
    num_samples = _int_arg("multinomial", "num_samples", num_samples, (probs,))
    replacement = _bool_arg("multinomial", "replacement", replacement, (probs,))
    if num_samples <= 0:
        raise op_error(ArgumentError, "multinomial", (probs,),
                       f"num_samples must be > 0, got {num_samples}")
    return apply(OPS["random_multinomial"], probs, num_samples=num_samples,
                 replacement=replacement)
