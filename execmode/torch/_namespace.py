"""The names of ``import execmode.torch as torch``: ``em``'s functions, with PyTorch's
spellings and semantics laid over them where the two differ.

Loaded on the first ``torch.<name>`` (``execmode/torch/__init__.py``), which loads the
engine. The layers, bottom up: every public function of ``em`` (``execmode/api.py``), then
``_dtypes`` (``torch.long`` ...), ``_tensor_type`` (``torch.Tensor``, ``torch.device``),
``_random`` (``manual_seed``, ``Generator``, ``randint(high, size)`` ...), ``_functions``
(``transpose(x, 1, 2)``, ``sort``, ``var`` ...), ``_serialization`` (``save``/``load``) and
the submodules a program reaches as attributes (``torch.nn``, ``torch.cuda`` ...).
"""

from __future__ import annotations

import types

from .. import api as _api
from . import _composites, _dtypes, _functions, _random, _serialization, _tensor_type
from .amp import autocast, is_autocast_enabled


def compile(model=None, *, fullgraph=False, dynamic=None, backend=None, mode=None,  # noqa: A001
            options=None, disable=False):
    """PyTorch's ``torch.compile``: ``em.jit`` (execmode's graph mode) on a function or a
    module, as a call or a decorator (``@torch.compile``, ``@torch.compile(fullgraph=True)``).
    ``fullgraph=True`` makes a graph break an error; ``dynamic`` is em.jit's. ``backend``
    and ``mode`` name PyTorch's compilers and are accepted (execmode has one: C kernels on
    the CPU, CUDA through CuPy), except em.jit's own backends ("c", "interpreter",
    "numpy"), which are passed on. ``disable=True`` returns ``model`` unchanged."""
    def wrap(fn):
        if disable:
            return fn
        ours = backend if backend in ("c", "interpreter", "numpy") else None
        return _api.jit(fn, fullgraph=fullgraph, dynamic=dynamic, backend=ours)

    return wrap if model is None else wrap(model)


# em's public functions and classes (not its submodules: torch.nn is not em.nn's module)
_engine = {name: value for name, value in vars(_api).items()
           if not name.startswith("_") and not isinstance(value, types.ModuleType)}
# em names whose PyTorch meaning is another object here.
for _name in ("jit", "random", "Device"):
    _engine.pop(_name, None)

_overrides = {}
for _module in (_dtypes, _tensor_type, _random, _functions, _composites, _serialization):
    _overrides.update({name: getattr(_module, name) for name in _module.__all__})
_overrides.update(compile=compile, autocast=autocast, is_autocast_enabled=is_autocast_enabled,
                  default_generator=_random.default_generator)

globals().update(_engine)
globals().update(_overrides)

__all__ = sorted(set(_engine) | set(_overrides))
