"""The Array API's inspection namespace, ``em.__array_namespace_info__()``: which devices,
dtypes and capabilities this execmode has. It answers from the engine's own tables
(``dtypes.py``, the backend), so it stays true when a dtype or a device is added."""

from __future__ import annotations

from ..backend import cuda_is_available
from ..dtypes import DEFAULT_COMPLEX, DEFAULT_FLOAT, SUPPORTED, int64
from ..errors import ArgumentError
from ..op_errors import op_error


def _of_kind(kind: str) -> dict:
    """The dtypes of one NumPy kind letter by name, narrowest first."""
    return {dt.name: dt for dt in sorted(SUPPORTED, key=lambda d: d.itemsize)
            if dt.kind == kind}


# The dtypes by the standard's kind names, from dtypes.SUPPORTED.
_KINDS = {
    "bool": _of_kind("b"),
    "signed integer": _of_kind("i"),
    "unsigned integer": _of_kind("u"),
    "real floating": _of_kind("f"),
    "complex floating": _of_kind("c"),
}
_KINDS["integral"] = {**_KINDS["signed integer"], **_KINDS["unsigned integer"]}
_KINDS["numeric"] = {**_KINDS["integral"], **_KINDS["real floating"],
                     **_KINDS["complex floating"]}


class ArrayNamespaceInfo:
    """What ``__array_namespace_info__()`` returns (the standard's ``Info`` object)."""

    def capabilities(self) -> dict:
        # Boolean masks and nonzero work eagerly, and under jit as graph breaks.
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": None}

    def default_device(self) -> str:
        return "cpu"

    def devices(self) -> list:
        # "cuda" only where CuPy finds a GPU (asking does not import CuPy's kernels).
        return ["cpu", "cuda"] if cuda_is_available() else ["cpu"]

    def default_dtypes(self, *, device=None) -> dict:
        self._check_device(device)
        # float32 as PyTorch (and em.tensor) make floats, and its complex; int64 for ints
        # and indices
        return {"real floating": DEFAULT_FLOAT, "complex floating": DEFAULT_COMPLEX,
                "integral": int64, "indexing": int64}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """The dtypes of ``kind`` (a kind name, a tuple of them, or None for all) by name."""
        self._check_device(device)
        if kind is None:
            return {**_KINDS["bool"], **_KINDS["numeric"]}
        kinds = kind if isinstance(kind, tuple) else (kind,)
        out = {}
        for k in kinds:
            if k not in _KINDS:
                raise op_error(ArgumentError, "__array_namespace_info__().dtypes", (),
                               f"unknown kind {k!r}; the kinds are {', '.join(_KINDS)}")
            out.update(_KINDS[k])
        return out

    def _check_device(self, device) -> None:
        if device is not None and str(device).split(":")[0] not in self.devices():
            raise op_error(ArgumentError, "__array_namespace_info__", (),
                           f"unknown device {device!r}; the devices are {self.devices()}")


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The Array API's inspection namespace: devices, default dtypes, dtypes, capabilities."""
    return ArrayNamespaceInfo()
