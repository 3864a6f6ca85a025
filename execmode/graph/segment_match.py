"""Is the segment being traced the one the previous call traced at this place?

A function with graph breaks re-runs its Python under the tracer at every call. Most calls
trace the very segments the call before traced: the same ops, in the same order, on
operands of the same types. While that holds, the tracer need not infer each op's type
again (the previous call's node says it), verify the graph, or hash it to find its
compiled plan: the previous call's segment at the same index already has it.

The comparison is exact where the plan depends on it (op, operand ids, literals and
attributes with their types and bits, the result's type and device) and leaves out only
what a plan never reads (the scope, the source line, an input's label). Node ids count up
from the function's start, so equal ids mean equal positions in the trace; one node that
differs ends the match for the rest of its segment, and the segment then takes the full
path (type rules, verification, the structural hash).
"""

from __future__ import annotations

import os

import numpy as np

from .ir import Literal, Node

# EXECMODE_SEGMENT_MATCH=0 sends every call down the full path. The variable is read at
# import, the flag at each trace: a test or a benchmark sets it to compare the two paths.
MATCHING = os.environ.get("EXECMODE_SEGMENT_MATCH", "1") != "0"


def same_node(a: Node, b: Node) -> bool:
    """Would a plan compiled for a graph holding ``b`` serve the same graph holding ``a``?"""
    if a is b:
        return True
    return (a.id == b.id and a.op == b.op and a.shape == b.shape and a.dtype == b.dtype
            and a.device == b.device and not a.body and not b.body
            and same_operands(a.inputs, b.inputs) and same_value(a.attrs, b.attrs))


def same_operands(a: tuple, b: tuple) -> bool:
    """``same_value`` for two nodes' inputs: node ids (ints) and Literals."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.__class__ is int:
            if y.__class__ is not int or x != y:
                return False
        elif x.__class__ is Literal and y.__class__ is Literal:
            u, v = x.value, y.value
            if u is v:  # (one object: a constant of the user's code, read at each call)
                continue
            kind = u.__class__
            if kind is not v.__class__ or not (
                    u.hex() == v.hex() if kind is float else
                    u == v if kind is int or kind is bool else same_value(u, v)):
                return False
        elif not same_value(x, y):
            return False
    return True


def attrs_as_before(attrs: dict, theirs: tuple) -> bool:
    """Are an op's attributes (a dict) the previous call's node's (sorted (name, value)
    pairs, ir.make_attrs)? The same names (as many, each found), each value the same
    object or ``same_value``; the dict is not sorted into pairs to ask."""
    if len(attrs) != len(theirs):
        return False
    for name, y in theirs:
        x = attrs.get(name, _ABSENT)
        if x is not y and (x is _ABSENT or not same_value(x, y)):
            return False
    return True


_ABSENT = object()


def same_value(a, b) -> bool:
    """Equal, and of the same type: ``1``, ``1.0`` and ``True`` promote differently, and
    ``0.0`` and ``-0.0`` give different products, so neither is the other."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is tuple or kind is list or (isinstance(a, tuple) and hasattr(a, "_fields")):
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):  # (one object is itself: None, True, an attribute's name)
            if x is not y and not same_value(x, y):
                return False
        return True
    if kind is float:
        return a.hex() == b.hex()
    if isinstance(a, (np.ndarray, np.generic)):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, (complex, slice, dict)):
        return repr(a) == repr(b)
    try:
        return (a == b) is True
    except Exception:  # noqa: BLE001 - an object that cannot say: not the same
        return False


def matched_segment(builder):
    """The previous call's segment, if the builder's finished graph is node for node the
    one it traced (inputs and outputs included); else None."""
    expected = builder.expected
    if expected is None:
        return None
    mine, theirs = builder.graph, expected.graph
    if len(mine.nodes) != len(theirs.nodes) or mine.inputs != theirs.inputs or \
            mine.outputs != theirs.outputs:
        return None
    return expected
