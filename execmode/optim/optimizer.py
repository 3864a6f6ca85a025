"""``Optimizer``: parameter groups, hyperparameters read as graph inputs, state_dict.

Updates are in-place writes under ``no_grad`` (``p -= lr * g``), so under ``em.jit`` they
become functional updates written back into the parameters at the end of the training-step
graph. All optimizer state (momentum, Adam moments, step counts) lives in tensors created
up front. Hyperparameters live in ``opt.param_groups`` (a list of dicts, as in PyTorch) and
a schedule may change them between steps; the step reads them through
:meth:`Optimizer.hyper`, so a jitted step takes them as graph inputs at every call instead
of freezing the value it was traced with.
"""

from __future__ import annotations

from types import MappingProxyType

from .. import dispatch
from .. import functional as F
from .._tensor import Tensor
from ..errors import ArgumentError, ShapeError
from ..grad_mode import no_grad
from ..nn.utils import zero_grads
from ..symbolic import SymbolicScalar, is_number


class Optimizer:
    """Base class: ``Optimizer(params, defaults)`` where ``params`` is an iterable of
    tensors or of dicts ``{"params": [...], "lr": ...}`` (one parameter group each; keys
    missing from a group take the optimizer's defaults)."""

    # Python state a jitted function may write (graph/python_writes.py watches it).
    _em_user_state = True

    def __init__(self, params, defaults: dict):
        # Read-only, and opaque to the jit's guards (one identity check, not one per key).
        object.__setattr__(self, "defaults", MappingProxyType(dict(defaults)))
        if isinstance(params, Tensor):
            raise ArgumentError("an optimizer takes an iterable of tensors (or of parameter "
                                "group dicts), got a single Tensor; wrap it in a list")
        groups = list(params)
        if not groups:
            raise ArgumentError("the optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups: list[dict] = []
        self.params: list[Tensor] = []  # every parameter, in group order
        self.state: dict[int, dict[str, Tensor]] = {}  # parameter index -> its tensors
        for group in groups:
            self.add_param_group(group)

    # --- groups and hyperparameters -----------------------------------------------------
    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters with its own hyperparameters (fine-tuning layers at
        a lower learning rate, no weight decay on biases)."""
        if not isinstance(group, dict) or "params" not in group:
            raise ArgumentError(f"a parameter group is a dict with a 'params' key, got "
                                f"{type(group).__name__}")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        if not params:
            raise ArgumentError("the optimizer got an empty parameter list")
        names = None
        if all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str)
               for p in params):  # model.named_parameters(), as PyTorch >= 2.6 takes
            names, params = [n for n, _ in params], [p for _, p in params]
        known = {id(p) for p in self.params}
        for p in params:
            if not isinstance(p, Tensor):
                raise ArgumentError(f"optimizers update tensors, got {type(p).__name__} in a "
                                    f"parameter group")
            if id(p) in known:
                raise ArgumentError("a parameter appears in more than one parameter group "
                                    f"(shape {tuple(p.shape)})")
            known.add(id(p))
        unknown = set(group) - set(self.defaults) - {"params", "initial_lr", "param_names"}
        if unknown:
            raise ArgumentError(f"{type(self).__name__} has no hyperparameter "
                                f"{', '.join(map(repr, sorted(unknown)))}; it has "
                                f"{', '.join(map(repr, self.defaults))}")
        full = {"params": params}
        for key, default in self.defaults.items():
            full[key] = group.get(key, default)
        if "initial_lr" in group:
            full["initial_lr"] = group["initial_lr"]
        if names is not None:
            full["param_names"] = names
        self._check_group(full)
        start = len(self.params)
        self.params.extend(params)
        self.param_groups.append(full)
        if any(_uninitialized(p) for p in params):
            # A lazy module's parameters (d2l builds the optimizer before the first batch,
            # as PyTorch allows): the group's state is made at the first step, once the
            # model's first call has given them their shapes (in place, same objects).
            self.__dict__.setdefault("_lazy_groups", []).append(full)
        else:
            self._init_state(full, list(range(start, start + len(params))))

    def _init_lazy_state(self) -> None:
        """Make the state of groups that held uninitialized parameters when added."""
        pending = self.__dict__.get("_lazy_groups")
        if not pending:
            return
        for group in pending:
            if any(_uninitialized(p) for p in group["params"]):
                raise ArgumentError(f"{type(self).__name__}: a lazy module's parameter is "
                                    "still uninitialized: call the model on a batch before "
                                    "the optimizer's first step (or state_dict)")
        if dispatch.current_tracer() is not None:
            raise ArgumentError(f"{type(self).__name__}: the first step after a lazy "
                                "module's parameters were initialized makes the optimizer's "
                                "state; run that step eagerly, before em.jit")
        self.__dict__["_lazy_groups"] = []
        for group in pending:
            self._init_state(group, self.group_indices(group))

    def _check_group(self, group: dict) -> None:
        """Check a group's hyperparameters (subclasses add theirs)."""
        lr = group["lr"]
        if not isinstance(lr, int | float) or not lr >= 0:
            raise ArgumentError(f"learning rate must be >= 0, got {lr!r}")
        if group.get("differentiable"):
            raise ArgumentError(f"{type(self).__name__}(differentiable=True) is not "
                                f"supported: the step is an in-place update under no_grad")

    def _grad(self, p: Tensor, group: dict):
        """``p.grad``, negated when the group has ``maximize=True`` (None: no gradient)."""
        g = p.grad
        if g is not None and group.get("maximize"):
            g = F.negative(g)
        return g

    def _init_state(self, group: dict, indices: list[int]) -> None:
        """Create the state tensors of a new group (subclasses)."""

    def group_indices(self, group: dict) -> list[int]:
        """The indices (into ``opt.params`` and ``opt.state``) of a group's parameters."""
        start = 0
        for g in self.param_groups:
            if g is group:
                return list(range(start, start + len(g["params"])))
            start += len(g["params"])
        raise ArgumentError("this parameter group does not belong to the optimizer")

    def hyper(self, name: str, group: dict | None = None):
        """The hyperparameter ``name`` of ``group`` (default: the first) as this step must
        use it: the group's value eagerly; under ``em.jit`` a number the graph reads at
        every call (execmode/symbolic.py), so changing ``opt.param_groups[i]["lr"]`` (or
        ``opt.lr``) between jitted steps works as it does eagerly. A tuple (Adam's betas)
        gives a tuple of such numbers."""
        group = self.param_groups[0] if group is None else group
        tracer = dispatch.current_tracer()
        if tracer is None:
            return group[name]
        k = next(i for i, g in enumerate(self.param_groups) if g is group)
        label = f"{type(self).__name__.lower()}" + (f".param_groups[{k}]" if k else "")
        value = group[name]
        if isinstance(value, tuple):
            return tuple(_symbolic_item(tracer, group, name, i, f"{label}.{name}[{i}]")
                         for i in range(len(value)))
        return tracer.scalar_input(group, name, f"{label}.{name}")

    def _single_group(self, name: str) -> dict:
        groups = self.__dict__.get("param_groups") or ()
        if len(groups) != 1:
            raise AttributeError(f"{type(self).__name__} has {len(groups)} parameter groups: "
                                 f"use opt.param_groups[i][{name!r}] instead of opt.{name}")
        return groups[0]

    # opt.lr, opt.momentum ... read and write the only group's value (a convenience kept
    # from before parameter groups; a schedule writing opt.lr still works under jit).
    def __getattr__(self, name):
        defaults = self.__dict__.get("defaults", {})
        if name in defaults and not name.startswith("_"):
            return self._single_group(name)[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in self.__dict__.get("defaults", ()) and "param_groups" in self.__dict__:
            self._single_group(name)[name] = value
        else:
            object.__setattr__(self, name, value)

    # --- stepping -----------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Every ``.grad`` to None, or (``set_to_none=False``) zeroed in place."""
        zero_grads(self.params, set_to_none)

    def step(self) -> None:
        """One update of every parameter with a gradient, in place, under ``no_grad``
        (under ``em.jit``: assign nodes of the step's graph)."""
        self._init_lazy_state()
        with no_grad():
            self._step()

    def _step(self) -> None:
        for group in self.param_groups:
            self._step_group(group, self.group_indices(group))

    def _step_group(self, group: dict, indices: list[int]) -> None:
        raise NotImplementedError

    # --- state_dict ---------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {index: {name: tensor}}, "param_groups": [{hyperparameters...,
        "params": [indices]}]}`` as PyTorch lays it out. The tensors are the optimizer's
        own (save them, or copy them, before stepping again)."""
        self._init_lazy_state()
        groups, start = [], 0
        for g in self.param_groups:
            n = len(g["params"])
            groups.append({**{k: v for k, v in g.items() if k != "params"},
                           "params": list(range(start, start + n))})
            start += n
        return {"state": {i: dict(s) for i, s in self.state.items()}, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyperparameters and state tensors (copied in place, so a jitted step
        that captured them reads the loaded values)."""
        self._init_lazy_state()
        name = type(self).__name__
        if not isinstance(state_dict, dict) or "param_groups" not in state_dict \
                or "state" not in state_dict:
            raise ArgumentError(f"{name}.load_state_dict expects a dict with 'state' and "
                                f"'param_groups' (from opt.state_dict())")
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ArgumentError(f"{name}.load_state_dict: the checkpoint has {len(saved)} "
                                f"parameter groups, the optimizer {len(self.param_groups)}")
        for k, (mine, theirs) in enumerate(zip(self.param_groups, saved)):
            if len(theirs["params"]) != len(mine["params"]):
                raise ArgumentError(f"{name}.load_state_dict: parameter group {k} has "
                                    f"{len(theirs['params'])} parameters in the checkpoint, "
                                    f"{len(mine['params'])} in the optimizer")
        # Saved indices -> this optimizer's indices, group by group (as PyTorch maps them).
        index_map = {}
        for mine, theirs in zip(self.param_groups, saved):
            index_map.update(zip(theirs["params"], self.group_indices(mine)))
        state = {_int_key(k): v for k, v in state_dict["state"].items()}
        updates = []
        for saved_index, entries in state.items():
            if saved_index not in index_map:
                raise ArgumentError(f"{name}.load_state_dict: state for parameter "
                                    f"{saved_index}, which no group lists")
            mine = self.state.get(index_map[saved_index], {})
            for key, value in entries.items():
                if key not in mine:
                    raise ArgumentError(f"{name}.load_state_dict: unexpected state "
                                        f"{key!r} for parameter {saved_index}")
                if tuple(value.shape) != tuple(mine[key].shape):
                    raise ShapeError(f"{name}.load_state_dict: state {key!r} of parameter "
                                     f"{saved_index} has shape {tuple(value.shape)} in the "
                                     f"checkpoint, {tuple(mine[key].shape)} here")
                updates.append((mine[key], value))
        from ..nn.module import copy_into

        with no_grad():  # every check passed: now write
            done = set()
            for target, value in updates:
                if id(target) not in done:  # a shared step tensor is written once
                    done.add(id(target))
                    copy_into(target, value)
        for mine, theirs in zip(self.param_groups, saved):
            for key, value in theirs.items():
                if key == "params":
                    continue
                default = self.defaults.get(key)
                mine[key] = tuple(value) if isinstance(default, tuple) else value


def _uninitialized(p) -> bool:
    return getattr(type(p), "_em_uninitialized", False)  # nn.lazy's UninitializedParameter


def engine_flags(**flags) -> dict:
    """PyTorch's implementation switches (``foreach``, ``fused``, ``capturable``,
    ``differentiable``) as group entries, as PyTorch keeps them. They choose among
    PyTorch's kernels for the same arithmetic; execmode has one (under ``em.jit`` the step
    is one fused graph, and its state lives in tensors, so it is capturable anyway), so
    they change nothing, except ``differentiable=True``, which is refused."""
    return flags


def _int_key(key):
    # Keys come back as strings from formats whose keys are strings (JSON, safetensors).
    return int(key) if isinstance(key, str) and key.isdigit() else key


def _symbolic_item(tracer, group: dict, name: str, i: int, label: str):
    """``group[name][i]`` as a number the graph reads at every call (Adam's betas)."""

    value = group[name][i]
    if not is_number(value):
        return value
    tracer.dynamic_reads.add((id(group), name))
    return SymbolicScalar(value, lambda: group[name][i], label, tracer)


__all__ = ["Optimizer", "engine_flags"]
