"""Instrumentation: event types and the hook points that profilers and the debugger use.

Zero cost when nobody listens: dispatch checks one module flag per op, which it keeps in
step by subscribing to :func:`on_listeners_changed` (this module sits below dispatch and
never imports it). Listeners are objects with any of these methods (all optional):

* ``before_op(op, inputs, attrs)`` - an eager op is about to run (the debugger pauses here);
* ``on_op(event, output)`` - an eager op finished (``output`` is the result Tensor);
* ``on_event(event)`` - every other event but kernel runs: trace, retrace, graph break,
  pass, compile, memory;
* ``on_kernel(event)`` - a step of a compiled plan ran (a "kernel" Event). Asking for these
  makes plans run step by step in Python, with an event per step: costly for small
  kernels. To know what kernels cost, set ``wants_kernel_times = True`` instead and read
  :mod:`execmode.kernel_clock`'s sums, which compiled programs keep themselves;
* ``before_kernel(plan, step_index, values)`` - a compiled plan is about to run a step
  (the debugger steps kernel by kernel here);
* ``after_kernel(plan, step_index, output)`` - a step finished; ``output`` is its array
  (tensor breakpoints check it). Kernel *events* never carry arrays.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import NamedTuple

from execmode import kernel_clock


class OpEvent(NamedTuple):
    """One eager op: what ran, on what, where in the user's code, and how long it took.

    A tuple, so that dispatch can build it in one step (``tuple.__new__``) on the hot path.
    """

    seq: int
    op: str
    attrs: dict
    inputs: tuple        # one (shape, dtype, device) per tensor input; scalars as themselves
    output: tuple        # (shape, dtype, device)
    start_ns: int
    end_ns: int
    bytes_allocated: int
    scope: str
    location: object     # SourceLocation or None
    mode: str = "eager"

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns

    def __repr__(self) -> str:
        where = f" at {self.location.short}" if self.location else ""
        return f"<OpEvent #{self.seq} {self.op} {self.duration_ns} ns{where}>"


# Event kinds and the fields their ``data`` carries. Graph ids are strings such as
# "train_step#0" (function qualname, signature index); node ids are ints ("%7").
EVENT_KINDS = {
    # A function was traced into a graph segment.
    "trace": ("function", "graph_id", "segment", "signature", "node_count", "location"),
    # A jitted function traced again for a new signature (or a broken guard), or a call it
    # ran eagerly instead (past the retrace limit; a function with breaks' timed samples).
    "retrace": ("function", "reason", "signature"),
    # Python needed a concrete value: the segment before was compiled and run.
    "graph_break": ("function", "graph_id", "reason", "op", "location", "segment_before",
                    "segment_after"),
    # A whole graph's IR (text and JSON) and its per-pass record, once per compile.
    # A graph compiled: as traced and as lowered (text and JSON), and the plan's steps.
    "graph": ("function", "graph_id", "ir_text", "ir_json", "lowered_text", "lowered_json",
              "structural_hash", "compile_ns", "steps"),
    # One per pass of that compile: the PassResult as JSON (rewrites: [{sentence, nodes,
    # kind}], diff: {kept, changed, removed, added, merged, fused}, the snapshot's IR).
    "pass": ("graph_id", "index", "name", "wall_ns", "node_count", "kernel_count",
             "buffer_count", "rewrites", "diff", "ir_text", "ir_json"),
    # One translation unit compiled (or found in the cache): "kernels" (a plan's fused
    # kernels) or "program" (a whole-graph program); its kernels are its children, each
    # {kernel, source, member_nodes, member_ops}, and its compile_ns is counted once
    # (profilers/compiles.py also reads the per-kernel form of older sessions).
    "compile": ("graph_id", "what", "language", "backend", "compile_ns", "cache_hit",
                "kernels"),
    # One step of a compiled plan ran: a fused kernel, a library call or a single op.
    "kernel": ("graph_id", "kernel", "step_kind", "member_nodes", "member_ops", "bytes",
               "output_shape", "output_dtype", "device", "location", "scope"),
    # The memory plan of a graph: planned vs unplanned peak, and the eager peak.
    "memory_plan": ("graph_id", "planned_peak", "unplanned_peak", "eager_peak", "buffers",
                    "assignment", "inplace"),
    # Live and peak bytes per device, sampled as ops allocate and free.
    "memory": ("device", "live_bytes", "peak_bytes"),
    # Free-form marks (a user's em.debug_print, a profiler calibration).
    "mark": ("name", "text"),
}


@dataclass
class Event:
    """Graph-mode and bookkeeping events. ``kind`` is a key of EVENT_KINDS; ``data`` holds
    its fields; ``start_ns``/``end_ns`` are ``time.perf_counter_ns`` stamps."""

    kind: str  # trace | retrace | graph_break | pass | compile | kernel | memory | mark
    data: dict = field(default_factory=dict)
    start_ns: int = 0
    end_ns: int = 0

    def __getattr__(self, name):
        try:
            return self.__dict__["data"][name]
        except KeyError:
            raise AttributeError(name) from None


_listeners: list = []
_on_op: list = []
_before_op: list = []
_on_event: list = []
_on_kernel: list = []
_before_kernel: list = []
_after_kernel: list = []
_seq = itertools.count()
# Called with (op events wanted, before-op calls wanted) whenever the listeners change.
_flag_subscribers: list = []


def on_listeners_changed(callback) -> None:
    """Call ``callback(on_op, before_op)`` now and whenever listeners come or go: dispatch
    keeps its per-op flags this way."""
    _flag_subscribers.append(callback)
    callback(bool(_on_op or _before_op), bool(_before_op))


def next_seq() -> int:
    return next(_seq)


def upcoming_seq() -> int:
    """The seq the next op event will take, without taking it: a recorder numbers its
    session's ops from there, and a number taken would be a gap in an outer recording.
    (itertools.count tells its next value only in its repr: "count(8412)".)"""
    return int(repr(_seq)[len("count("):-1])


def add_listener(listener) -> None:
    """Attach a listener (see the module docstring for the methods it may have)."""
    if listener in _listeners:
        return
    _listeners.append(listener)
    if getattr(listener, "wants_kernel_times", False):
        kernel_clock.want(listener)
    _rebuild()


def remove_listener(listener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)
        kernel_clock.release(listener)
        _rebuild()


def listeners() -> tuple:
    return tuple(_listeners)


class listening:  # noqa: N801
    """``with instrument.listening(obj): ...`` attaches ``obj`` for the block."""

    def __init__(self, listener):
        self.listener = listener

    def __enter__(self):
        add_listener(self.listener)
        return self.listener

    def __exit__(self, *exc):
        remove_listener(self.listener)
        return False


def _rebuild() -> None:
    _on_op[:] = [lst.on_op for lst in _listeners if hasattr(lst, "on_op")]
    _before_op[:] = [lst.before_op for lst in _listeners if hasattr(lst, "before_op")]
    _on_event[:] = [lst.on_event for lst in _listeners if hasattr(lst, "on_event")]
    _on_kernel[:] = [lst.on_kernel for lst in _listeners if hasattr(lst, "on_kernel")]
    _before_kernel[:] = [lst.before_kernel for lst in _listeners if hasattr(lst, "before_kernel")]
    _after_kernel[:] = [lst.after_kernel for lst in _listeners if hasattr(lst, "after_kernel")]
    for callback in _flag_subscribers:
        callback(bool(_on_op or _before_op), bool(_before_op))


def emit(event) -> None:
    """Send a non-op event to every listener that takes events."""
    for fn in _on_event:
        fn(event)


def emit_kernel(event) -> None:
    """Send a kernel run's event to every listener that asked for them (``on_kernel``)."""
    for fn in _on_kernel:
        fn(event)


def is_listening() -> bool:
    return bool(_listeners)


def op_started(op, inputs, attrs) -> None:
    for fn in _before_op:
        fn(op, inputs, attrs)


def op_finished(event: OpEvent, output) -> None:
    for fn in _on_op:
        fn(event, output)
