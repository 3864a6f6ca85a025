"""Pytrees: nested lists, tuples and dicts of tensors, as in jax.tree_util.

``flatten`` splits a value into its leaves (tensors) and a hashable structure in which
everything that is not a tensor is kept by value (static: part of a jit signature).
"""

from __future__ import annotations

from .._tensor import Tensor

LEAF = "*"


def flatten(value) -> tuple[list, object]:
    leaves: list = []
    return leaves, _flatten(value, leaves)


def _flatten(value, leaves):
    if isinstance(value, Tensor):
        leaves.append(value)
        return LEAF
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        # A namedtuple is a node like a tuple; its type is part of the structure.
        return ("namedtuple", type(value), tuple(_flatten(v, leaves) for v in value))
    if isinstance(value, tuple):
        return ("tuple", tuple(_flatten(v, leaves) for v in value))
    if isinstance(value, list):
        return ("list", tuple(_flatten(v, leaves) for v in value))
    if isinstance(value, dict):
        keys = sorted(value, key=repr)
        return ("dict", tuple(keys), tuple(_flatten(value[k], leaves) for k in keys))
    return ("static", _static_key(value))


def _static_key(value):
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"em.jit: an argument of type {type(value).__name__} is neither a tensor, a "
            "list/tuple/dict of them, nor hashable (static arguments key the cache by value)"
        ) from None
    return (type(value).__name__, value)


def unflatten(structure, leaves) -> object:
    it = iter(leaves)
    return _unflatten(structure, it)


def _unflatten(s, it):
    if s == LEAF:
        return next(it)
    tag = s[0]
    if tag == "tuple":
        return tuple(_unflatten(c, it) for c in s[1])
    if tag == "list":
        return [_unflatten(c, it) for c in s[1]]
    if tag == "dict":
        return {k: _unflatten(c, it) for k, c in zip(s[1], s[2])}
    if tag == "namedtuple":
        return s[1](*(_unflatten(c, it) for c in s[2]))
    return s[1][1]


def leaf_paths(structure) -> list[str]:
    """A readable path per tensor leaf, in leaf order: "[0][1]", "[0][2]['w']", "[1].x"."""
    return [path for path, node in _walk(structure, "") if node == LEAF]


def static_paths(structure) -> list[tuple[str, object]]:
    """(path, value) of every static (non-tensor) leaf, paths as in leaf_paths."""
    return [(path, node[1][1]) for path, node in _walk(structure, "") if node != LEAF]


def _walk(s, prefix):
    """(path, node) for every leaf of a structure: tensor leaves and static values."""
    if s == LEAF or s[0] == "static":
        yield prefix, s
        return
    tag = s[0]
    if tag in ("tuple", "list"):
        named = ((f"[{i}]", c) for i, c in enumerate(s[1]))
    elif tag == "namedtuple":
        named = ((f".{name}", c) for name, c in zip(s[1]._fields, s[2]))
    else:  # dict
        named = ((f"[{k!r}]", c) for k, c in zip(s[1], s[2]))
    for step, child in named:
        yield from _walk(child, prefix + step)
