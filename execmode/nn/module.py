"""``Module`` and ``Parameter``: the base of every layer, as a PyTorch user knows them.

A module's state lives in plain attributes: Parameters (trained), buffers (registered with
:meth:`Module.register_buffer`: state such as BatchNorm's running statistics, saved in the
``state_dict`` but not trained) and submodules. Keeping them as attributes (instead of
PyTorch's ``_parameters``/``_modules`` dicts) keeps them shallow for ``em.jit``'s guards,
which walk a few levels of attributes to notice a changed ``training`` flag.

Calling a module opens a named scope with its attribute name ("fc1"), so profiles and
graphs group ops by layer as PyTorch's profiler groups them by module.
"""

from __future__ import annotations

import copy
import math
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np

from .. import functional as F
from .._tensor import Tensor
from ..dtypes import float32, float64
from ..errors import ArgumentError, ShapeError
from ..grad_mode import no_grad
from ..scope import _state as _scope_state
from .utils import zero_grads


class Parameter(Tensor):
    """A leaf tensor that a Module owns and an optimizer updates (requires_grad=True)."""

    def __new__(cls, data, requires_grad: bool = True):
        if not isinstance(data, Tensor):
            data = F.tensor(data)
        p = object.__new__(cls)
        p._data = data._data
        p.requires_grad = requires_grad
        return p

    def __deepcopy__(self, memo):
        # copy.deepcopy(model) (an EMA copy, a frozen teacher): new storage, same flag.
        with no_grad():
            copied = Parameter(F.copy(self), self.requires_grad)  # on the same device
        memo[id(self)] = copied
        return copied


class IncompatibleKeys(NamedTuple):
    """What :meth:`Module.load_state_dict` returns, as PyTorch's ``_IncompatibleKeys``."""

    missing_keys: list
    unexpected_keys: list


class _NextableList(list):
    """A list that is also its own iterator for ``next()``: PyTorch's ``parameters()`` is a
    generator, and programs write ``next(model.parameters())``; execmode's callers index
    the list and take its ``len``. ``for``/``iter()`` walk it as any list."""

    _taken = 0

    def __next__(self):
        i = self._taken
        if i >= len(self):
            raise StopIteration
        self._taken = i + 1
        return self[i]


