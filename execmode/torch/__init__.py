"""PyTorch's front end on execmode's engine: ``import execmode.torch as torch``.

    import execmode.torch as torch
    import execmode.torch.nn as nn
    import execmode.torch.nn.functional as F
    from execmode.torch.utils.data import DataLoader, TensorDataset

PyTorch's spellings and semantics where they differ from ``import execmode as em`` (the
Array API namespace): ``torch.max(x, dim)`` returns ``(values, indices)``, ``torch.transpose(x,
1, 2)`` swaps two axes, ``torch.var(x)`` divides by N - 1, ``torch.Tensor(data)`` makes a
float32 tensor, ``torch.long`` is int64, ``torch.manual_seed``, ``torch.Generator``,
``torch.randint(high, size)`` ... and the rest of ``em``'s functions under their own names.
Every tensor made here is an execmode ``Tensor``: the debugger, ``em.jit``, the passes and
the profiler see it as any other. ``torch.nn`` and ``torch.optim`` are execmode's nn and
optim; ``torch.utils.data``, ``torch.cuda``, ``torch.amp``, ``torch.backends``,
``torch.accelerator`` and ``torch.distributions`` live in this package.

Like ``execmode/__init__``, importing this package loads nothing: the first
``torch.<name>`` loads the engine (``_namespace.py``, where the names are defined) and copies
them onto the package (PEP 562). A name PyTorch has and execmode lacks says so
(``execmode/aliases.py``); docs/pytorch.md lists what is supported and what differs.
"""

from __future__ import annotations

import importlib as _importlib
import importlib.util as _importlib_util
import threading as _threading

__version__ = "2.5.0+execmode"  # the PyTorch API level the front end follows

_lock = _threading.RLock()
_loaded = False


def _load() -> None:
    """Import the namespace and put its public names onto the package (once)."""
    global _loaded, __all__
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        from . import _namespace

        names = list(_namespace.__all__)
        globals().update({name: getattr(_namespace, name) for name in names})
        __all__ = sorted(names)
        _loaded = True


def __getattr__(name: str):
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module 'execmode.torch' has no attribute {name!r}")
    if _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        # torch.nn, torch.cuda, torch.utils ...: imported on their own, without the engine.
        return _importlib.import_module(f"{__name__}.{name}")
    _load()
    namespace = globals()
    if name in namespace:
        return namespace[name]
    import sys

    from ..aliases import missing_attribute

    raise missing_attribute(__name__, name, sys.modules[__name__])


def __dir__() -> list[str]:
    _load()
    return sorted(globals())
