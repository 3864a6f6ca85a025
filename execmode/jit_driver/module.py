"""``em.jit(module)`` / ``torch.compile(model)``: a jitted module that is still the module.

Calling it traces and replays the module's forward like any jitted function; every other
attribute (``parameters()``, ``state_dict()``, ``train()``/``eval()``, ``zero_grad()``, its
layers) is the module's own, read live (``JitFunction.__getattr__``, as PyTorch's
``OptimizedModule`` delegates to ``_orig_mod``). The Python state a trace reads from the
module is guarded like a jitted function's globals (graph/guards.py, with
:func:`state_roots`): ``eval()`` (even on one submodule), a Dropout's ``p`` or a layer
replaced retraces. Its results backpropagate through a compiled backward graph
(backward.py), so ``loss = F.cross_entropy(model(x), y); loss.backward()`` outside trains.

Unlike PyTorch's, ``state_dict()`` keys carry no ``_orig_mod.`` prefix (the module's own
keys: a checkpoint loads into either), ``train()``/``eval()`` return the module, and
``isinstance(jitted, nn.Module)`` is False.
"""

from __future__ import annotations

import inspect


def state_roots(fn) -> tuple:
    """(the function whose code names the globals a trace reads, the objects whose Python
    state it reads besides them) for a jitted callable: a module's ``forward`` and the
    module; a bound method and its object; a function and nothing more."""
    if inspect.isfunction(fn):
        return fn, ()
    if inspect.ismethod(fn):
        return fn, (("self", fn.__self__),)
    if inspect.isbuiltin(fn) or not hasattr(fn, "__dict__"):
        return fn, ()
    code_fn = getattr(fn, "forward", None)
    if not inspect.ismethod(code_fn):
        call = inspect.getattr_static(type(fn), "__call__", None)
        code_fn = call.__get__(fn) if inspect.isfunction(call) else fn
    return code_fn, (("self", fn),)


def is_module(fn) -> bool:
    """An em.nn.Module (a jitted one delegates its attributes to it)."""
    from ..nn import Module

    return isinstance(fn, Module)


__all__ = ["is_module", "state_roots"]
