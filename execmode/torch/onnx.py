"""``torch.onnx``: ONNX export is not supported. The module exists so that programs that
import it and export only when asked (pytorch/examples' word_language_model:
``--onnx-export``) run; ``export`` refuses, naming what to use instead."""

from __future__ import annotations

from ..errors import ArgumentError


def export(model, args=None, f=None, *rest, **kwargs) -> None:
    """Refused: execmode has no ONNX exporter (save the state_dict with ``torch.save``)."""
    raise ArgumentError("torch.onnx.export is not supported by execmode: save the model's "
                        "state_dict with torch.save(model.state_dict(), path)")


def is_in_onnx_export() -> bool:
    """False: nothing is ever being exported."""
    return False


__all__ = ["export", "is_in_onnx_export"]
