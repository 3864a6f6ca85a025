"""Shape/dtype inference without running an op, the eager path's input checks, and the
errors that name the op, its operands and the user's line: what dispatch and the tracer
(graph/binding.py) share when an op cannot run."""

from __future__ import annotations

import numpy as np

from ._tensor import SCALAR_TYPES, Tensor
from .backend import as_device
from .errors import ArgumentError, DeviceError, ExecmodeError, unforeseen_failure_class
from .op_errors import op_error
from .ops.registry import Aval, RuleError, infer_aval


def aval_of(x):
    """A Tensor's Aval; Python scalars pass through (they stay weakly typed)."""
    if isinstance(x, Tensor):
        return Aval(x.shape, x.dtype, x.device)
    return x.item() if isinstance(x, np.generic) else x


def infer(op, inputs, attrs) -> Aval:
    """Output shape/dtype/device of ``op`` without running it (raises RuleError)."""
    device = None if any(isinstance(x, Tensor) for x in inputs) else as_device(attrs.get("device"))
    return infer_aval(op, [aval_of(x) for x in inputs], attrs, device)


def check_inputs(op, inputs):
    """The eager path's input checks, for the tracer: tensors or scalars, one device."""
    devices = set()
    for x in inputs:
        if isinstance(x, Tensor):
            devices.add(x.device)
        elif not (x.__class__ in SCALAR_TYPES or isinstance(x, np.generic)):
            raise not_a_tensor(op, inputs, x)
    if len(devices) > 1:
        raise mixed_devices(op, inputs)


def explain_failure(op, inputs, attrs, exc) -> ExecmodeError:
    """Turn a failure inside an op into an ExecmodeError naming op, operands and line."""
    if isinstance(exc, RuleError):
        return op_error(exc.cls, op.name, inputs, exc.problem)
    try:
        infer(op, inputs, attrs)
    except RuleError as rule:
        return op_error(rule.cls, op.name, inputs, rule.problem)
    except Exception:  # a rule that itself fails must not hide the original error
        pass
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return op_error(unforeseen_failure_class(exc), op.name, inputs,
                    f"{type(exc).__name__}: {text}")


def not_a_tensor(op, inputs, x) -> ExecmodeError:
    return op_error(ArgumentError, op.name, inputs,
                    f"expected a Tensor or a Python number, got {type(x).__name__} "
                    "(wrap data with em.tensor(...))")


def mixed_devices(op, inputs) -> ExecmodeError:
    names = sorted({str(x.device) for x in inputs if isinstance(x, Tensor)})
    return op_error(DeviceError, op.name, inputs,
                    f"operands are on different devices ({', '.join(names)}); "
                    "move them with .to(device) first")
