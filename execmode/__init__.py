"""execmode: a tensor engine with an eager and a graph mode, instrumented end to end.

    import execmode as em
    x = em.randn(64, 512)
    y = em.nn.functional.relu(x @ w)        # eager: runs now, recorded on the tape
    step = em.jit(train_step)               # graph: traced, optimized, compiled kernels

The core never imports Textual or CuPy at import time.

``import execmode`` itself loads nothing: the first ``em.<name>`` loads the engine
(``execmode/api.py``, where every public name is imported), as PEP 562 allows. The command
line and the TUI, which run no tensor code, import their own modules of the package and
start without NumPy or the engine; a script pays for the engine once, on its first name.
"""

from __future__ import annotations

import importlib as _importlib
import importlib.util as _importlib_util
import threading as _threading

__version__ = "0.1.0"
# The Python Array API standard's version this namespace follows (docs/array-api.md).
__array_api_version__ = "2024.12"
# The standard's one function with a dunder name: public, so the engine loads for it.
_PUBLIC_DUNDERS = ("__array_namespace_info__",)

# "absent" -> "loading" -> "loaded". Reentrant: while the engine loads, a placeholder read
# by the loading thread itself returns at once (_tensor.py reports the misuse).
_engine_lock = _threading.RLock()
_engine_state = "absent"


def _load_engine() -> None:
    """Import the engine and put its public names onto the package (once; thread-safe)."""
    global _engine_state, __all__
    if _engine_state == "loaded":
        return
    with _engine_lock:
        if _engine_state != "absent":  # loaded by another thread, or loading in this one
            return
        _engine_state = "loading"
        try:
            from . import api
        except BaseException:
            _engine_state = "absent"  # the next name asks again, and sees the same error
            raise
        names = [name for name in vars(api)
                 if not name.startswith("_") or name in _PUBLIC_DUNDERS]
        globals().update({name: getattr(api, name) for name in names})
        __all__ = sorted(names)
        _engine_state = "loaded"


def __getattr__(name: str):
    # __path__, __wrapped__ ...: no engine (the standard's public dunders excepted)
    if name.startswith("__") and name != "__all__" and name not in _PUBLIC_DUNDERS:
        raise AttributeError(f"module 'execmode' has no attribute {name!r}")
    if _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        # A submodule: ``from . import instrument`` inside the package asks for it here
        # first (the import system's hasattr), often while the engine is half imported, so
        # it must not load the engine. em.nn and em.random load only their own modules.
        # (No public name is also a submodule's name: importing the submodule would bind
        # it on the package over the public object. Hence _tensor.py, not tensor.py.)
        return _importlib.import_module(f"{__name__}.{name}")
    _load_engine()
    namespace = globals()
    if name in namespace:
        return namespace[name]
    # em.profile and em.compare live in the profilers package, imported on first use so
    # that `import execmode` stays light.
    if name == "profile":
        from .profilers.api import profile

        return profile
    if name == "compare":
        from .profilers.compare import compare

        return compare
    from .aliases import module_attribute_error

    # em.foo says so; a name PyTorch or NumPy users type says what to use instead.
    raise module_attribute_error(name)


def __dir__() -> list[str]:
    _load_engine()
    return sorted(globals())
