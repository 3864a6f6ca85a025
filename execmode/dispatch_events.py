"""The OpEvent of an eager op, given to the listeners: dispatch's general path (run_eager)
and the Python operators' and unary functions' fast paths build it here. The C operators
and the op ring build the same tuple in C (execmode/native: eager_operators.c's
new_event), from what dispatch's namespace holds of this module (native/__init__.py's
MODULE_STATE): change one, change both (tests/codegen/test_eager_c_events.py compares
them)."""

from __future__ import annotations

import sys
import time

import numpy as np

from . import scope as _scope
from ._tensor import Tensor
from .backend import CPU
from .instrument import OpEvent, _on_op, _seq  # shared objects: the list is mutated in place
from .source import _locations, user_location

_perf_ns = time.perf_counter_ns
_getframe = sys._getframe
_next_seq = _seq.__next__
_ndarray = np.ndarray

_tuple_new = tuple.__new__
_EAGER = "eager"
_NO_ATTRS: dict = {}


def emit_operator_event(name, sd, od, out, t, t0, depth=2):
    """The OpEvent of a Python operator's op (``sd <name> od`` gave ``out``, wrapped as
    ``t``) to the listeners. ``depth``: the frames from here out to the operator's caller,
    usually the user's own line. The C operators build the same event in C
    (eager_operators.c, new_event): change one, change both (tests/codegen/
    test_eager_operators.py compares them)."""
    t1 = _perf_ns()
    f = _getframe(depth)
    loc = _locations.get((id(f.f_code), f.f_lasti))
    loc = loc[1] if loc is not None else user_location(f)
    ev = _tuple_new(OpEvent, (
        _next_seq(), name, _NO_ATTRS,
        ((sd.shape, sd.dtype, CPU), (od.shape, od.dtype, CPU) if od.__class__ is _ndarray else od),
        (out.shape, out.dtype, CPU), t0, t1, out.nbytes, _scope._state.current, loc, _EAGER,
    ))
    for fn in _on_op:
        fn(ev, t)


def emit_unary_event(name, xd, out, t, t0, skip):
    """The OpEvent of a unary function's fast path (make_unary_function: ``xd`` gave
    ``out``, wrapped as ``t``) to the listeners: run_eager's event for the op (_emit_op),
    with the user's line found as emit_operator_event finds it, ``skip`` frames out from
    the caller's."""
    t1 = _perf_ns()
    f = _getframe(skip + 1)
    loc = _locations.get((id(f.f_code), f.f_lasti))
    loc = loc[1] if loc is not None else user_location(f)
    ev = _tuple_new(OpEvent, (
        _next_seq(), name, _NO_ATTRS, ((xd.shape, xd.dtype, CPU),), (out.shape, out.dtype, CPU),
        t0, t1, out.nbytes if out.base is None else 0, _scope._state.current, loc, _EAGER,
    ))
    for fn in _on_op:
        fn(ev, t)


def emit_op(op, inputs, attrs, t, out, t0, device):
    """run_eager's OpEvent for ``op`` (its operands described, the user's line found three
    frames out), to the listeners."""
    t1 = _perf_ns()
    if len(inputs) == 1:  # most ops: no generator (its frame cost ~0.3 us per op)
        x = inputs[0]
        described = ((x._data.shape, x._data.dtype, device) if isinstance(x, Tensor) else x,)
    else:
        described = tuple(
            (x._data.shape, x._data.dtype, device) if isinstance(x, Tensor) else x
            for x in inputs
        )
    nbytes = out.nbytes if out.base is None else 0  # views allocate nothing
    # The user's line: the walk starts at the caller of apply (or of the tracer's eager
    # step), frame 3 from here; the frames below are dispatch's own, and _getframe does
    # not make frame objects of the frames it passes.
    try:
        caller = _getframe(3)
    except ValueError:  # apply called with no Python frame above it
        caller = _getframe(2)
    ev = _tuple_new(OpEvent, (
        _next_seq(), op.name, attrs, described, (out.shape, out.dtype, device), t0, t1,
        nbytes, _scope._state.current, user_location(caller), _EAGER,
    ))
    for fn in _on_op:
        fn(ev, t)
