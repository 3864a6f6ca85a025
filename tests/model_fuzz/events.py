"""What happens between training steps: each event is a short string in a Step's
``events`` ("eval", "freeze:3", "extreme:1e37") and renders to module-level statements."""

from __future__ import annotations

# The events, each with what it needs of the model (the generator checks).
EVENTS = ("train", "eval", "freeze", "unfreeze", "sched", "save", "load", "lr_edit",
          "counter_edit", "extreme")


def render_event(event: str, spec) -> list[str]:
    name, _, arg = event.partition(":")
    if name == "train":
        return ["model.train()"]
    if name == "eval":
        return ["model.eval()"]
    if name == "freeze":
        return [f"params[{int(arg)}].requires_grad_(False)"]
    if name == "unfreeze":
        return [f"params[{int(arg)}].requires_grad_(True)"]
    if name == "sched":
        return ["sched.step()"]
    if name == "save":
        lines = ["saved_model = {k: v.clone() for k, v in model.state_dict().items()}",
                 "_sd = opt.state_dict()",
                 'saved_opt = {"state": {i: {k: v.clone() for k, v in s.items()} '
                 'for i, s in _sd["state"].items()},',
                 '             "param_groups": [dict(g) for g in _sd["param_groups"]]}']
        if spec.scheduler:
            lines.append("saved_sched = dict(sched.state_dict())")
        return lines
    if name == "load":
        lines = ["model.load_state_dict(saved_model)", "opt.load_state_dict(saved_opt)"]
        if spec.scheduler:
            lines.append("sched.load_state_dict(saved_sched)")
        return lines
    if name == "lr_edit":
        return ['opt.param_groups[-1]["lr"] = opt.param_groups[-1]["lr"] * 0.5']
    if name == "counter_edit":
        return ["Counters.total += 10", "counters.steps = counters.steps * 2"]
    if name == "extreme":  # inputs scaled towards the float32 limits (render scales them)
        return [f"BIG = {float(arg)!r}"]
    raise ValueError(f"unknown event {event!r}")


__all__ = ["EVENTS", "render_event"]
