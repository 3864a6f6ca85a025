"""Modules of ``execmode.torch`` that are execmode's own under PyTorch's name
(``torch.nn`` is ``execmode.nn``, ``torch.optim`` is ``execmode.optim`` ...).

``delegate(__name__, "execmode.nn")`` gives such a module its ``__getattr__``/``__dir__``:
a name is looked up in the target when first asked for (so whatever the target has, now
or after someone adds to it, is there) and kept on the module, so ``F.relu`` costs a plain
attribute read from then on. A name neither has raises ``aliases.missing_attribute``'s
error: what to use instead, or that PyTorch's name is not supported.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys


def delegate(name: str, target: str):
    """``(__getattr__, __dir__)`` for the module ``name`` over the module ``target``."""

    def __getattr__(attr: str):
        if attr.startswith("__") and attr != "__all__":
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        own = sys.modules[name]
        if attr != "__all__" and hasattr(own, "__path__") and \
                importlib.util.find_spec(f"{name}.{attr}") is not None:
            return importlib.import_module(f"{name}.{attr}")  # torch.nn.functional ...
        module = importlib.import_module(target)
        if attr == "__all__":
            return sorted(getattr(module, "__all__", [n for n in dir(module)
                                                      if not n.startswith("_")]))
        try:
            value = getattr(module, attr)
        except AttributeError:
            from ..aliases import missing_attribute

            raise missing_attribute(name, attr, own) from None
        setattr(own, attr, value)
        return value

    def __dir__() -> list[str]:
        module = importlib.import_module(target)
        return sorted(set(dir(module)) | set(vars(sys.modules[name])))

    return __getattr__, __dir__
