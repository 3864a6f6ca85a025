"""Readable names for the tensors a jitted function captures ("fc1.weight", "opt.m[0]"),
the labels of its graph's inputs and of its guards' reasons.
"""

from __future__ import annotations

from .._tensor import Tensor


def capture_labels(fn) -> dict[int, str]:
    """Names for captured tensors: globals and closure variables the function reads, and
    the parameters and state of modules and optimizers among them."""
    Module, Optimizer = _module_classes()  # noqa: N806 - the classes
    labels: dict[int, str] = {}
    scopes: dict = {}
    owner = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
    if isinstance(owner, Module):  # em.jit(model), em.jit(model.forward): "fc1.weight"
        for pname, p in owner.named_parameters():
            labels.setdefault(id(p), pname)
        for bname, b in owner.named_buffers():
            labels.setdefault(id(b), bname)
    code = getattr(fn, "__code__", None)
    if code is not None:
        g = getattr(fn, "__globals__", {})
        for name in code.co_names:
            if name in g:
                scopes[name] = g[name]
        if fn.__closure__:
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    scopes[name] = cell.cell_contents
                except ValueError:
                    pass
    # Module parameter names win over an optimizer's lists of the same tensors.
    ordered = sorted(scopes.items(), key=lambda kv: not isinstance(kv[1], Module | Tensor))
    for name, value in ordered:
        if isinstance(value, Tensor):
            labels.setdefault(id(value), name)
        elif isinstance(value, Module):
            for pname, p in value.named_parameters(prefix=f"{name}."):
                labels.setdefault(id(p), pname)
        elif isinstance(value, Optimizer):
            _label_tensors(labels, vars(value), name, depth=3)
    return labels


_classes: tuple = ()


def _module_classes() -> tuple:
    """(nn.Module, optim.Optimizer), imported at the first call (not when
    execmode is imported), and kept: a function with graph breaks asks at every call."""
    global _classes
    if not _classes:
        from ..nn import Module
        from ..optim import Optimizer

        _classes = (Module, Optimizer)
    return _classes


def _label_tensors(labels: dict, obj, path: str, depth: int) -> None:
    """Label the tensors an optimizer holds (``opt.state[0]['exp_avg']``, ``opt.m[0]``)."""
    if isinstance(obj, Tensor):
        labels.setdefault(id(obj), path)
        return
    if depth == 0:
        return
    if isinstance(obj, dict):
        for key, item in obj.items():
            if isinstance(key, str | int):
                sub = f"{path}.{key}" if depth == 3 else f"{path}[{key!r}]"
                _label_tensors(labels, item, sub, depth - 1)
    elif isinstance(obj, list | tuple):
        for i, item in enumerate(obj):
            _label_tensors(labels, item, f"{path}[{i}]", depth - 1)
