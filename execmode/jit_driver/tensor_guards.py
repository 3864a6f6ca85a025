"""What a trace assumed about the tensors it read: one class per kind of tensor guard.

Besides the signature (shape, dtype, device, requires_grad and aliasing of each argument:
signature.py), a trace may depend on more about a tensor: whether its ``.grad`` was None,
the type of that ``.grad``, an argument's strides, and so on. Each such assumption is a
guard, made by trace_call.py and kept on the ``ConcreteFunction``. A guard kind is one
class here, with the three forms every replay tier uses:

* ``holds(tensor, leaves)``: the check, as the general path (``JitFunction._call`` through
  ``ConcreteFunction.guards_hold``) runs it;
* ``reason(tensor, leaves)``: the sentence a retrace logs when the check fails;
* ``replay_test(x, k, ns, names)``: its compiled form, the lines of the generated Python
  replay (fastcall.py) ending in an ``if`` that is true when the guard fails (the replay
  then returns MISS and the general path retraces with the reason above). Straight-line
  code with the expected values bound as constants: it runs at every replay.

The C fast entry checks no tensor guard: it declines a function that has any
(codegen/fast_entry.py), so the native tier replays such a function with the generated
replay, its fallback. A new kind of guard is one class here, made in trace_call.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._tensor import Tensor
from .results import resolve
from .signature import memory_owner


@dataclass(frozen=True)
class ReplayNames:
    """What the generated replay calls this call's values: ``leaves`` the tensor arguments
    (in leaf order), ``arrays`` their arrays, ``owners`` the set of ids of the arrays
    owning the arguments' memory (built only when a guard ``needs_owners``)."""

    leaves: tuple
    arrays: tuple
    owners: str = "owners"


class TensorGuard:
    """One assumption on the tensor ``ref`` (("arg", i): the call's i-th tensor argument;
    else a captured tensor itself); ``expected`` is what the trace saw."""

    kind = ""
    # The generated replay must build ``names.owners`` before this guard's test.
    needs_owners = False
    __slots__ = ("ref", "expected")

    def __init__(self, ref, expected=None):
        self.ref, self.expected = ref, expected

    def failure(self, leaves) -> str | None:
        """None when the guard holds for this call's tensor leaves, else why not."""
        tensor = resolve(self.ref, leaves)
        return None if self.holds(tensor, leaves) else self.reason(tensor, leaves)

    def holds(self, tensor: Tensor, leaves) -> bool:
        raise NotImplementedError

    def reason(self, tensor: Tensor, leaves) -> str:
        raise NotImplementedError

    def replay_test(self, x: str, k: int, ns: dict, names: ReplayNames) -> list[str]:
        """Lines for the generated replay: ``x`` is the expression of the guarded tensor,
        ``k`` the guard's index (for unique constant names bound in ``ns``)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.ref!r}, {self.expected!r})"


class GradNone(TensorGuard):
    """Whether the tensor's ``.grad`` was None (``expected`` True) or a tensor."""

    kind = "grad_none"
    __slots__ = ()

    def holds(self, tensor, leaves):
        return (tensor._grad is None) == self.expected

    def reason(self, tensor, leaves):
        state = "None" if self.expected else "a tensor"
        now = "a tensor" if self.expected else "None"
        return f".grad of {_short(tensor)} was {state} when traced, now {now}"

    def replay_test(self, x, k, ns, names):
        return [f"    if ({x}._grad is None) is not {bool(self.expected)}:"]


class GradType(TensorGuard):
    """The array type, shape and dtype of a tensor ``.grad`` (``expected``: (array class,
    shape, dtype)): another would reach compiled kernels. Made after the tensor's GradNone
    guard, which has already checked that the ``.grad`` is a tensor."""

    kind = "grad_type"
    __slots__ = ()

    def holds(self, tensor, leaves):
        kind, shape, dtype = self.expected
        data = tensor._grad._data
        return type(data) is kind and data.shape == shape and data.dtype == dtype

    def reason(self, tensor, leaves):
        kind, shape, dtype = self.expected
        data = tensor._grad._data
        return (f".grad of {_short(tensor)} was a {kind.__name__} {dtype}{list(shape)} "
                f"when traced, now a {type(data).__name__} {data.dtype}{list(data.shape)}")

    def replay_test(self, x, k, ns, names):
        ns[f"GK{k}"], ns[f"GS{k}"], ns[f"GD{k}"] = self.expected
        return [f"    c = {x}._grad._data",
                f"    if c.__class__ is not GK{k} or c.shape != GS{k} or c.dtype != GD{k}:"]


