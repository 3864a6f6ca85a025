"""A deterministic session file for snapshot tests and screenshots.

The events come from a real run of a small training script (graphs, passes, generated
kernel sources: the engine's own output), frozen in ``demo_events.json`` so that the
snapshots change when the TUI changes, not when a pass or the code generator does. The
times, sizes and cache flags are made up and fixed. To refresh the events after an
intended engine change::

    python tests/tui/fixture_session.py      # rewrites demo_events.json

then update the snapshots (``pytest tests/tui/test_snapshots.py --snapshot-update``).
"""

from __future__ import annotations

import json
import runpy
import sqlite3
import sys
import tempfile
from pathlib import Path

from execmode.profilers import store
from execmode.profilers.store import to_json

from execmode import instrument
from execmode.dtypes import short_name

PROGRAM = '''\
"""A two-layer MLP trained with a jitted step (the execmode TUI's demo)."""
import execmode as em


def forward(x, w1, w2):
    with em.named_scope("mlp"):
        h = em.relu(x @ w1) * 2.0 + 1.0
        g = em.relu(x @ w1) * 2.0 + 1.0      # the same again: CSE merges it
        y = (h + g) @ w2
    return y


def step(x, w1, w2):
    y = forward(x, w1, w2)
    if y.max().item() > 1e6:               # a graph break: Python needs the value
        y = y * 0.0
    return (y * y).mean()


fast = em.jit(step)
w1 = em.ones(16, 32) * 0.01
w2 = em.ones(32, 4) * 0.02
for n in (8, 8, 24):                       # the third call retraces: a new batch size
    loss = fast(em.ones(n, 16), w1, w2)
x = em.ones(8, 16)
h = em.relu(x @ w1)
print("loss", round(float(loss.item()), 4))
'''

OUTPUT = [("stdout", "epoch 1 loss 0.1357"), ("stdout", "epoch 2 loss 0.0912"),
          ("stderr", "warning: learning rate is high"), ("stdout", "loss 0.0735")]


_KINDS = ("kernel", "graph", "pass", "compile", "trace", "retrace", "graph_break",
          "memory_plan")


class _Keeper:
    def __init__(self):
        self.items = []

    def on_op(self, ev, output):
        self.items.append(ev)

    def on_event(self, ev):
        self.items.append(ev)

    on_kernel = on_event  # kernel runs too, step by step


EVENTS_FILE = Path(__file__).with_name("demo_events.json")
_SCRIPT_TOKEN = "<SCRIPT>"


def record_events() -> list[dict]:
    """Run the demo program and keep its events (as JSON-ready dicts)."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "train.py"
        script.write_text(PROGRAM)
        keeper = _Keeper()
        with instrument.listening(keeper):
            runpy.run_path(str(script), run_name="__main__")
        out = []
        for item in keeper.items:
            if isinstance(item, instrument.OpEvent):
                out.append({"type": "op", "op": item.op, "scope": item.scope,
                            "attrs": {k: str(v) for k, v in item.attrs.items()},
                            "inputs": [_tensor(x[0], x[1]) if isinstance(x, tuple) else str(x)
                                       for x in item.inputs],
                            "output": _tensor(item.output[0], item.output[1]),
                            "bytes": item.bytes_allocated, "location": item.location})
            elif item.kind in _KINDS:
                out.append({"type": item.kind, "data": item.data})
        text = to_json(out).replace(str(script), _SCRIPT_TOKEN)
    return json.loads(text)


def build_session(folder: Path) -> Path:
    """Write train.py and demo.emsession (from the frozen events) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "train.py"
    script.write_text(PROGRAM)
    text = EVENTS_FILE.read_text().replace(_SCRIPT_TOKEN, str(script))
    path = folder / "demo.emsession"
    if path.exists():
        path.unlink()
    store.create(path, {
        "script": str(script), "argv": ["train.py"], "t0_ns": 0, "end_ns": 10**9,
        "exit": {"kind": "normal", "code": 0},
        "calibration": {"overhead_ns": 2400, "no_listener_ns": 900, "recorder_ns": 3300},
        "pyspy": {"status": "ok"},
    })
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    _write(conn, json.loads(text))
    conn.execute("COMMIT")
    conn.close()
    return path


