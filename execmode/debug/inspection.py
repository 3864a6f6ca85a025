"""Inspection while paused: the answers to stack, locals, variables, evaluate, inspect,
slice, recompute, hunt and differential_check, and the references they resolve
(``input:0``, ``output``, ``var:loss``, ``node:7``).

A mixin of the agent's ``Debugger``: it reads what the pause left (``current``,
``paused_frame``, ``segment_inputs``, ``last_plan``) and never resumes the script; the
channel and the pause loop that call :meth:`Inspection._inspect` stay in debugger.py.
"""

from __future__ import annotations

from .._tensor import Tensor
from ..dtypes import type_text
from ..source import user_stack
from .conditions import ConditionError
from .hunt import differential_check, hunt
from .pyvalues import evaluate, user_frames, variables
from .summary import bounded_slice, format_summary, summarize


class Inspection:
    """Commands that look at the paused script."""

    def _inspect(self, msg: dict) -> dict:
        kind = msg["type"]
        try:
            if kind == "stack":
                return {"stack": [s.to_json() for s in user_stack()]}
            if kind == "locals":
                return {"tensors": self._local_tensors()}
            if kind == "variables":
                path = msg["path"]
                if not all(isinstance(p, str) for p in path):
                    raise ValueError("path: a list of labels (strings)")
                return {"variables": variables(self._user_frame(msg["frame"]), msg["scope"],
                                               path)}
            if kind == "evaluate":
                frame = self._user_frame(msg.get("frame", 0))
                return {"result": evaluate(msg["expr"], frame)}
            if kind == "inspect":
                return {"summary": summarize(self._resolve(msg["ref"]),
                                             histogram=msg.get("histogram", True))}
            if kind == "slice":
                return {"slice": bounded_slice(self._resolve(msg["ref"]), msg["index"],
                                               int(msg.get("max_elements", 1000)))}
            if kind == "recompute":
                return {"summary": summarize(self._recompute(msg["node"]), histogram=True)}
            if kind == "jit_variables":
                return {"jit": self._jit_variables()}
            if kind == "hunt":
                plan = self._plan()
                return {"report": hunt(plan, self.segment_inputs[id(plan)],
                                       self.current.get("step"))}
            if kind == "differential_check":
                plan = self._plan()
                return {"report": differential_check(plan, self.segment_inputs[id(plan)])}
        except (KeyError, ValueError, IndexError, TypeError, ConditionError) as exc:
            return {"__error__": f"{kind}: {exc}"}
        except Exception as exc:  # noqa: BLE001 - a fault in answering never ends the script
            return {"__error__": f"{kind}: {type(exc).__name__}: {exc} (a fault in execmode's "
                                 "debugger; the script is still paused)"}
        return {"__error__": f"{kind}: not available while paused"}

    def _user_frame(self, index):
        """Frame ``index`` of the paused stack (0: innermost, as the ``stack`` reply)."""
        if not isinstance(index, int) or isinstance(index, bool):
            raise ValueError("frame: an integer, 0 for the innermost")
        frames = user_frames(self.paused_frame)
        if not 0 <= index < len(frames):
            raise IndexError(f"frame {index}: the paused stack has {len(frames)} frames")
        return frames[index]

    def _plan(self):
        plan = self.current.get("plan") or self.last_plan
        if plan is None or id(plan) not in self.segment_inputs:
            raise ValueError("no compiled graph has run yet")
        return plan

    def _resolve(self, ref: str):
        """"input:0", "output", "var:loss", "node:7" -> an array."""
        kind, _, rest = ref.partition(":")
        if kind == "input":
            return self._input(ref, rest)
        if kind == "output":
            if self.current.get("output") is None:
                raise ValueError("no output yet: the op has not run (step once)")
            return _array(self.current["output"])
        if kind == "var":
            for name, value in self._frame_tensors():
                if name == rest:
                    return _array(value)
            node = self._jit_name(rest)  # inside a jitted function: its traced names
            if node is not None:
                return self._recompute(node)
            raise KeyError(f"no tensor variable {rest!r} in the paused frames")
        if kind == "node":
            return self._recompute(int(rest.lstrip("%")))
        if kind == "op":  # a past eager op's kept values: op:N, op:N:input:I
            number, _, part = rest.partition(":")
            which, _, index = part.partition(":")
            if which not in ("", "output", "input") or (which == "input") != bool(index):
                raise ValueError(f"unknown reference {ref!r}: use op:N or op:N:input:I")
            # N is the op's number as the Ops list and the store show it ("#12" or 12).
            return self.kept.value(int(number.lstrip("#")),
                                   "input" if which == "input" else "output", int(index or 0))
        raise ValueError(f"unknown reference {ref!r}: use input:N, output, var:NAME, node:N, "
                         "op:N")

    def _input(self, ref: str, rest: str):
        """``input:N``: the paused op's N-th tensor input; after a kernel ran (a NaN stop),
        the kernel's N-th input, recomputed from the segment's saved inputs (its buffer may
        hold something else by now: memory planning reuses it)."""
        inputs = self.current.get("inputs")
        kernel_inputs = () if inputs else self._kernel_input_ids()
        count = len(inputs) if inputs else len(kernel_inputs)
        try:
            index = int(rest)
        except ValueError:
            index = -1
        if not 0 <= index < count:
            valid = ", ".join(f"input:{i}" for i in range(count)) or "no input refs"
            raise ValueError(f"no {ref!r} at this stop: it has {valid}; also output, "
                             "node:N (the graph's nodes), var:NAME, op:N")
        if inputs:
            return _array(inputs[index])
        return self._recompute(kernel_inputs[index], lowered=True)

    def _kernel_input_ids(self) -> tuple:
        """The node ids a paused kernel reads (its fused node's inputs), or ()."""
        plan, index = self.current.get("plan"), self.current.get("step")
        if plan is None or index is None:
            return ()
        return plan.steps[index].node.node_inputs

    def _recompute(self, node_id: int, lowered: bool = False):
        """Node ``node_id``'s value in the paused segment, interpreted from its saved
        inputs: in the graph as traced (``node:N``, as the Graph view numbers it) or, for a
        kernel's inputs, as lowered (a pass may have made the node a kernel reads)."""
        from ..graph.interpret import interpret

        plan = self._plan()
        graph = plan.graph if lowered else plan.source_graph or plan.graph
        values = interpret(graph, self.segment_inputs[id(plan)], stop_at=node_id)
        if node_id not in values:
            raise KeyError(f"node %{node_id} is not in segment {plan.graph_id}")
        return values[node_id]

    def _jit_names(self) -> dict[str, int]:
        """``"function:name" -> node`` of the jitted segment this stop is in, or {}."""
        from ..graph.py_names import names_of

        plan = self.current.get("plan")
        if plan is None or id(plan) not in self.segment_inputs:
            return {}
        graph = plan.source_graph or plan.graph
        present = {n.id for n in graph.nodes}
        return {k: v for k, v in names_of(graph).items() if v in present}

    def _jit_name(self, name: str) -> int | None:
        names = self._jit_names()
        if name in names:
            return names[name]
        matches = [node for key, node in names.items() if key.partition(":")[2] == name]
        return matches[-1] if matches else None

    def _jit_variables(self) -> dict:
        """The jitted function's Python names at this stop, each with its node's value at
        this call, recomputed from the segment's saved inputs (names whose node a pass
        fused away too): rows as the Variables pane shows them."""
        names = self._jit_names()
        if not names:
            return {"function": None, "rows": []}
        rows = []
        for key, node in names.items():
            function, _, name = key.partition(":")
            try:
                text, kind = f"%{node}  {format_summary(summarize(self._recompute(node)))}", \
                    "tensor"
            except Exception as exc:  # noqa: BLE001 - one name that cannot be shown
                text, kind = f"%{node}: cannot recompute ({type(exc).__name__}: {exc})", \
                    "error"
            rows.append({"name": name, "function": function, "node": node, "kind": kind,
                         "text": text})
        plan = self.current.get("plan")
        return {"function": plan.graph_id if plan is not None else None, "rows": rows}

    def _frame_tensors(self):
        f = getattr(self, "paused_frame", None)
        while f is not None:
            for name, value in list(f.f_locals.items()):
                if isinstance(value, Tensor) and not value.is_traced:
                    yield name, value
            f = f.f_back
            while f is not None and _internal(f):
                f = f.f_back

    def _local_tensors(self) -> list[dict]:
        seen, out = set(), []
        for name, value in self._frame_tensors():
            if name in seen:
                continue
            seen.add(name)
            out.append({"name": name, "type": type_text(value._data.shape, value._data.dtype)})
        return out


# _internal and _array serve debugger.py and agent.py too (the pause event, post mortem).
def _internal(frame) -> bool:
    from ..source import is_internal_file

    return is_internal_file(frame.f_code.co_filename)


def _array(x):
    return x._data if isinstance(x, Tensor) else x

