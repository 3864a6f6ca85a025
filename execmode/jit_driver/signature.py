"""What keys a jitted function's cache: the signature of a call, and why a new one retraces.

Tensor leaves key on (shape, dtype, device, requires_grad, aliasing), static leaves on
value, and grad mode on whether it is on. A call whose signature is new retraces, and
``retrace_reason`` says why in a sentence ("x: shape (64, 512) -> (32, 512)").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from ..graph import pytree


@dataclass(frozen=True)
class Signature:
    structure: object
    leaves: tuple          # (shape, dtype, device, requires_grad, alias) per tensor leaf
    grad_enabled: bool
    # path -> readable name ("[0][1]" -> "scale"): names are only needed to trace and to
    # explain a retrace, so they are derived on first use, not at every call.
    namer: object = field(default=str, compare=False, repr=False)

    @property
    def key(self):
        return (self.structure, self.leaves, self.grad_enabled)

    @functools.cached_property
    def arg_names(self) -> tuple:
        """Readable names of the tensor leaves ("x", "batch['y']")."""
        return tuple(self.namer(p) for p in pytree.leaf_paths(self.structure))

    @functools.cached_property
    def statics(self) -> tuple:
        """(readable name, value) of every static argument."""
        return tuple((self.namer(p), v) for p, v in pytree.static_paths(self.structure))

    def __str__(self) -> str:
        from ..dtypes import type_text

        # The device only where it is not the default one.
        parts = [f"{name}: {type_text(shape, dt, None if str(dev) == 'cpu' else dev)}"
                 for name, (shape, dt, dev, _, _) in zip(self.arg_names, self.leaves)]
        parts.extend(f"{name}={value!r}" for name, value in self.statics)
        return "(" + ", ".join(parts) + ")"


def memory_owner(array):
    """The array owning ``array``'s memory (NumPy points a view's ``base`` at it)."""
    base = getattr(array, "base", None)
    return array if base is None else base


def signature_of(structure, leaves, grad_enabled: bool, namer) -> Signature:
    """The signature of a call whose arguments flattened to ``structure`` and ``leaves``."""
    # Tensors sharing memory (one tensor passed twice, w and w.detach(), x and a view
    # of x) see each other's writes: the aliasing pattern keys the cache too (first
    # position of each leaf's memory, the array that owns it).
    first: dict = {}
    aliases = tuple(first.setdefault(id(memory_owner(t._data)), i)
                    for i, t in enumerate(leaves))
    described = tuple((t.shape, t.dtype, t.device, t.requires_grad, a)
                      for t, a in zip(leaves, aliases))
    return Signature(structure, described, grad_enabled, namer)


def retrace_reason(old: Signature, new: Signature) -> str:
    """A human sentence for why ``new`` needs a new trace ("x: shape (64, 512) -> ...")."""
    if old.structure != new.structure:
        old_s = dict(old.statics)
        for name, value in new.statics:
            if name in old_s and old_s[name] != value:
                return f"static arg {name}: {old_s[name]!r} -> {value!r}"
        return "argument structure changed (different nesting, keys or static arguments)"
    if old.grad_enabled != new.grad_enabled:
        return f"grad mode: {'on' if old.grad_enabled else 'off'} -> " \
               f"{'on' if new.grad_enabled else 'off'}"
    for name, a, b in zip(new.arg_names, old.leaves, new.leaves):
        if a[0] != b[0]:
            return f"{name}: shape {a[0]} -> {b[0]}"
        if a[1] != b[1]:
            return f"{name}: dtype {a[1]} -> {b[1]}"
        if a[2] != b[2]:
            return f"{name}: device {a[2]} -> {b[2]}"
        if a[3] != b[3]:
            return f"{name}: requires_grad {a[3]} -> {b[3]}"
        if a[4] != b[4]:
            return f"{name}: aliasing changed (the same tensor passed in two places, or not)"
    return "new signature"


@dataclass
class Retrace:
    reason: str
    signature: str
    time_ns: int

    def __str__(self) -> str:
        return f"retrace {self.signature}: {self.reason}"
