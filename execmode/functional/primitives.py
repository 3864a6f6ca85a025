"""The door from the function API to dispatch: ``apply`` (an OpDef and its inputs) and
``apply_op`` (an op by its name, as the vjp rules in ``ops/`` call it)."""

from __future__ import annotations

from ..dispatch import apply
from ..ops import OPS


def apply_op(name: str, *inputs, **attrs):
    """Dispatch a primitive by name (used by vjp rules)."""
    return apply(OPS[name], *inputs, **attrs)
