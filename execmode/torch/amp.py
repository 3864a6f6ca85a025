"""``torch.amp``: ``autocast`` and ``GradScaler``, correct on every device.

**autocast** runs the block in the precision its tensors already have. PyTorch computes
matmuls and convolutions in float16 or bfloat16 inside it; execmode has neither dtype
(``_dtypes.py``), so the block computes in float32: results are at least as precise as
PyTorch's and equal to the same program without autocast. It is a context manager and a
decorator, with PyTorch's arguments (``device_type``, ``dtype``, ``enabled``,
``cache_enabled``), and ``is_autocast_enabled()`` answers inside it.

**GradScaler** is the real algorithm (PyTorch's): ``scale(loss)`` multiplies by the scale
(a power of two, 65536 to start), ``unscale_(optimizer)`` divides the gradients back and
looks for inf/NaN, ``step`` skips the optimizer's step when it found one, ``update`` halves
the scale after such a step and doubles it after ``growth_interval`` clean ones. Scaling by
a power of two is exact in float32 (unless a gradient overflows, which is what it detects),
so with float32 gradients a scaled step equals the unscaled one. Looking for inf/NaN reads
one number per step: under ``em.jit`` that is a graph break. ``enabled=False`` makes every
method pass through, as in PyTorch; so does a scaler for ``device="cuda"`` (the default,
and ``torch.cuda.amp.GradScaler``'s) on a machine without a GPU, with PyTorch's warning.
``GradScaler("cpu")`` scales on the CPU, as PyTorch's does.
"""

from __future__ import annotations

import functools
import threading
import warnings

from .. import api as em
from ..backend import cuda_is_available
from ..errors import ArgumentError

_state = threading.local()


def is_autocast_enabled(device_type=None) -> bool:
    """Whether the code runs inside an enabled ``autocast`` block."""
    return getattr(_state, "depth", 0) > 0


class autocast:  # noqa: N801 - PyTorch's name
    """PyTorch's ``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``:
    a context manager (and decorator) inside which execmode keeps computing in float32
    (it has no float16/bfloat16): the results equal the same code without it."""

    def __init__(self, device_type="cuda", dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ArgumentError(f"autocast: device_type must be a string like 'cuda' or "
                                f"'cpu', got {device_type!r}")
        self.device_type = device_type
        self.fast_dtype = dtype
        self.enabled = bool(enabled)

    def __enter__(self):
        if self.enabled:
            _state.depth = getattr(_state, "depth", 0) + 1
        return self

    def __exit__(self, *exc):
        if self.enabled:
            _state.depth -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with autocast(self.device_type, self.fast_dtype, self.enabled):
                return fn(*args, **kwargs)

        return wrapper


class GradScaler:
    """PyTorch's ``GradScaler(device="cuda", init_scale=65536.0, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)``: dynamic loss scaling. See the
    module's docstring: exact in float32, skips steps whose gradients overflowed."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if growth_factor <= 1.0 or not 0.0 < backoff_factor < 1.0:
            raise ArgumentError("GradScaler: growth_factor must be > 1 and backoff_factor in "
                                "(0, 1)")
        self._enabled = bool(enabled)
        if self._enabled and str(device).startswith("cuda") and not cuda_is_available():
            # PyTorch's answer on a machine without a GPU: the same warning, disabled.
            warnings.warn("GradScaler is enabled, but CUDA is not available. Disabling.",
                          stacklevel=2)
            self._enabled = False
        self.device = str(device)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict] = {}

    def is_enabled(self) -> bool:
        """Whether the scaler scales (``enabled=``)."""
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """``outputs`` (a tensor, or lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, list | tuple):
            return type(outputs)(self.scale(o) for o in outputs)
        return outputs * self._scale

    def _state(self, optimizer) -> dict:
        return self._per_optimizer.setdefault(id(optimizer), {"unscaled": False,
                                                              "found_inf": False})

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place, and
        note whether any is inf or NaN (once per step; before clipping gradients)."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["unscaled"]:
            raise ArgumentError("unscale_() has already been called on this optimizer since "
                                "the last update()")
        inverse = 1.0 / self._scale
        bad = []
        with em.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad *= inverse
                    bad.append(em.any(em.logical_not(em.isfinite(p.grad))))
        state["found_inf"] = bool(em.any(em.stack(bad))) if bad else False
        state["unscaled"] = True

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless the gradients held inf or NaN (then skipped, and
        None returned). Unscales first if ``unscale_`` was not called."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        state = self._state(optimizer)
        if not state["unscaled"]:
            self.unscale_(optimizer)
        if state["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        """Adjust the scale for the next step: times ``backoff_factor`` after a step with
        inf/NaN, times ``growth_factor`` after ``growth_interval`` clean steps in a row (or
        set to ``new_scale``)."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        else:
            found_inf = any(s["found_inf"] for s in self._per_optimizer.values())
            if found_inf:
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer.clear()

    def state_dict(self) -> dict:
        """The scale and its schedule, for ``torch.save`` (empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what ``state_dict()`` returned."""
        if not self._enabled:
            return
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])


def is_autocast_available(device_type: str) -> bool:
    """autocast is accepted on every device ("cpu", "cuda")."""
    return device_type in ("cpu", "cuda")


__all__ = ["GradScaler", "autocast", "is_autocast_available", "is_autocast_enabled"]
