"""``torch.save`` / ``torch.load`` on execmode's checkpoints: safetensors files, never
pickle (``execmode/checkpoint.py``).

What PyTorch programs save, a ``state_dict()`` (the model's, the optimizer's, a dict of
both with the step count), saves and loads as it is; ``map_location`` says where the
tensors go. A whole module (``torch.save(model, path)``) is refused with the way to do it:
a module is code, and loading code from a file is what pickle does and execmode does not.
A file written by PyTorch's ``torch.save`` is a pickle, which is refused too; re-save it
with ``safetensors.torch.save_file(model.state_dict(), path)``.
"""

from __future__ import annotations

import os
import tempfile

from .. import checkpoint
from ..backend import Device
from ..errors import ArgumentError
from ..nn.module import Module
from ..optim.optimizer import Optimizer


def _refuse_objects(obj, path="") -> None:
    if isinstance(obj, Module) or isinstance(getattr(type(obj), "_orig_mod", None), property) \
            and isinstance(obj._orig_mod, Module):  # torch.compile(model) is the model
        where = f" (at {path!r})" if path else ""
        raise ArgumentError(
            f"torch.save: a whole module{where} cannot be saved: execmode saves state, never "
            "pickled objects. Save model.state_dict() and load it into a model you build: "
            "torch.save(model.state_dict(), path); model.load_state_dict(torch.load(path))")
    if isinstance(obj, Optimizer):
        raise ArgumentError("torch.save: save optimizer.state_dict(), not the optimizer "
                            "(load it with optimizer.load_state_dict(torch.load(path)))")
    if isinstance(obj, dict):
        for key, value in obj.items():
            _refuse_objects(value, f"{path}.{key}" if path else str(key))
    elif isinstance(obj, list | tuple):
        for i, value in enumerate(obj):
            _refuse_objects(value, f"{path}.{i}" if path else str(i))


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Write ``obj`` (a state_dict, or nested dicts/lists of tensors, numbers and strings)
    to ``f`` (a path or a writable binary file) in the safetensors format."""
    _refuse_objects(obj)
    if isinstance(f, str | os.PathLike):
        checkpoint.save(obj, f)
        return
    if not hasattr(f, "write"):
        raise ArgumentError(f"torch.save: f must be a path or a binary file, got "
                            f"{type(f).__name__}")
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "checkpoint.safetensors")
        checkpoint.save(obj, path)
        with open(path, "rb") as saved:
            f.write(saved.read())


def _device_of(map_location):
    """Where ``map_location`` puts tensors: a device, or None for the CPU."""
    if map_location is None or callable(map_location) and not isinstance(map_location, Device):
        # lambda storage, loc: storage (the usual callable) keeps them on the CPU
        return None
    if isinstance(map_location, dict):
        targets = {str(v) for v in map_location.values()}
        if len(targets) != 1:
            raise ArgumentError("torch.load: a map_location dict must send every location to "
                                f"one device here, got {sorted(targets)}")
        return targets.pop()
    return map_location


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **_):
    """Read what :func:`save` wrote (or any safetensors file) from ``f`` (a path or a
    readable binary file), with tensors on ``map_location`` ("cpu", "cuda:0", a
    ``torch.device``, a dict sending locations to one device; a callable keeps them on the
    CPU). ``weights_only`` is accepted: nothing here can load anything else."""
    device = _device_of(map_location)
    if isinstance(f, str | os.PathLike):
        return _load_path(os.fspath(f), device)
    if not hasattr(f, "read"):
        raise ArgumentError(f"torch.load: f must be a path or a binary file, got "
                            f"{type(f).__name__}")
    data = f.read()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "checkpoint.safetensors")
        with open(path, "wb") as out:
            out.write(data)
        return _load_path(path, device)


def _load_path(path: str, device):
    try:
        return checkpoint.load(path, device=device)
    except ArgumentError as exc:
        if _is_pickle(path):
            raise ArgumentError(
                f"torch.load: {path!r} was written by PyTorch's torch.save (a pickle), which "
                "execmode never loads: in PyTorch, save the state_dict with "
                "safetensors.torch.save_file(model.state_dict(), path) and load that") from None
        raise exc from None


def _is_pickle(path: str) -> bool:
    with open(path, "rb") as f:
        head = f.read(4)
    return head[:2] in (b"PK", b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")


__all__ = ["load", "save"]

