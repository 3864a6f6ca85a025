"""``torch.jit``: TorchScript is not part of execmode. ``script`` and ``trace`` return the
function (or module) as it is, so programs that decorate helpers with
``@torch.jit.script`` run, eagerly and with the same results; for graph mode use
``torch.compile`` (``em.jit``). ``is_scripting()``/``is_tracing()`` answer False, as they
do in eager PyTorch. ``torch.jit.save``/``load`` are refused (a scripted module is code)."""

from __future__ import annotations

from ..errors import ArgumentError


def script(obj=None, *args, **kwargs):
    """Returns ``obj`` unchanged (it runs eagerly); use ``torch.compile`` for graph mode."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """Returns ``func`` unchanged (it runs eagerly); use ``torch.compile`` for graph mode."""
    return func


def ignore(fn=None, **kwargs):
    """Returns the function unchanged (TorchScript's decorators have nothing to do here)."""
    return fn if fn is not None else (lambda f: f)


unused = export = ignore


def is_scripting() -> bool:
    """False: nothing runs as TorchScript."""
    return False


def is_tracing() -> bool:
    """False: nothing runs under torch.jit.trace."""
    return False


def save(*args, **kwargs):
    """Refused: TorchScript is not supported; save the state_dict with torch.save."""
    raise ArgumentError("torch.jit.save: TorchScript is not supported; save the "
                        "state_dict with torch.save(model.state_dict(), path)")


load = save
