"""PyTorch's Tensor methods with bodies of their own (``x.view``, ``x.max(dim)``, in-place
draws, ``mm``/``bmm``/``mv``/``dot`` ...), beside the Array API's."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from .. import functional as F
from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..functional.reductions import norm_root
from ..nn import functional as NF
from ..op_errors import op_error
from .builders import _named

_TORCH_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor",
                     "int32": "IntTensor", "bool": "BoolTensor"}


def _torch_type_name(dtype, device) -> str:
    prefix = "torch.cuda." if device.is_cuda else "torch."
    return prefix + _TORCH_TYPE_NAMES[str(dtype)]


def _dtype_of_type_name(name: str):
    """``"torch.LongTensor"`` (or ``"torch.cuda.LongTensor"``) -> int64."""
    short = name.rsplit(".", 1)[-1]
    for dtype, tensor_name in _TORCH_TYPE_NAMES.items():
        if short == tensor_name:
            return getattr(dtypes, dtype if dtype != "bool" else "bool_")
    raise ArgumentError(f"type({name!r}): not a tensor type execmode has; use one of "
                        + ", ".join(f"'torch.{n}'" for n in _TORCH_TYPE_NAMES.values()))


def _var_or_std(fn, x, dim, unbiased, keepdim, correction, array_api):
    """x.var()/x.std(): PyTorch's default (N - 1) in PyTorch's spelling (no axis, a
    positional or ``dim=``); the Array API's (N) with ``axis=``/``keepdims=``, as em.var."""
    if array_api:
        extra = set(array_api) - {"axis", "keepdims"}
        if extra:
            raise ArgumentError(f"{fn.__name__}: unexpected keyword argument {extra.pop()!r}")
        if dim is not None or unbiased is not None or keepdim:
            raise ArgumentError(f"{fn.__name__}: give axis=/keepdims= (the Array API's) or "
                                "dim/unbiased/keepdim (PyTorch's), not both")
        return fn(x, axis=array_api.get("axis"), keepdims=array_api.get("keepdims", False),
                  correction=correction)
    if isinstance(unbiased, bool):
        if correction is not None:
            raise ArgumentError(f"{fn.__name__}: got both unbiased and correction; give one")
        correction = int(unbiased)
    return fn(x, axis=dim, keepdims=keepdim, correction=1 if correction is None else correction)