class GradsApart(TensorGuard):
    """How many memories the ``.grad`` tensors the graph writes in place live in
    (``expected``: (their owners' refs, the count)): two that became one memory
    (``p1.grad is p2.grad``) would each be written once where eager writes it twice."""

    kind = "grads_apart"
    __slots__ = ()

    def holds(self, tensor, leaves):
        return distinct_grads(self.expected[0], leaves) == self.expected[1]

    def reason(self, tensor, leaves):
        return ("the .grad tensors share memory differently from when traced (the "
                "graph writes them in place: p1.grad is p2.grad, or not)")

    def replay_test(self, x, k, ns, names):
        ns["_distinct_grads"], ns[f"GR{k}"], ns[f"GN{k}"] = (distinct_grads, *self.expected)
        leaves = "".join(f"{name}, " for name in names.leaves)
        return [f"    if _distinct_grads(GR{k}, ({leaves})) != GN{k}:"]


class Strides(TensorGuard):
    """An argument's strides (``expected``), when the trace depended on them: a reshape
    of it is a view or a copy depending on them."""

    kind = "strides"
    __slots__ = ()

    def holds(self, tensor, leaves):
        return tensor._data.strides == self.expected

    def reason(self, tensor, leaves):
        return (f"memory layout of {_short(tensor)}: strides {self.expected} when traced, "
                f"now {tensor._data.strides} (a reshape of it is a view or a copy "
                "depending on them)")

    def replay_test(self, x, k, ns, names):
        ns[f"GS{k}"] = self.expected
        return [f"    if {x}._data.strides != GS{k}:"]


class NonLeaf(TensorGuard):
    """An argument that had a history (a ``grad_fn``) when traced."""

    kind = "non_leaf"
    __slots__ = ()

    def holds(self, tensor, leaves):
        return tensor._grad_fn is not None

    def reason(self, tensor, leaves):
        return f"{_short(tensor)} had a history (not a leaf) when traced, now it is a leaf"

    def replay_test(self, x, k, ns, names):
        return [f"    if {x}._grad_fn is None:"]


class IsArgMemory(TensorGuard):
    """A capture that was the memory of argument ``expected`` (``f(obj.buf)`` reading
    ``obj.buf``): the graph has one input for both, so a later call must pass it again."""

    kind = "is_arg_memory"
    __slots__ = ()

    def holds(self, tensor, leaves):
        return memory_owner(tensor._data) is memory_owner(leaves[self.expected]._data)

    def reason(self, tensor, leaves):
        return (f"captured {_short(tensor)} was the memory of argument {self.expected} "
                "when traced, now it is not")

    def replay_test(self, x, k, ns, names):
        ns["_owner"] = memory_owner
        return [f"    if _owner({x}._data) is not _owner({names.arrays[self.expected]}):"]


class NotArgMemory(TensorGuard):
    """A capture that was no argument's memory, when the graph writes inputs (so that
    sharing would change what a write is seen through)."""

    kind = "not_arg_memory"
    needs_owners = True
    __slots__ = ()

    def holds(self, tensor, leaves):
        return not any(memory_owner(tensor._data) is memory_owner(t._data) for t in leaves)

    def reason(self, tensor, leaves):
        return (f"captured {_short(tensor)} is now also passed as an argument "
                "(the graph writes inputs, so that sharing matters)")

    def replay_test(self, x, k, ns, names):
        return [f"    c = {x}._data",
                "    b = c.base",
                f"    if id(c if b is None else b) in {names.owners}:"]


KINDS = (GradNone, GradType, GradsApart, Strides, NonLeaf, IsArgMemory, NotArgMemory)


def distinct_grads(refs, leaves) -> int:
    """How many memories the .grad tensors of ``refs`` live in (GradsApart). Grads sharing
    a parameter's or optimizer state's memory are not looked for."""
    return distinct_memories([resolve(ref, leaves)._grad for ref in refs])


def distinct_memories(grads) -> int:
    owners = set()
    for grad in grads:
        data = grad._data
        base = data.base
        owners.add(id(data if base is None else base))
    return len(owners)


def _short(t: Tensor) -> str:
    return f"tensor {t.dtype}{list(t.shape)}"