class Module:
    """Base class of layers: subclasses set Parameters, buffers and submodules as
    attributes in ``__init__`` and define ``forward``."""

    # Class-level until register_buffer: an instance attribute would be one more guard
    # checked at every replay of a jitted function that reaches this module.
    _buffer_names: tuple = ()
    # em.jit's guards walk a module's whole subtree, however deep (graph/guards.py): a
    # number or flag that forward reads (a Dropout's p, a layer's scale) may sit at any
    # depth, and a change must retrace.
    _em_guard_deep = True
    # Python state a jitted function may write (graph/python_writes.py watches it).
    _em_user_state = True

    def __init__(self):
        self._scope_name = None
        self.training = True

    def __setattr__(self, name, value):
        if not name.startswith("_"):
            if isinstance(value, Module):
                value._scope_name = name
                self._adopt(value)
            elif isinstance(value, list | tuple):
                for item in value:
                    if isinstance(item, Module):
                        self._adopt(item)
        super().__setattr__(name, value)
        if name == "training":
            _modes_changed(self)

    def _adopt(self, child: Module) -> None:
        """Remember that ``child`` hangs under this module (for ``_training_modes``)."""
        parents = child.__dict__.get(_PARENTS)
        if parents is None:
            parents = weakref.WeakSet()
            object.__setattr__(child, _PARENTS, parents)
        parents.add(self)
        _modes_changed(self)

    def __deepcopy__(self, memo):
        # The parent links are weak references to the originals: a copy links anew.
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            if key != _PARENTS:
                object.__setattr__(new, key, copy.deepcopy(value, memo))
        for _, child in new.named_children():
            new._adopt(child)
        return new

    def forward(self, *args, **kwargs):
        """The computation of the module: subclasses define it; call the module itself
        (``model(x)``), which runs it inside the module's named scope."""
        raise NotImplementedError(f"{type(self).__name__} defines no forward()")

    def __call__(self, *args, **kwargs):
        """``forward(*args, **kwargs)`` inside a scope named after the attribute that holds
        the module ("fc1"), so that profiles and graphs group ops by layer."""
        # ``with named_scope(...)`` inlined (see scope.named_scope.__call__): every layer
        # call pays it. The scope path stays per thread.
        state = _scope_state
        saved = state.current
        name = self._scope_name or type(self).__name__.lower()
        state.current = f"{saved}/{name}" if saved else name
        try:
            return self.forward(*args, **kwargs)
        finally:
            state.current = saved

    # --- what a module holds -------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True):
        """Keep ``tensor`` as state of this module: in ``state_dict`` (unless
        ``persistent=False``) and moved by ``to()``, but not a parameter."""
        if not isinstance(name, str) or not name or "." in name:
            raise ArgumentError(f"register_buffer: a buffer name is a non-empty string "
                                f"without '.', got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise ArgumentError(f"register_buffer({name!r}): expected a Tensor or None, got "
                                f"{type(tensor).__name__}")
        if isinstance(tensor, Parameter):
            raise ArgumentError(f"register_buffer({name!r}): a Parameter is not a buffer")
        names = [n for n in self.__dict__.get("_buffer_names", ()) if n != name]
        object.__setattr__(self, "_buffer_names", (*names, name))
        if not persistent:
            transient = self.__dict__.get("_transient_buffers", ())
            object.__setattr__(self, "_transient_buffers", (*transient, name))
        setattr(self, name, tensor)

    def _own_items(self) -> Iterator[tuple[str, object]]:
        for name, value in vars(self).items():
            if not name.startswith("_"):
                yield name, value

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct submodules: attributes, and modules inside list/tuple attributes
        ("layers.0"); containers name theirs "0", "1", ... as PyTorch does."""
        for name, value in self._own_items():
            if isinstance(value, Module):
                yield name, value
            elif isinstance(value, list | tuple):
                for i, item in enumerate(value):
                    if isinstance(item, Module):
                        yield f"{name}.{i}", item

    def children(self) -> Iterator[Module]:
        """The direct submodules (see :meth:`named_children`)."""
        for _, m in self.named_children():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module ("") and every submodule, depth first, each once (every time it
        is reached with ``remove_duplicate=False``). PyTorch's argument order."""
        if isinstance(memo, str):  # named_modules("prefix"), an older spelling of ours
            memo, prefix = None, memo
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self.named_children():
            yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                           remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """This module and every submodule, depth first, each once."""
        for _, m in self.named_modules():
            yield m

    def _own_parameters(self) -> Iterator[tuple[str, Parameter]]:
        buffers = set(self.__dict__.get("_buffer_names", ()))
        for name, value in self._own_items():
            if isinstance(value, Parameter) and name not in buffers:
                yield name, value
            elif isinstance(value, list | tuple):  # a plain list of Parameters
                for i, item in enumerate(value):
                    if isinstance(item, Parameter):
                        yield f"{name}.{i}", item

    def _own_buffers(self, persistent_only: bool = False) -> Iterator[tuple[str, Tensor]]:
        transient = self.__dict__.get("_transient_buffers", ()) if persistent_only else ()
        for name in self.__dict__.get("_buffer_names", ()):
            value = self.__dict__.get(name)
            if value is not None and name not in transient:
                yield name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """("0.weight", p) pairs with PyTorch's names, each parameter once (a tied weight
        under its first name), or under every name with ``remove_duplicate=False``."""
        seen: set[int] = set()
        modules = self.named_modules(remove_duplicate=remove_duplicate) if recurse \
            else [("", self)]
        for path, module in modules:
            for name, p in module._own_parameters():
                if not remove_duplicate or id(p) not in seen:
                    seen.add(id(p))
                    yield _join(prefix, path, name), p

    def parameters(self, recurse: bool = True) -> list[Parameter]:
        """Every parameter, each once (a tied weight under its first owner): a list rather
        than PyTorch's generator, so it can be indexed and reused, that ``next()`` also
        walks as PyTorch's (``next(model.parameters()).device``)."""
        return _NextableList(p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix: str = "", recurse: bool = True
                      ) -> Iterator[tuple[str, Tensor]]:
        """("bn.running_mean", t) pairs: the registered buffers, persistent or not."""
        modules = self.named_modules() if recurse else [("", self)]
        for path, module in modules:
            for name, b in module._own_buffers():
                yield _join(prefix, path, name), b

    def buffers(self, recurse: bool = True) -> list[Tensor]:
        """The registered buffers (a list, as ``parameters()``)."""
        return _NextableList(b for _, b in self.named_buffers(recurse=recurse))

    def num_parameters(self) -> int:
        """How many numbers the parameters hold (a tied weight counted once)."""
        return sum(math.prod(p.shape) for p in self.parameters())

    # --- adding and finding by name (PyTorch's spellings) -------------------------------
    def add_module(self, name: str, module: Module | None) -> None:
        """``setattr(self, name, module)``, with PyTorch's checks on the name."""
        if not isinstance(name, str) or not name or "." in name:
            raise ArgumentError(f"add_module: a module name is a non-empty string without "
                                f"'.', got {name!r}")
        if module is not None and not isinstance(module, Module):
            raise ArgumentError(f"add_module({name!r}): expected a Module or None, got "
                                f"{type(module).__name__}")
        setattr(self, name, module)

    def register_module(self, name: str, module: Module | None) -> None:
        """The same as :meth:`add_module`."""
        self.add_module(name, module)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """``setattr(self, name, param)`` for a Parameter (or None: no parameter)."""
        if not isinstance(name, str) or not name or "." in name:
            raise ArgumentError(f"register_parameter: a parameter name is a non-empty "
                                f"string without '.', got {name!r}")
        if param is not None and not isinstance(param, Parameter):
            raise ArgumentError(f"register_parameter({name!r}): expected a Parameter or "
                                f"None, got {type(param).__name__} (wrap it: "
                                f"nn.Parameter(t))")
        setattr(self, name, param)

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path ("blocks.1.attn"); "" is this module."""
        if target == "":
            return self
        for path, module in self.named_modules():
            if path == target:
                return module
        raise AttributeError(f"{type(self).__name__} has no submodule {target!r}")

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path ("blocks.1.attn.qkv.weight")."""
        for name, p in self.named_parameters():
            if name == target:
                return p
        raise AttributeError(f"{type(self).__name__} has no parameter {target!r}")

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path ("bn.running_mean")."""
        for name, b in self.named_buffers():
            if name == target:
                return b
        raise AttributeError(f"{type(self).__name__} has no buffer {target!r}")

    # --- modes and bulk changes ---------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Training mode for this module and every submodule (Dropout drops, BatchNorm
        uses batch statistics). ``em.jit`` guards the flag: a change retraces."""
        if not isinstance(mode, bool):
            raise ArgumentError(f"train(mode): mode must be a bool, got {mode!r}")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        seen: set = set()  # every flag is set already: each summary is computed once
        for m in self.modules():  # summaries of this subtree and of its ancestors
            _modes_changed(m, seen)
        return self

    def eval(self) -> Module:
        """Evaluation mode: ``train(False)``."""
        return self.train(False)

    def apply(self, fn: Callable[[Module], object]) -> Module:
        """Call ``fn`` on every submodule, then on this one (as PyTorch: children first)."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` of every parameter (freeze with False); returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Every ``.grad`` to None, or (``set_to_none=False``) zeroed in place."""
        zero_grads(self.parameters(), set_to_none)

    def to(self, *args, device=None, dtype=None) -> Module:
        """Move (or cast) every parameter and buffer in place: the objects stay the same,
        so an optimizer built before ``to()`` still holds them. ``to("cuda")``,
        ``to(em.float64)``, ``to(device=..., dtype=...)``; integer buffers keep their
        dtype (as PyTorch's num_batches_tracked)."""
        from ..backend import Device
        from ..dtypes import is_dtype_name

        for arg in args:
            if isinstance(arg, Device) or isinstance(arg, str) and not is_dtype_name(arg):
                device = arg
            else:
                dtype = arg
        with no_grad():
            for t in [*self.parameters(), *self.buffers()]:
                moved = t
                if device is not None:
                    moved = F.to_device(moved, device)
                if dtype is not None and t.dtype.kind == "f":
                    moved = F.astype(moved, dtype, copy=False)
                if moved is not t:
                    t._data = moved._data
                    t._grad = None  # a gradient on the old device or dtype is stale
        return self

    def float(self) -> Module:
        """Floating parameters and buffers to float32, in place (``to(em.float32)``)."""
        return self.to(float32)

    def double(self) -> Module:
        """Floating parameters and buffers to float64, in place (``to(em.float64)``)."""
        return self.to(float64)

    def half(self) -> Module:
        """``to(float16)``: refused with the dtypes execmode supports (float16 is not
        one of them)."""
        return self.to(np.dtype("float16"))

    def bfloat16(self) -> Module:
        """Refused: execmode has no bfloat16 (the error names the dtypes it has)."""
        from ..errors import DTypeError

        raise DTypeError("bfloat16 is not supported; execmode supports float32, float64, "
                         "int32, int64, bool")

    def cpu(self) -> Module:
        """``to("cpu")``."""
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        """``to("cuda")`` (or ``to("cuda:<device>")``)."""
        return self.to("cuda" if device is None else f"cuda:{int(device)}")

    # --- state_dict ---------------------------------------------------------------------
    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False
                   ) -> OrderedDict:
        """Parameters and persistent buffers by PyTorch's names ("0.weight",
        "blocks.1.attn.qkv.bias"), each module's own first, then its children's.
        Values share memory with the module (``detach()``), as in PyTorch; ``keep_vars``
        gives the Parameters themselves, ``destination`` a dict to fill."""
        out: OrderedDict = OrderedDict() if destination is None else destination
        for path, module in self.named_modules():
            for name, t in [*module._own_parameters(), *module._own_buffers(True)]:
                out[_join(prefix, path, name)] = t if keep_vars else t.detach()
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False
                        ) -> IncompatibleKeys:
        """Copy values into this module's parameters and buffers (in place: optimizers
        and jitted functions holding them see the new values). Returns the missing and
        unexpected keys; with ``strict`` any of them is an error, as in PyTorch. A shape
        mismatch is always an error naming the key.

        ``assign=True`` (PyTorch's) puts the checkpoint's tensors into the module instead
        of copying: a parameter becomes a new Parameter over the loaded tensor's storage
        (with the old one's ``requires_grad``), a buffer the tensor itself. Optimizers
        built before hold the old parameters then, as in PyTorch: build them after."""
        if not hasattr(state_dict, "keys"):
            raise ArgumentError(f"load_state_dict expects a dict of tensors, got "
                                f"{type(state_dict).__name__}")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        name = type(self).__name__
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing key(s): {', '.join(map(repr, missing))}")
            if unexpected:
                parts.append(f"unexpected key(s): {', '.join(map(repr, unexpected))}")
            raise ArgumentError(f"error(s) loading a state_dict into {name}: "
                                f"{'; '.join(parts)} (load_state_dict(sd, strict=False) "
                                f"loads the keys that match)")
        updates = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = _as_array(state_dict[key], key)
            if getattr(type(target), "_em_uninitialized", False):  # lazy: take its shape
                target.materialize(value.shape)
            if tuple(value.shape) != tuple(target.shape):
                raise ShapeError(f"load_state_dict into {name}: size mismatch for {key!r}: "
                                 f"the checkpoint has shape {tuple(value.shape)}, the module "
                                 f"{tuple(target.shape)}")
            updates.append((key, target, value))
        if assign:
            self._assign_loaded(updates)
            return IncompatibleKeys(missing, unexpected)
        with no_grad():  # check every key before writing any
            for _, target, value in updates:
                copy_into(target, value)
        return IncompatibleKeys(missing, unexpected)

    def _assign_loaded(self, updates) -> None:
        """load_state_dict(assign=True): each value becomes the module's own tensor."""
        owners = {}
        for path, module in self.named_modules():
            for name, _ in [*module._own_parameters(), *module._own_buffers(True)]:
                owners[_join("", path, name)] = (module, name)
        for key, target, value in updates:
            owner, name = owners[key]
            if not isinstance(value, Tensor):
                value = F.tensor(np.asarray(value))
            value = value.detach()
            if isinstance(target, Parameter):
                value = Parameter(value, target.requires_grad)
            attr, _, index = name.partition(".")
            if index:  # a Parameter in a plain list attribute ("ps.0")
                getattr(owner, attr)[int(index)] = value
            else:
                setattr(owner, name, value)

    def extra_repr(self) -> str:
        """The arguments shown in ``repr(module)`` (subclasses override it)."""
        return ""

    def __repr__(self) -> str:
        children = list(self.named_children())
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not children:
            return head + ")"
        lines = [head]
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)"


