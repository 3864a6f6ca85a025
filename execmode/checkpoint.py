"""``em.save(obj, path)`` / ``em.load(path)``: checkpoints in the safetensors format.

safetensors is the field's pickle-free format: an 8-byte header length, a JSON header
(name -> dtype, shape, byte offsets), then raw little-endian data. Loading a file can
never run code. ``obj`` is a nested structure of dicts, lists and tuples whose leaves are
tensors (or NumPy arrays), numbers, strings, bools and None: a model's ``state_dict()``, an
optimizer's, a scheduler's, a step count, all in one dict.

* Tensors are stored under their path joined with "." ("model.0.weight",
  "optimizer.state.0.exp_avg"): a flat state_dict keeps its own keys, so PyTorch's
  ``safetensors.torch.load_file`` reads a saved ``model.state_dict()`` as-is.
* The structure (dict keys with their types, lists, tuples, numbers, strings) is JSON in
  the header's ``__metadata__`` under "execmode.structure"; it is parsed with ``json``
  only. A safetensors file written by another tool loads as a flat dict of tensors.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from ._tensor import Tensor
from .errors import ArgumentError

_STRUCTURE_KEY = "execmode.structure"
_FORMAT_VERSION = "1"
_LEAVES = (int, float, bool, str, type(None))


def _safetensors():
    try:
        import safetensors.numpy as st_numpy
        from safetensors import safe_open
    except ImportError:  # a dependency of execmode; missing only in a broken install
        raise ImportError("em.save/em.load need the 'safetensors' package: "
                          "pip install safetensors") from None
    return st_numpy, safe_open


def save(obj, path) -> None:
    """Write ``obj`` (nested dicts/lists of tensors and numbers) to ``path`` in the
    safetensors format. The file is written next to ``path`` and renamed into place, so a
    crash mid-save leaves the previous checkpoint intact."""
    st_numpy, _ = _safetensors()
    arrays: dict[str, np.ndarray] = {}
    structure = _encode(obj, "", arrays)
    metadata = {_STRUCTURE_KEY: json.dumps(structure), "format": "np",
                "execmode.format_version": _FORMAT_VERSION}
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".em-save-", suffix=".safetensors", dir=folder)
    os.close(fd)
    try:
        st_numpy.save_file(arrays, tmp, metadata=metadata)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(path, device=None):
    """Read a checkpoint written by :func:`save` (or any safetensors file: a flat dict
    of tensors). Tensors come back as plain tensors (``requires_grad=False``) on the CPU,
    or on ``device``; load them into a model with ``model.load_state_dict``."""
    st_numpy, safe_open = _safetensors()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"em.load: no checkpoint file at {path!r}")
    try:
        with safe_open(path, framework="numpy") as f:
            metadata = f.metadata() or {}
            arrays = {name: f.get_tensor(name) for name in f.keys()}
    except Exception as exc:  # safetensors raises its own error types for a bad header
        raise ArgumentError(f"em.load: {path!r} is not a readable safetensors file "
                            f"({type(exc).__name__}: {exc})") from None
    from .functional import tensor

    def make(name):
        t = tensor(_contiguous(arrays[name]))
        return t.to(device) if device is not None else t

    if _STRUCTURE_KEY not in metadata:
        return {name: make(name) for name in arrays}
    try:
        structure = json.loads(metadata[_STRUCTURE_KEY])
        return _decode(structure, make)
    except (ValueError, KeyError, TypeError) as exc:
        raise ArgumentError(f"em.load: {path!r} has a damaged execmode structure in its "
                            f"metadata ({type(exc).__name__}: {exc})") from None


def _contiguous(array: np.ndarray) -> np.ndarray:
    # Not np.ascontiguousarray: it turns a 0-d array (a step count) into shape (1,).
    array = np.asarray(array)
    return array if array.flags.c_contiguous else array.copy(order="C")


# --- structure <-> JSON -------------------------------------------------------------------
def _join(prefix: str, key) -> str:
    return f"{prefix}.{key}" if prefix else str(key)


def _unique(name: str, arrays: dict) -> str:
    # "a.b" from {"a": {"b": t}} and {"a.b": t} collide: the second gets a suffix.
    if name not in arrays:
        return name or "tensor"
    k = 1
    while f"{name}#{k}" in arrays:
        k += 1
    return f"{name}#{k}"


def _encode(obj, path: str, arrays: dict):
    if isinstance(obj, Tensor | np.ndarray):
        data = obj.numpy() if isinstance(obj, Tensor) else obj
        name = _unique(path, arrays)
        arrays[name] = _contiguous(data)
        return {"tensor": name}
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, _LEAVES):
        return {"value": obj}
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if isinstance(key, np.generic):
                key = key.item()
            if not isinstance(key, _LEAVES):
                raise ArgumentError(f"em.save: a dict key at {path or 'the top'!r} is a "
                                    f"{type(key).__name__}; keys must be strings or numbers")
            items.append([key, _encode(value, _join(path, key), arrays)])
        return {"dict": items}
    if isinstance(obj, list | tuple):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, _join(path, i), arrays) for i, v in enumerate(obj)]}
    what = "a function" if callable(obj) else f"a {type(obj).__name__}"
    raise ArgumentError(f"em.save: {path or 'the object'!r} is {what}; checkpoints hold "
                        f"tensors, numbers, strings, None, and dicts/lists/tuples of them "
                        f"(never pickled objects)")


def _decode(node, make):
    if not isinstance(node, dict) or len(node) != 1:
        raise ValueError(f"unexpected node {node!r:.80}")
    (kind, value), = node.items()
    if kind == "tensor":
        return make(value)
    if kind == "value":
        if not isinstance(value, _LEAVES):
            raise ValueError(f"unexpected value {value!r:.80}")
        return value
    if kind == "dict":
        return {key: _decode(v, make) for key, v in value}
    if kind == "list":
        return [_decode(v, make) for v in value]
    if kind == "tuple":
        return tuple(_decode(v, make) for v in value)
    raise ValueError(f"unknown node kind {kind!r}")


__all__ = ["load", "save"]
