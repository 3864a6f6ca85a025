"""Containers of modules: ``Sequential``, ``ModuleList``, ``ModuleDict``.

Their children are named as PyTorch names them ("0", "1", ... or the dict's keys), so
``state_dict`` keys ("blocks.1.attn.qkv.bias") match a PyTorch model written the same way.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType

from ..errors import ArgumentError
from .module import Module, _modes_changed


def _check_module(owner: str, name, value) -> Module:
    if not isinstance(value, Module):
        raise ArgumentError(f"{owner}: item {name!r} must be a Module, got "
                            f"{type(value).__name__}")
    return value


def _scope_of(name: str, module: Module) -> str:
    # Scope names cannot hold "/"; "0_linear" reads better in a profile than "0".
    return f"{name}_{type(module).__name__.lower()}".replace("/", "_")


class Sequential(Module):
    """Modules called one after another: ``Sequential(Linear(4, 8), ReLU())`` or
    ``Sequential(OrderedDict(fc=Linear(4, 8), act=ReLU()))``."""

    # Empty until __init__ fills them (Module.__init__ already walks the children).
    layers: list = []
    _names: tuple = ()

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], Mapping):
            names, layers = list(layers[0].keys()), list(layers[0].values())
        else:
            names = [str(i) for i in range(len(layers))]
        self.layers = [_check_module("Sequential", n, m) for n, m in zip(names, layers)]
        self._names = tuple(str(n) for n in names)
        _modes_changed(self)  # the children's names are known only now
        for name, layer in zip(self._names, self.layers):
            layer._scope_name = _scope_of(name, layer)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def named_children(self) -> Iterator[tuple[str, Module]]:
        yield from zip(self._names, self.layers)

    def append(self, module: Module) -> Sequential:
        name = str(len(self.layers))
        self.layers.append(_check_module("Sequential.append", name, module))
        self._names = (*self._names, name)
        self._adopt(module)
        module._scope_name = _scope_of(name, module)
        return self

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Sequential(OrderedDict(zip(self._names[i], self.layers[i])))
        return self.layers[i]

    def __len__(self) -> int:
        return len(self.layers)

    def __iter__(self) -> Iterator[Module]:
        return iter(self.layers)


class ModuleList(Module):
    """A list of modules whose parameters are registered ("blocks.0.fc.weight")."""

    _items: tuple = ()  # until __init__ (Module.__init__ already walks the children)

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        self._items: list[Module] = []
        if modules is not None:
            self.extend(modules)

    def _rename(self) -> None:
        for i, m in enumerate(self._items):
            m._scope_name = _scope_of(str(i), m)

    def append(self, module: Module) -> ModuleList:
        self._items.append(_check_module("ModuleList.append", len(self._items), module))
        self._adopt(module)
        self._rename()
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        for m in modules:
            self._items.append(_check_module("ModuleList.extend", len(self._items), m))
            self._adopt(m)
        self._rename()
        return self

    def insert(self, index: int, module: Module) -> None:
        self._items.insert(index, _check_module("ModuleList.insert", index, module))
        self._adopt(module)
        self._rename()

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for i, m in enumerate(self._items):
            yield str(i), m

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ModuleList(self._items[i])
        return self._items[i]

    def __setitem__(self, i: int, module: Module) -> None:
        self._items[i] = _check_module("ModuleList", i, module)
        self._adopt(module)
        self._rename()

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._items)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward(): iterate over it and call "
                                  "its modules")


class ModuleDict(Module):
    """A dict of modules whose parameters are registered ("heads.cls.weight")."""

    _items = MappingProxyType({})  # until __init__ (Module.__init__ walks the children)

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None):
        super().__init__()
        self._items: dict[str, Module] = {}
        if modules is not None:
            self.update(modules)

    def update(self, modules) -> None:
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, m in pairs:
            self[key] = m

    def __setitem__(self, key: str, module: Module) -> None:
        if not isinstance(key, str) or not key or "." in key:
            raise ArgumentError(f"ModuleDict: keys are non-empty strings without '.', got "
                                f"{key!r}")
        self._items[key] = _check_module("ModuleDict", key, module)
        self._adopt(module)
        module._scope_name = key.replace("/", "_")

    def __getitem__(self, key: str) -> Module:
        try:
            return self._items[key]
        except KeyError:
            raise KeyError(f"ModuleDict has no module {key!r}; it has "
                           f"{sorted(self._items)}") from None

    def __delitem__(self, key: str) -> None:
        del self._items[key]

    def __contains__(self, key) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def keys(self):
        return self._items.keys()

    def values(self):
        return self._items.values()

    def items(self):
        return self._items.items()

    def named_children(self) -> Iterator[tuple[str, Module]]:
        yield from self._items.items()

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleDict has no forward(): call its modules by key")


__all__ = ["ModuleDict", "ModuleList", "Sequential"]