class _PyTorchMethods:
    """PyTorch's tensor methods that the Array API has no spelling for: in-place updates
    (``x.add_(y)``, ``x.masked_fill_(m, v)``: writes through :func:`execmode.assign`, so
    they are assign nodes under jit), ``type``, ``new_*``, ``view_as`` and ``var``/``std``
    with PyTorch's default."""

    def view_as(self, other):
        """PyTorch's ``view_as``: ``view`` to ``other``'s shape."""
        return F.reshape(self, other.shape)

    def type(self, dtype=None, non_blocking=False):
        """PyTorch's ``type``: without an argument, the type's name (``'torch.FloatTensor'``);
        with a dtype (or such a name), the tensor cast to it."""
        if dtype is None:
            return _torch_type_name(self.dtype, self.device)
        if isinstance(dtype, str) and dtype.startswith("torch."):
            dtype = _dtype_of_type_name(dtype)
        return F.astype(self, dtype, copy=False)

    def type_as(self, other):
        """Cast to ``other``'s dtype (PyTorch's ``type_as``)."""
        return F.astype(self, other.dtype, copy=False)

    def nelement(self) -> int:
        """The number of elements (PyTorch's alias of ``numel()``)."""
        return int(self.size)

    def ndimension(self) -> int:
        """The rank (PyTorch's alias of ``dim()``)."""
        return self.ndim

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the layout is C-contiguous (what ``contiguous()`` would keep)."""
        data = self._data
        flags = getattr(getattr(data, "proxy", data), "flags", None)
        return flags is None or bool(flags.c_contiguous)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """Zeros of ``size`` with this tensor's dtype and device unless given."""
        return self.new_full(F.arguments._shape_arg(size, "new_zeros"), 0, dtype=dtype,
                             device=device, requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return self.new_full(F.arguments._shape_arg(size, "new_ones"), 1, dtype=dtype,
                             device=device, requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """Like ``new_zeros`` (execmode's new tensors are always initialised)."""
        return self.new_full(F.arguments._shape_arg(size, "new_empty"), 0, dtype=dtype,
                             device=device, requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        return F.full(size, fill_value, dtype=self.dtype if dtype is None else dtype,
                      device=self.device if device is None else device,
                      requires_grad=requires_grad)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        return F.tensor(data, dtype=self.dtype if dtype is None else dtype,
                        device=self.device if device is None else device,
                        requires_grad=requires_grad)

    def cuda(self, device=None, non_blocking=False):
        """A copy on the GPU (``"cuda"`` or ``"cuda:N"``); a DeviceError that says why
        where there is none."""
        target = "cuda" if device is None else (
            f"cuda:{device}" if isinstance(device, int) else device)
        return F.to_device(self, target)

    def pin_memory(self, device=None):
        """The tensor itself: execmode has no pinned host memory (a later ``.to("cuda")``
        copies from ordinary memory)."""
        return self

    @property
    def is_cuda(self) -> bool:
        return self.device.is_cuda

    def get_device(self) -> int:
        """The GPU's index, or -1 on the CPU (PyTorch's answer)."""
        return self.device.index if self.device.is_cuda else -1

    def add(self, other, *, alpha=1):
        """``x + alpha * other`` (PyTorch's ``add``)."""
        return self + (other if alpha == 1 else other * alpha)

    def sub(self, other, *, alpha=1):
        """``x - alpha * other`` (PyTorch's ``sub``)."""
        return self - (other if alpha == 1 else other * alpha)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, **array_api):
        """Variance. In PyTorch's spelling (``x.var()``, ``x.var(1)``, ``dim=``) PyTorch's
        default, dividing by N - 1; with ``axis=``/``keepdims=`` the Array API's, N (as
        :func:`execmode.var`). ``correction=`` or ``unbiased=`` always win."""
        return _var_or_std(F.var, self, dim, unbiased, keepdim, correction, array_api)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, **array_api):
        """Standard deviation, with the same defaults as :meth:`var`."""
        return _var_or_std(F.std, self, dim, unbiased, keepdim, correction, array_api)

    def unbind(self, dim=0):
        """The slices along ``dim``, as a tuple (each without that axis)."""
        axis = F.normalize_axis_for("unbind", self, dim)
        return tuple(self[(slice(None),) * axis + (i,)] for i in range(self.shape[axis]))

    def narrow(self, dim, start, length):
        """The slice ``start : start + length`` along ``dim`` (a view)."""
        axis = F.normalize_axis_for("narrow", self, dim)
        start = start + self.shape[axis] if start < 0 else start
        return self[(slice(None),) * axis + (slice(start, start + length),)]

    def lerp(self, end, weight):
        """``x + weight * (end - x)``."""
        return self + weight * (end - self)

    # --- in place: each writes the out-of-place result back with assign -----------------
    def lerp_(self, end, weight):
        """``lerp`` written into this tensor (an exponential moving average's update)."""
        return F.assign(self, self.lerp(end, weight))

    def addcmul_(self, tensor1, tensor2, *, value=1):
        """``x += value * tensor1 * tensor2`` (optimizers' moment updates)."""
        return F.assign(self, self + value * tensor1 * tensor2)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        """``x += value * tensor1 / tensor2`` (Adam's parameter update)."""
        return F.assign(self, self + value * tensor1 / tensor2)

    def clamp_min_(self, min):  # noqa: A002
        return F.assign(self, F.clamp(self, min=min))

    def clamp_max_(self, max):  # noqa: A002
        return F.assign(self, F.clamp(self, max=max))

    def index_fill_(self, dim, index, value):
        """Write ``value`` into the slices at ``index`` along ``dim``."""
        axis = F.normalize_axis_for("index_fill_", self, dim)
        self[(slice(None),) * axis + (index,)] = value
        return self

    def bernoulli_(self, p=0.5, *, generator=None):
        """Overwrite with 1 (probability ``p``, a number or a tensor) or 0, drawn from
        execmode's seeded generator."""
        _no_generator("bernoulli_", generator)
        u = F._random("random_uniform", self.shape, dtypes.float64, self.device, False,
                      low=0.0, high=1.0)
        return F.assign(self, F.astype(F.less(u, p), self.dtype))

    def fill_(self, value):
        """Write ``value`` (a number or a 0-d tensor) into every element."""
        if isinstance(value, Tensor):
            return F.assign(self, F.astype(F.broadcast_to(value, self.shape), self.dtype))
        return F.assign(self, F.full_like(self, value))

    def copy_(self, src, non_blocking=False):
        """Write ``src`` (broadcast, cast to this dtype and device) into this tensor."""
        src = src if isinstance(src, Tensor) else F.tensor(src)
        return F.assign(self, F.to_device(F.astype(src, self.dtype), self.device))

    def add_(self, other, *, alpha=1):
        return F.assign(self, self.add(other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        return F.assign(self, self.sub(other, alpha=alpha))

    def mul_(self, other):
        return F.assign(self, self * other)

    def div_(self, other):
        return F.assign(self, self / other)

    def clamp_(self, min=None, max=None):  # noqa: A002 - PyTorch's names
        return F.assign(self, F.clamp(self, min, max))

    def masked_fill_(self, mask, value):
        """``masked_fill`` written into this tensor."""
        return F.assign(self, F.masked_fill(self, mask, value))

    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        """``scatter`` written into this tensor."""
        return F.assign(self, F.scatter(self, dim, index, src, value, reduce=reduce))

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """Overwrite with samples of N(mean, std^2) from execmode's seeded generator."""
        _no_generator("normal_", generator)
        drawn = F._random("random_normal", self.shape, self.dtype, self.device, False,
                          mean=float(mean), std=float(std))
        return F.assign(self, drawn)

    def uniform_(self, a=0.0, b=1.0, *, generator=None):
        """Overwrite with samples of U[a, b) from execmode's seeded generator."""
        _no_generator("uniform_", generator)
        drawn = F._random("random_uniform", self.shape, self.dtype, self.device, False,
                          low=float(a), high=float(b))
        return F.assign(self, drawn)

    # --- PyTorch's reductions, selections and elementwise spellings -----------------------
    def matmul(self, other):
        """``self @ other``."""
        return F.matmul(self, other)

    def amax(self, dim=(), keepdim=False):
        """The largest value over ``dim`` (every axis when ``()``), without indices."""
        return F.max(self, axis=None if dim in ((), None) else dim, keepdims=keepdim)

    def amin(self, dim=(), keepdim=False):
        """The smallest value over ``dim`` (every axis when ``()``), without indices."""
        return F.min(self, axis=None if dim in ((), None) else dim, keepdims=keepdim)

    def logsumexp(self, dim, keepdim=False):
        """``log(sum(exp(x), dim))``, computed stably."""
        return NF.logsumexp(self, dim, keepdim=keepdim)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """The p-norm over ``dim`` (every element when None): 2 or "fro", 1, inf, -inf, or
        any positive number."""

        x = self if dtype is None else F.astype(self, dtype, copy=False)
        axis = tuple(dim) if isinstance(dim, list | tuple) else dim
        if p in ("fro", 2, 2.0):
            return norm_root(F.sum(x * x, axis=axis, keepdims=keepdim), 2)
        if p in (1, 1.0):
            return F.sum(F.abs(x), axis=axis, keepdims=keepdim)
        if p == float("inf"):
            return F.max(F.abs(x), axis=axis, keepdims=keepdim)
        if p == float("-inf"):
            return F.min(F.abs(x), axis=axis, keepdims=keepdim)
        if isinstance(p, int | float) and p > 0:
            return norm_root(F.sum(F.abs(x) ** p, axis=axis, keepdims=keepdim), p)
        raise op_error(ArgumentError, "norm", (self,), f"p={p!r} is not supported (2, "
                       "'fro', 1, inf, -inf or a positive number)")

    def isnan(self):
        """Where the elements are NaN."""
        return F.isnan(self)

    def isinf(self):
        """Where the elements are +-inf."""
        return F.isinf(self)

    def isfinite(self):
        """Where the elements are neither NaN nor +-inf."""
        return F.isfinite(self)

    def nonzero(self, *, as_tuple=False):
        """The indices of the non-zero elements, one row each (``(N, ndim)`` int64), or
        one index tensor per axis with ``as_tuple=True`` (the count depends on values)."""
        return F.nonzero(self) if as_tuple else F.argwhere(self)

    def masked_select(self, mask):
        """The elements where ``mask`` (broadcast) holds, as a 1-D tensor."""
        shape = np.broadcast_shapes(tuple(self.shape), tuple(mask.shape))
        return F.broadcast_to(self, shape)[F.broadcast_to(mask, shape)]

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
        """The distinct values, sorted (PyTorch's ``unique``; with ``return_inverse`` /
        ``return_counts`` also the index of each element's value and each value's count).
        Its size depends on the values: under em.jit it is a graph break."""
        if dim is not None:
            raise op_error(ArgumentError, "unique", (self,), "dim= is not supported; "
                           "unique over every element is")
        values, inverse, counts = np.unique(self.numpy(), return_inverse=True,
                                            return_counts=True)
        out = [F.to_device(F.tensor(values), self.device)]
        if return_inverse:
            out.append(F.to_device(F.tensor(inverse.reshape(self.shape).astype(np.int64)),
                                   self.device))
        if return_counts:
            out.append(F.to_device(F.tensor(counts.astype(np.int64)), self.device))
        return out[0] if len(out) == 1 else tuple(out)

    def cumprod(self, dim):
        """Running products along ``dim`` (one multiply per position: differentiable at
        zeros too, as PyTorch's)."""
        axis = F.normalize_axis_for("cumprod", self, dim)
        slices = self.unbind(axis)
        out = [slices[0]] if slices else []
        for x in slices[1:]:
            out.append(out[-1] * x)
        return F.stack(out, axis=axis) if out else self

    def trunc(self):
        """Round toward zero."""
        return F.sign(self) * F.floor(F.abs(self))

    def fmod(self, other):
        """The remainder with the sign of the dividend (C's fmod; ``remainder`` takes the
        divisor's sign)."""
        if not (self.dtype.kind == "f" or isinstance(other, float) or
                isinstance(other, Tensor) and other.dtype.kind == "f"):
            q = F.floor_divide(F.abs(self), F.abs(other))
            return self - F.sign(self) * q * F.abs(other)
        return self - other * (self / other).trunc()

    def diag(self, diagonal=0):
        """A 1-D tensor's square diagonal matrix, or a 2-D tensor's main diagonal."""
        if diagonal != 0:
            raise op_error(ArgumentError, "diag", (self,), "diagonal= other than 0 is not "
                           "supported")
        if self.ndim == 1:
            n = self.shape[0]
            return F.eye(n, dtype=self.dtype, device=self.device) * self
        if self.ndim == 2:
            k = min(self.shape)
            square = self[:k, :k]
            eye = F.eye(k, dtype=self.dtype, device=self.device)
            return F.sum(square * eye, axis=1)
        raise op_error(ShapeError, "diag", (self,), "expects a 1-D or 2-D tensor")

    def trace(self):
        """The sum of a matrix's main diagonal."""
        if self.ndim != 2:
            raise op_error(ShapeError, "trace", (self,), "expects a 2-D tensor")
        return F.sum(self.diag())

    def diff(self, n=1, dim=-1):
        """Differences of neighbours along ``dim``, ``n`` times."""
        axis = F.normalize_axis_for("diff", self, dim)
        out = self
        for _ in range(n):
            head = (slice(None),) * axis
            out = out[head + (slice(1, None),)] - out[head + (slice(None, -1),)]
        return out

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """NaN -> ``nan``, +inf -> ``posinf``, -inf -> ``neginf`` (the dtype's largest and
        lowest finite values by default)."""
        info = np.finfo(np.dtype(self.dtype.name)) if self.dtype.kind == "f" else None
        if info is None:
            return self
        hi = float(info.max) if posinf is None else posinf
        lo = float(info.min) if neginf is None else neginf
        out = F.where(F.isnan(self), F.full_like(self, nan), self)
        out = F.where(F.logical_and(F.isinf(out), out > 0), F.full_like(self, hi), out)
        return F.where(F.logical_and(F.isinf(out), out < 0), F.full_like(self, lo), out)

    def atan(self):
        """The arc tangent: Cephes' atanf (range reduction and a polynomial, ~1e-7), then
        one Newton step on tan(y) = x with em's sin and cos (float64's accuracy; its
        gradient is 1 / (1 + x^2) to rounding). Past |x| = 1e4 the first guess is kept."""
        x = self if self.dtype.kind == "f" else F.astype(self, dtypes.float32)
        a = F.abs(x)
        big, mid = a > 2.414213562373095, a > 0.4142135623730950
        base = F.where(big, F.full_like(a, np.pi / 2),
                       F.where(mid, F.full_like(a, np.pi / 4), F.zeros_like(a)))
        r = F.where(big, -1.0 / F.maximum(a, 1e-30),
                    F.where(mid, (a - 1.0) / (a + 1.0), a))
        z = r * r
        poly = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z
                - 3.33329491539e-1) * z * r + r
        y = F.sign(x) * (base + poly)
        cos = F.cos(y)
        newton = y - (F.sin(y) - x * cos) * cos
        return F.where(a < 1e4, newton, y)

    def atan2(self, other):
        """The angle of the point (other, self): ``atan(self / other)`` put in its
        quadrant (PyTorch's ``atan2(input, other)``; 0 at the origin)."""
        y, x = self, other
        safe = F.where(x == 0, F.ones_like(x), x)
        angle = (y / safe).atan()
        pi = F.full_like(angle, np.pi)
        angle = F.where(x < 0, F.where(y < 0, angle - pi, angle + pi), angle)
        on_axis = F.sign(y) * (np.pi / 2)
        return F.where(x == 0, F.where(y == 0, F.zeros_like(angle), on_axis + 0 * angle),
                       angle)

    def scatter_add_(self, dim, index, src):
        """``scatter_add`` written into this tensor."""
        return F.assign(self, F.scatter_add(self, dim, index, src))

    def index_add_(self, dim, index, source, *, alpha=1):
        """``index_add`` written into this tensor."""
        return F.assign(self, F.index_add(self, dim, index, source, alpha=alpha))



def _matrix_product(name, ranks):
    def method(self, other):
        if (self.ndim, other.ndim) != ranks:
            raise op_error(ShapeError, name, (self, other),
                           f"{name} needs ranks {ranks}; x @ y batches and broadcasts")
        if name == "bmm" and self.shape[0] != other.shape[0]:
            raise op_error(ShapeError, name, (self, other), "the batch sizes differ")
        return F.matmul(self, other)
    return _named(method, name, f"PyTorch's ``{name}``: ``x @ other`` for ranks {ranks}.")


for _name, _ranks in (("mm", (2, 2)), ("bmm", (3, 3)), ("mv", (2, 1)), ("dot", (1, 1))):
    setattr(_PyTorchMethods, _name, _matrix_product(_name, _ranks))


def _no_generator(name, generator):
    if generator is not None:
        raise ArgumentError(f"{name}(generator=...): in-place draws use execmode's one "
                            "generator; seed it with torch.manual_seed / em.random.seed")
