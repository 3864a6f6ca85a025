"""A stand-in controller with fixed answers, for snapshot tests of a paused script.

Real child processes are tested everywhere else; a snapshot needs the same pixels on
every run, so here the "agent" pauses at a fixed op of the demo session's script.
"""

from __future__ import annotations

from execmode.debug.run_events import Event


def _summary(type_, shape, lo, hi, mean, std, nan=0):
    return {"shape": shape, "dtype": "float32", "device": "cpu", "type": type_,
            "size": shape[0] * shape[1], "nan_count": nan, "inf_count": 0, "min": lo,
            "max": hi, "mean": mean, "std": std, "abs_max": max(abs(lo), abs(hi))}


X_SUMMARY = _summary("f32[8,32]", [8, 32], -0.42, 0.37, 0.013, 0.11)
HISTOGRAM = {"counts": [3, 9, 21, 40, 58, 52, 37, 22, 10, 4],
             "edges": [round(-0.42 + 0.079 * i, 3) for i in range(11)]}


class PausedController:
    """Pauses once, before ``maximum`` on line 26 of the demo's train.py."""

    def __init__(self, script, args=(), breakpoints=(), session=None, start_paused=True,
                 cwd=None):
        self.script = script
        self.session = session
        self.listeners = []
        self.proc = None
        self._breakpoints = [{"id": i + 1, "spec": spec, "kind": spec.split(":")[0],
                              "enabled": True, "hits": 0, "ignore": 0, "condition": None}
                             for i, spec in enumerate(breakpoints)]

    def start(self):
        where = {"filename": self.script, "lineno": 26, "function": "<module>"}
        event = Event("paused", {
            "reason": "step", "when": "before", "mode": "eager", "op_index": 11,
            "kernel_index": 0, "op": "maximum", "location": where, "stack": [where],
            "scope": "relu", "inputs": [X_SUMMARY, {"scalar": "0"}], "output": None,
            "kernel": None, "breakpoint": None, "hunt": None,
        })
        for listener in self.listeners:
            listener(event)
        return self

    def breakpoints(self):
        return self._breakpoints

    def locals(self):
        return [{"name": "x", "type": "f32[8,16]"}, {"name": "w1", "type": "f32[16,32]"}]

    def variables(self, frame=0, scope="locals", path=()):
        if list(path) == ["opt"]:
            return [{"name": "lr", "kind": "number", "type": "float", "text": "0.05",
                     "expandable": False}]
        return [
            {"name": "step", "kind": "number", "type": "int", "text": "3", "expandable": False},
            {"name": "x", "kind": "tensor", "type": "Tensor", "expandable": True,
             "text": "f32[8,16]  min=-2.1 max=2.4 mean=0.03 std=0.98"},
            {"name": "losses", "kind": "list", "type": "list", "text": "[2.31, 2.05, 1.87]",
             "expandable": True, "length": 3},
            {"name": "opt", "kind": "object", "type": "SGD", "text": "SGD(lr=0.05)",
             "expandable": True},
        ]

    def evaluate(self, expr, frame=0):
        return {"expr": expr, "ok": True, "kind": "number", "type": "float", "text": "0.05"}

    def inspect(self, ref, histogram=True):
        return dict(X_SUMMARY, histogram=HISTOGRAM)

    def slice(self, ref, index):
        return {"shape": [4], "values": [0.1, -0.2, 0.3, 0.05], "truncated": False,
                "text": "[ 0.1 , -0.2 ,  0.3 ,  0.05]"}

    def stop(self):
        pass

    def close(self):
        pass
