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
        """Each module's output is the next one's input."""
        for layer in self.layers:
            x = layer(x)
        return x

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """("0", module), ("1", module) ... or the names of the OrderedDict given."""
        yield from zip(self._names, self.layers)

    def __getattr__(self, name: str):
        # Sequential(OrderedDict(fc=...)).fc, as PyTorch: the children by their names.
        names = self.__dict__.get("_names", ())
        if name in names:
            return self.__dict__["layers"][names.index(name)]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _renumber(self) -> None:
        """Names "0", "1", ... again after an insertion or deletion (as PyTorch does)."""
        if all(n.isdigit() for n in self._names):
            self._names = tuple(str(i) for i in range(len(self.layers)))
        for name, layer in zip(self._names, self.layers):
            self._adopt(layer)
            layer._scope_name = _scope_of(name, layer)

    def append(self, module: Module) -> Sequential:
        """Add a module at the end; returns self."""
        name = str(len(self.layers))
        self.layers.append(_check_module("Sequential.append", name, module))
        self._names = (*self._names, name)
        self._adopt(module)
        module._scope_name = _scope_of(name, module)
        return self

    def add_module(self, name: str, module: Module) -> None:
        """Append ``module`` under ``name`` (PyTorch's Sequential runs it last)."""
        name = str(name)
        if name in self._names:
            self.layers[self._names.index(name)] = _check_module("Sequential", name, module)
        else:
            self.layers.append(_check_module("Sequential.add_module", name, module))
            self._names = (*self._names, name)
        self._adopt(module)
        module._scope_name = _scope_of(name, module)

    def extend(self, modules: Iterable[Module]) -> Sequential:
        """Append each of ``modules``; returns self."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Insert a module before ``index`` (the names are renumbered); returns self."""
        if not all(n.isdigit() for n in self._names):
            raise ArgumentError("Sequential.insert: this Sequential names its modules; "
                                "insert into one numbered 0, 1, ...")
        self.layers.insert(index, _check_module("Sequential.insert", index, module))
        self._names = (*self._names, str(len(self._names)))
        self._renumber()
        return self

    def pop(self, index: int = -1) -> Module:
        """Remove and return the module at ``index``."""
        module = self[index]
        del self[index]
        return module

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Sequential(OrderedDict(zip(self._names[i], self.layers[i])))
        return self.layers[i]

    def __setitem__(self, i: int, module: Module) -> None:
        self.layers[i] = _check_module("Sequential", i, module)
        self._renumber()

    def __delitem__(self, i) -> None:
        names = list(self._names)
        del self.layers[i]
        del names[i]
        self._names = tuple(names)
        self._renumber()
        _modes_changed(self)

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
        """Add a module at the end; returns self."""
        self._items.append(_check_module("ModuleList.append", len(self._items), module))
        self._adopt(module)
        self._rename()
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Append each of ``modules``; returns self."""
        for m in modules:
            self._items.append(_check_module("ModuleList.extend", len(self._items), m))
            self._adopt(m)
        self._rename()
        return self

    def insert(self, index: int, module: Module) -> None:
        """Insert a module before ``index``."""
        self._items.insert(index, _check_module("ModuleList.insert", index, module))
        self._adopt(module)
        self._rename()

    def pop(self, index: int = -1) -> Module:
        """Remove and return the module at ``index``."""
        module = self._items.pop(index)
        self._rename()
        _modes_changed(self)
        return module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """("0", module), ("1", module) ..."""
        for i, m in enumerate(self._items):
            yield str(i), m

    def __delitem__(self, i) -> None:
        del self._items[i]
        self._rename()
        _modes_changed(self)

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList([*self._items, *other])

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
        """Refused: a ModuleList is a container; iterate over it and call its modules."""
        raise NotImplementedError("ModuleList has no forward(): iterate over it and call "
                                  "its modules")


class ModuleDict(Module):
    """A dict of modules whose parameters are registered ("heads.cls.weight"). Its
    modules are items (``d["wte"]``) and attributes (``d.wte``), as in PyTorch; setting
    an attribute to a module adds it."""

    _items = MappingProxyType({})  # until __init__ (Module.__init__ walks the children)

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None):
        super().__init__()
        self._items: dict[str, Module] = {}
        if modules is not None:
            self.update(modules)

    def update(self, modules) -> None:
        """Add (or replace) the modules of a dict or of (key, module) pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for key, m in pairs:
            self[key] = m

    def add_module(self, name: str, module: Module) -> None:
        """``d[name] = module``."""
        self[name] = module

    def __getattr__(self, name: str):
        # Only called when normal lookup fails: d.wte reads the item "wte".
        items = self.__dict__.get("_items")
        if items is not None and name in items:
            return items[name]
        raise AttributeError(f"ModuleDict has no module or attribute {name!r}"
                             + (f"; it has {sorted(items)}" if items else ""))

    def __setattr__(self, name: str, value) -> None:
        if isinstance(value, Module) and not name.startswith("_") \
                and "_items" in self.__dict__:
            self[name] = value  # d.head = Linear(...) adds an item, as PyTorch
            return
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        items = self.__dict__.get("_items")
        if items is not None and name in items:
            del self[name]
            return
        super().__delattr__(name)

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
        _modes_changed(self)

    def pop(self, key: str) -> Module:
        """Remove and return the module under ``key``."""
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        """Remove every module."""
        self._items.clear()
        _modes_changed(self)

    def __contains__(self, key) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def keys(self):
        """The keys, in insertion order."""
        return self._items.keys()

    def values(self):
        """The modules, in insertion order."""
        return self._items.values()

    def items(self):
        """(key, module) pairs, in insertion order."""
        return self._items.items()

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """(key, module) pairs: the keys are the children's names."""
        yield from self._items.items()

    def forward(self, *args, **kwargs):
        """Refused: a ModuleDict is a container; call its modules by key."""
        raise NotImplementedError("ModuleDict has no forward(): call its modules by key")


__all__ = ["ModuleDict", "ModuleList", "Sequential"]
