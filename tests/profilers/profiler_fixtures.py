"""A fixed session for the profiler tests: every table filled with known rows.

Written through the real SessionWriter from hand-made events whose timestamps, shapes and
sources are constants, so exporters can be checked on exact inputs. The graph-mode events
carry realistic data of every kind in ``execmode.instrument.EVENT_KINDS``, as the jit will
emit them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from execmode.profilers.rows import Summary
from execmode.profilers.writer import (
    ComparisonRow,
    MemorySample,
    OutputLine,
    SampleRow,
    SessionWriter,
    SummarizedOp,
)

from execmode.backend import CPU
from execmode.instrument import Event, OpEvent
from execmode.source import SourceLocation

T0 = 1_000_000_000  # the session's start on the recording clock
HERE = os.path.abspath(__file__)
SCRIPTS = Path(__file__).resolve().parent / "scripts"
F32 = np.dtype("float32")


def _graph_break_example(loss):  # never called: its second line is the quoted source
    if bool(loss > 0):  # the graph break in the fixed session
        return 1
    return 0


# A real line of this file, so reports can show the source text of the graph break.
BREAK_LINE = _graph_break_example.__code__.co_firstlineno + 1
BREAK_SOURCE = "if bool(loss > 0):  # the graph break in the fixed session"
USER = SourceLocation(HERE, 30, "train_step")
BREAK_AT = SourceLocation(HERE, BREAK_LINE, "train_step")


def f32(*shape):
    return (tuple(shape), F32, CPU)


def fixed_ops() -> list:
    """Six eager ops, 10 us apart, with scopes, sources and one NaN-producing op."""
    specs = [
        # seq, op, attrs, inputs, output, dur, bytes, scope
        (0, "random_normal", {"shape": (32, 64)}, (), f32(32, 64), 3000, 8192, ""),
        (1, "matmul", {}, (f32(32, 64), f32(64, 128)), f32(32, 128), 5000, 16384,
         "mlp/fc1"),
        (2, "add", {}, (f32(32, 128), 0.5), f32(32, 128), 1000, 16384, "mlp/fc1"),
        (3, "maximum", {}, (f32(32, 128), 0), f32(32, 128), 1000, 16384, "mlp"),
        (4, "sum", {"axis": (1,), "keepdims": False}, (f32(32, 128),), f32(32), 2000, 128,
         ""),
        (5, "log", {}, (f32(32),), f32(32), 500, 128, ""),
    ]
    events = []
    for i, (seq, op, attrs, inputs, output, dur, nbytes, scope) in enumerate(specs):
        start = T0 + 10_000 * (i + 1)
        events.append(OpEvent(seq, op, attrs, inputs, output, start, start + dur, nbytes,
                              scope, USER))
    return events


def fixed_events() -> list[Event]:
    """One realistic event of every graph-mode kind, on a 'train_step' graph."""
    g = "train_step#0"
    t = T0 + 100_000
    ir = "{ lambda a:f32[32,64] . let b:f32[32,128] = matmul a w in ( b ) }"
    return [
        Event("trace", {"function": "train_step", "graph_id": g, "segment": 0,
                        "signature": "(f32[32,64]@cpu,)", "node_count": 7,
                        "location": USER}, t, t + 40_000),
        Event("graph", {"function": "train_step", "graph_id": g, "ir_text": ir,
                        "ir_json": {"nodes": [{"id": 0, "op": "matmul"}]}}, t + 40_000,
              t + 40_000),
        Event("pass", {"graph_id": g, "index": 0, "name": "fold_constants", "wall_ns": 12_000,
                       "node_count": 7, "kernel_count": 0, "buffer_count": 7,
                       "rewrites": ["folded %3 = mul 2.0, 3.0 -> 6.0"], "diff": "-%3\n+%3",
                       "ir_text": ir}, t + 41_000, t + 53_000),
        Event("pass", {"graph_id": g, "index": 1, "name": "fuse_elementwise", "wall_ns": 20_000,
                       "node_count": 4, "kernel_count": 1, "buffer_count": 4,
                       "rewrites": ["fused %1,%2,%3 into k0"], "diff": "", "ir_text": ir},
              t + 53_000, t + 73_000),
        Event("compile", {"graph_id": g, "kernel": "k0", "language": "c",
                          "source": "void k0(float *x) { /* ... */ }", "compile_ns": 50_000_000,
                          "cache_hit": False, "member_nodes": [1, 2, 3],
                          "member_ops": ["add", "maximum", "sum"], "backend": "c"},
              t + 80_000, t + 130_000),
        Event("memory_plan", {"graph_id": g, "planned_peak": 16_512, "unplanned_peak": 33_024,
                              "eager_peak": 49_536, "buffers": 3}, t + 131_000, t + 131_000),
        Event("kernel", {"graph_id": g, "kernel": "matmul0", "step_kind": "library",
                         "member_nodes": [0], "member_ops": ["matmul"], "bytes": 16384,
                         "output_shape": (32, 128), "output_dtype": F32, "device": CPU,
                         "location": USER, "scope": "mlp/fc1"}, t + 140_000, t + 144_000),
        Event("kernel", {"graph_id": g, "kernel": "k0", "step_kind": "fused",
                         "member_nodes": [1, 2, 3], "member_ops": ["add", "maximum", "sum"],
                         "bytes": 128, "output_shape": (32,), "output_dtype": F32,
                         "device": CPU, "location": USER, "scope": "mlp"},
              t + 144_000, t + 145_500),
        Event("memory", {"device": "cpu", "live_bytes": 16_512, "peak_bytes": 16_640},
              t + 145_500, t + 145_500),
        Event("graph_break", {"function": "train_step", "graph_id": g, "reason": "bool()",
                              "op": "greater", "location": BREAK_AT, "segment_before": 0,
                              "segment_after": 1}, t + 150_000, t + 150_000),
        Event("retrace", {"function": "train_step",
                          "reason": "arg 0 shape (32, 64) -> (16, 64)",
                          "signature": "(f32[16,64]@cpu,)"}, t + 160_000, t + 160_000),
        Event("mark", {"name": "epoch 1", "text": "after the first step"}, t + 170_000,
              t + 170_000),
    ]


FIXED_SAMPLES = [
    SampleRow("thread (1): MainThread",
              f"<module> ({HERE}:1);train_step ({HERE}:30)", 40, "user"),
    SampleRow("thread (1): MainThread",
              f"<module> ({HERE}:1);train_step ({HERE}:30);"
              "run_eager (/x/execmode/dispatch.py:120)", 25, "execmode"),
    SampleRow("thread (1): MainThread",
              f"<module> ({HERE}:1);train_step ({HERE}:30);"
              "matmul (/x/execmode/ops/linalg.py:10);exec_blas (/lib/libopenblas.so)",
              35, "kernels"),
]
FIXED_COMPARISONS = [
    ComparisonRow("train_step", "train_step#0", "matmul0", "library", '["matmul"]', 1, 5000,
                  4000, 16384, 16384, 10, 7, "undecided (overlap)"),
    ComparisonRow("train_step", "train_step#0", "k0", "fused", '["add", "maximum", "sum"]',
                  3, 4000, 1500, 32896, 128, 10, 7, "2.67x"),
]


def write_fixed_session(path) -> Path:
    """Create the fixed session at ``path`` and return its path."""
    meta = {"script": "/work/train.py", "argv": ["train.py", "--steps", "1"],
            "created": "2026-01-01T00:00:00+00:00",
            "machine": {"host": "fixed", "cpu": "test CPU", "cpus": 2, "python": "3.11",
                        "numpy": "2.4"},
            "options": {"summaries": True, "memory": True, "calibrate": True},
            "pyspy": {"status": "ok", "rate": 100, "samples": 100},
            "calibration": {"ops": 2000, "no_listener_ns": 1000, "null_listener_ns": 3000,
                            "recorder_ns": 9000, "instrumentation_ns": 2000,
                            "overhead_ns": 8000},
            "t0_ns": T0, "end_ns": T0 + 200_000,
            "exit": {"kind": "normal", "code": 0}}
    writer = SessionWriter(path, meta)
    ops = fixed_ops()
    for ev in ops[:-1]:
        writer.put(ev)
    writer.put(SummarizedOp(ops[-1], Summary(-2.0, 3.5, 0.25, 1.5, 2, 1)))
    for ev in fixed_events():
        writer.put(ev)
    for i in range(5):
        live = 8192 * (i + 1)
        writer.put(MemorySample(T0 + 10_000 * (i + 1) + 3000, "cpu", live, live, "eager"))
    writer.put(OutputLine(T0 + 50_000, "stdout", "step 0 loss 1.234"))
    writer.put(OutputLine(T0 + 60_000, "stderr", "warning: <b>not html</b>"))
    for row in FIXED_SAMPLES + FIXED_COMPARISONS:
        writer.put(row)
    writer.close()
    return Path(path)


def run_python(*args, cwd=None, env=None, timeout=120, **kwargs) -> subprocess.CompletedProcess:
    """Run ``python ARGS`` in a child process and capture its output as text."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout, **kwargs)
