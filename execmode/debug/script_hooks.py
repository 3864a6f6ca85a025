"""The debugger's instrumentation hooks, called in the script's thread.

Before an eager op (step, next, place breakpoints), after one (tensor conditions on its
output), before and after each kernel of a compiled plan (stepping kernel by kernel, into
a fused kernel's member ops, and conditions on a kernel's output, with the NaN hunt), at
``em.breakpoint()`` and at graph breaks. Each decides whether to stop (stops.py) and, if
so, leaves what the pause may inspect in ``current`` and pauses.
"""

from __future__ import annotations

from .. import dispatch
from .._tensor import Tensor
from .firing import frame_for
from .hunt import hunt
from .kernel_steps import member_info, member_inputs, member_values, members_of
from .pyvalues import hooks_detached
from .summary import TensorStats


class ScriptHooks:
    """The Debugger's hooks (a part of :class:`~.debugger.Debugger`, on its state:
    ``breakpoints``, ``numbers``, ``seen``, ``kept``, ``current`` ...)."""

    def before_op(self, op, inputs, attrs) -> None:
        if dispatch.current_tracer() is not None:
            return  # tracing builds a graph; its kernels are where graph mode stops
        self._last_inputs = inputs
        if self.attention:
            self._drain()
        reason = self._should_pause_before(op.name, inputs)
        if reason:
            self.current = {"inputs": [x for x in inputs if isinstance(x, Tensor)]}
            self._pause(reason, op=op.name, attrs=attrs, inputs=inputs, when="before")

    def on_op(self, event, output) -> None:
        number = self.numbers.op_ran(event.seq)
        if dispatch.current_tracer() is not None:
            return
        self.seen.add(event.location, event.scope)
        self.kept.keep(number, output, self._last_inputs)
        conditions = [bp for bp in self.breakpoints.active() if bp.checks_output]
        if not conditions:
            return
        stats = TensorStats(output._data, event.op, event.scope, event.location)
        for bp in conditions:
            if bp.reaches(event.op, event.scope, event.location) and \
                    self._holds(bp, stats, frame_for(bp)) and \
                    not self._carried_on(bp, event, output) and bp.hit():
                self.current = {"inputs": [x for x in self._last_inputs
                                           if isinstance(x, Tensor)], "output": output}
                self._pause(f"breakpoint {bp.id}: {bp.spec}", op=event.op, attrs=event.attrs,
                            inputs=(), when="after", output=output, breakpoint=bp.to_json())
                return

    def before_kernel(self, plan, index, values) -> None:
        if index == 0:
            self.segment_inputs[id(plan)] = [values[s] for s in plan.input_slots]
            self.last_plan = plan
        self.numbers.kernel_begins()
        self._kernel_met = (id(plan), index, self._kernel_inputs_met(plan, index, values))
        if self.attention:
            self._drain()
        step = plan.steps[index]
        for member in step.node.body or (step.node,):
            self.seen.add(member.loc, member.scope)
        reason = self._should_pause_before_kernel(step)
        if reason:
            args = [values[a] for a in step.args if isinstance(a, int)]
            self.current = {"inputs": args, "plan": plan, "step": index}
            info = self._kernel_info(plan, index)
            self._pause(reason, when="before", kernel=info)
            if self.resumed_by == "step" and members_of(step):
                self._step_into(plan, index, info)

    def _step_into(self, plan, index, info) -> None:
        """``s`` at a fused kernel: pause before each member op (kernel_steps.py)."""
        step = plan.steps[index]
        members = members_of(step)
        try:
            with hooks_detached():  # the interpreter's ops are the debugger's, not the script's
                values = member_values(plan, step, self.segment_inputs[id(plan)])
        except Exception as exc:  # noqa: BLE001 - stepping in must never end the script
            self._send({"type": "error", "id": None, "message": f"cannot step into kernel "
                        f"{step.name}: {type(exc).__name__}: {exc}; it runs as one step"})
            return
        for i, member in enumerate(members):
            self.current = {"inputs": member_inputs(member, values), "plan": plan,
                            "step": index}
            self._pause(f"step: %{member.id} {member.op} ({i + 1}/{len(members)} in kernel "
                        f"{step.name})", when="before", kernel=info, op=member.op,
                        member=member_info(member, i, len(members), step.name),
                        location=member.loc)
            if self.mode == "run":
                return  # continue: the kernel runs, and the script with it

    def after_kernel(self, plan, index, out) -> None:
        conditions = [bp for bp in self.breakpoints.active() if bp.checks_output]
        if not conditions:
            return
        step = plan.steps[index]
        members = step.node.body or (step.node,)
        last = members[-1]
        stats = TensorStats(out, last.op, last.scope, last.loc)
        plan_id, at, met = self._kernel_met
        if (plan_id, at) != (id(plan), index):
            met = set()
        for bp in conditions:
            if not any(bp.matches_place(m.op, m.scope, m.loc) for m in members):
                continue
            bp.reached += 1
            if bp.id in met or not self._holds(bp, stats, frame_for(bp)):
                continue
            if bp.hit():
                report = None
                if stats.nan or stats.inf:
                    report = hunt(plan, self.segment_inputs.get(id(plan), []), index)
                self.current = {"output": out, "plan": plan, "step": index}
                self._pause(f"breakpoint {bp.id}: {bp.spec}", when="after",
                            kernel=self._kernel_info(plan, index), output=out,
                            breakpoint=bp.to_json(), hunt=report)
                return

    def user_breakpoint(self) -> None:
        """``em.breakpoint()`` in the script: pause right here."""
        self.current = {}
        self._pause("em.breakpoint()", when="breakpoint")

    def on_event(self, event) -> None:
        if event.kind != "graph_break":
            return
        for bp in self.breakpoints.active("graph_break"):
            if bp.hit():
                loc = event.data.get("location")
                self._send({"type": "graph_break", "reason": event.data.get("reason"),
                            "op": event.data.get("op"),
                            "location": loc.to_json() if loc else None})
                self.current = {}
                self._pause(f"graph break: {event.data.get('reason')}", when="break",
                            held_by=bp.to_json())
                return

    def _kernel_info(self, plan, index) -> dict:
        step = plan.steps[index]
        source = getattr(step.fn, "source", None)
        return {
            "graph_id": plan.graph_id, "index": index, "name": step.name, "kind": step.kind,
            "backend": step.backend, "member_nodes": list(step.member_ids),
            "member_ops": list(step.member_ops),
            "inputs": self._kernel_inputs(plan, step),
            "members": [
                {"id": m.id, "op": m.op, "type": m.type_str(), "scope": m.scope,
                 "location": m.loc.to_json() if m.loc else None}
                for m in (step.node.body or (step.node,))
            ],
            "source": source[:20000] if isinstance(source, str) else None,
        }

    @staticmethod
    def _kernel_inputs(plan, step) -> list[dict]:
        """What a kernel reads, as the ``input:N`` refs name them (inspection.py)."""
        nodes = {n.id: n for n in plan.graph.nodes}
        inputs = []
        for i in step.node.node_inputs:
            n = nodes.get(i)
            inputs.append({"id": i, "op": (n.label or n.op) if n is not None else "?",
                           "type": n.type_str() if n is not None else ""})
        return inputs