# Why a summary of the training flags: em.jit guards the Python state a trace may read by
# walking the objects it reaches a few levels deep (graph/guards.py), so the ``training``
# flag of a module nested deeper (model.blocks[0].mlp.dropout) is not guarded by itself.
# Every module keeps ``_training_modes``, one character per module of its subtree; a
# change anywhere below updates it on every ancestor, so the guard on the shallow root's
# string catches ``model.blocks[0].dropout.eval()`` too. A string, not a number: a
# number that changes becomes a graph input, a string stays a guard.
# The parent links live under a dunder name, which the guards skip.
_PARENTS = "__em_parents__"


def _modes_changed(module: Module, seen: set | None = None) -> None:
    seen = set() if seen is None else seen
    if id(module) in seen:
        return
    seen.add(id(module))
    modes = "".join("1" if getattr(m, "training", True) else "0" for m in module.modules())
    object.__setattr__(module, "_training_modes", modes)
    for parent in list(module.__dict__.get(_PARENTS, ())):
        _modes_changed(parent, seen)


def _join(prefix: str, path: str, name: str) -> str:
    return ".".join(part for part in (prefix.rstrip("."), path, name) if part)


def _as_array(value, key: str):
    """A checkpoint value as a Tensor or NumPy array (anything else is an error)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray | np.generic | int | float):
        return np.asarray(value)
    raise ArgumentError(f"load_state_dict: {key!r} holds a {type(value).__name__}, "
                        f"expected a tensor")


def copy_into(target: Tensor, value) -> None:
    """``target.copy_(value)``: cast to target's dtype and device, written in place."""
    if not isinstance(value, Tensor):
        value = F.tensor(np.asarray(value), dtype=target.dtype, device=target.device)
    if value.device != target.device:
        value = F.to_device(value, target.device)
    if value.dtype != target.dtype:
        value = F.astype(value, target.dtype)
    F.assign(target, value)


__all__ = ["IncompatibleKeys", "Module", "Parameter", "copy_into"]