class _Locations:
    """Interned source lines, as the store keeps them."""

    def __init__(self):
        self.ids: dict = {}

    def __call__(self, loc) -> int | None:
        if loc is None:
            return None
        if isinstance(loc, dict):
            key = (loc["filename"], loc["lineno"], loc["function"])
        else:
            key = (loc.filename, loc.lineno, loc.function)
        return self.ids.setdefault(key, len(self.ids) + 1)


def _tensor(shape, dtype) -> str:
    name = dtype if isinstance(dtype, str) else short_name(dtype)
    name = {"float32": "f32", "float64": "f64", "int64": "i64", "int32": "i32"}.get(name, name)
    return f"{name}[{','.join(str(d) for d in shape)}]"


def _write(conn, items: list[dict]) -> None:
    location = _Locations()
    ops, kernels, events = [], [], []
    clock = 1_000_000
    for item in items:
        clock += 20_000
        kind = item["type"]
        if kind == "op":
            attrs = ", ".join(f"{k}={v}" for k, v in item["attrs"].items()) or None
            ops.append((len(ops) + 1, item["op"], item["scope"], location(item["location"]),
                        clock, 1_000 + 150 * len(item["op"]), item["bytes"],
                        ", ".join(item["inputs"]), item["output"], "cpu", attrs))
        elif kind == "kernel":
            d = item["data"]
            members = list(d.get("member_ops") or ())
            kernels.append((d["graph_id"], d["kernel"], d["step_kind"],
                            json.dumps(list(d.get("member_nodes") or ())), json.dumps(members),
                            clock, 3_000 + 1_000 * len(members), int(d.get("bytes") or 0),
                            _tensor(d["output_shape"], d["output_dtype"]), "cpu",
                            d.get("scope"), location(d.get("location"))))
        else:
            data = dict(item["data"])
            for key in ("compile_ns", "wall_ns"):
                if key in data:
                    data[key] = 10_000 * (1 + int(data.get("index") or 0))
            if "cache_hit" in data:
                data["cache_hit"] = False
            events.append((kind, clock, clock, data.get("graph_id"), to_json(data)))
    conn.executemany("INSERT INTO locations VALUES (?,?,?,?)",
                     [(i, *key) for key, i in location.ids.items()])
    conn.executemany("INSERT INTO op_events (seq, op, scope, location, start_ns, dur_ns, "
                     "bytes, inputs, output, device, attrs) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                     ops)
    conn.executemany("INSERT INTO kernels (graph_id, kernel, step_kind, member_nodes, "
                     "member_ops, start_ns, dur_ns, bytes, output, device, scope, location) "
                     "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", kernels)
    conn.executemany("INSERT INTO events (kind, start_ns, end_ns, graph_id, data) "
                     "VALUES (?,?,?,?,?)", events)
    memory = [(i * 10_000_000, "cpu", 4096 * (1 + i % 7) + 1024 * i, 4096 * 8 + 1024 * i,
               "eager") for i in range(40)]
    conn.executemany("INSERT INTO memory (ts_ns, device, live_bytes, peak_bytes, source) "
                     "VALUES (?,?,?,?,?)", memory)
    conn.executemany("INSERT INTO output (ts_ns, stream, text) VALUES (?,?,?)",
                     [(i, s, t) for i, (s, t) in enumerate(OUTPUT)])
    conn.executemany("INSERT INTO samples (thread, stack, count, category) VALUES (?,?,?,?)",
                     [("main", "train.py", 61, "user"), ("main", "dispatch", 22, "execmode"),
                      ("main", "trace", 9, "tracing"), ("main", "kernel", 8, "kernels")])
    rows = [("step", "step#0:0", "k0", "fused", '["maximum", "multiply", "add"]', 3, 21_000,
             6_000, 6144, 2048, 1),
            ("step", "step#0:0", "k1", "fused", '["add", "multiply"]', 2, 12_000, 5_000,
             4096, 1024, 1),
            ("step", "step#0:0", "matmul", "library", '["matmul"]', 1, 9_000, 8_500, 1024,
             1024, 1)]
    conn.executemany("INSERT INTO comparisons (function, graph_id, kernel, step_kind, "
                     "eager_ops, eager_count, eager_ns, kernel_ns, eager_bytes, "
                     "planned_bytes, repeat) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)


if __name__ == "__main__":
    EVENTS_FILE.write_text(json.dumps(record_events(), indent=1) + "\n")
    print(f"wrote {EVENTS_FILE}", file=sys.stderr)
