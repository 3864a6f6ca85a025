"""Tensor guards (execmode/jit_driver/tensor_guards.py): for each kind, a call that keeps
what the trace assumed replays and a call that breaks it retraces with the guard's reason,
alike on every replay tier (the general path, the generated replay, the native tier)."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.jit_driver import paths
from execmode.jit_driver import tensor_guards as tg

TIERS = ("general", "generated", "native")


def _f32(shape, value=1.0, order="C"):
    return em.tensor(np.full(shape, value, np.float32, order=order))


def _grad_reader():
    w = _f32(3)
    w.grad = _f32(3, 2.0)

    def f(x):
        return x * 2.0 if w.grad is None else x * w.grad

    def keep():
        w.grad = _f32(3, 5.0)  # another tensor of the same type: no retrace

    return f, (_f32(3),), w, keep


def grad_none():
    f, args, w, keep = _grad_reader()

    def fail():
        w.grad = None
    return f, args, keep, fail, ".grad of tensor float32[3] was a tensor when traced, now None"


def grad_type():
    f, args, w, keep = _grad_reader()

    def fail():
        w.grad = em.tensor(np.ones(3, np.float64))
    return f, args, keep, fail, (".grad of tensor float32[3] was a ndarray float32[3] when "
                                 "traced, now a ndarray float64[3]")


def grads_apart():
    p1, p2 = _f32(3), _f32(3)
    p1.grad, p2.grad = _f32(3, 2.0), _f32(3, 4.0)

    def f(x):
        p1.grad.mul_(0.5)  # written in place: p1.grad is p2.grad would be halved twice
        p2.grad.mul_(0.5)
        return x + 1.0

    def keep():
        p1.grad, p2.grad = _f32(3, 2.0), _f32(3, 4.0)

    def fail():
        p2.grad = p1.grad
    return f, (_f32(3),), keep, fail, ("the .grad tensors share memory differently from "
                                       "when traced")


def strides():
    def f(x):
        return x.reshape(-1) * 2.0  # a view or a copy depending on x's strides

    def keep():
        args[0] = _f32((4, 3), 3.0)

    def fail():
        args[0] = _f32((4, 3), order="F")
    args = [_f32((4, 3))]
    return f, args, keep, fail, ("memory layout of tensor float32[4, 3]: strides (12, 4) "
                                 "when traced, now (4, 16)")


def non_leaf():
    a = _f32(3)
    a.requires_grad = True

    def f(x):
        return x * 3.0

    def keep():
        args[0] = a * 2.0

    def fail():
        leaf = _f32(3)
        leaf.requires_grad = True
        args[0] = leaf
    args = [a * 2.0]
    return f, args, keep, fail, ("tensor float32[3] had a history (not a leaf) when "
                                 "traced, now it is a leaf")


def is_arg_memory():
    w = _f32(3, 2.0)

    def f(x):
        return x + w  # w is also the argument: one graph input for both

    def keep():
        args[0] = w

    def fail():
        args[0] = _f32(3, 2.0)
    args = [w]
    return f, args, keep, fail, ("captured tensor float32[3] was the memory of argument 0 "
                                 "when traced, now it is not")


def not_arg_memory():
    w = _f32(3, 2.0)

    def f(x):
        x.add_(1.0)  # the graph writes an input: a capture sharing its memory matters
        return x * w

    def keep():
        args[0] = _f32(3)

    def fail():
        args[0] = w
    args = [_f32(3)]
    return f, args, keep, fail, ("captured tensor float32[3] is now also passed as an "
                                 "argument (the graph writes inputs, so that sharing matters)")


SCENARIOS = {"grad_none": grad_none, "grad_type": grad_type, "grads_apart": grads_apart,
             "strides": strides, "non_leaf": non_leaf, "is_arg_memory": is_arg_memory,
             "not_arg_memory": not_arg_memory}


def test_every_guard_kind_has_a_scenario():
    assert {cls.kind for cls in tg.KINDS} == set(SCENARIOS)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("kind", sorted(SCENARIOS))
def test_tiers_agree_on_holds_and_misses(kind, tier):
    f, args, keep, fail, reason = SCENARIOS[kind]()
    with paths.pinned(replay=tier):
        jitted = em.jit(f)
        jitted(*args)
        (cf,) = jitted.concrete_functions
        assert kind in {guard.kind for guard in cf.guards}
        if tier == "general":
            assert jitted._fast is None
        else:  # the C entry declines tensor guards: the generated replay checks them
            assert type(jitted._fast).__name__ == "function"
        keep()
        calls = cf.calls
        jitted(*args)
        assert jitted.retraces == []
        # The general path counts the call; a fast replay took it without asking it.
        assert cf.calls == calls + (tier == "general")
        fail()
        jitted(*args)
        assert len(jitted.retraces) == 1
        assert jitted.retraces[0].reason.startswith(reason)


def test_a_guard_says_why_it_fails_and_holds_otherwise():
    x = _f32((4, 3))
    guard = tg.Strides(("arg", 0), (12, 4))
    assert guard.failure([x]) is None
    assert guard.failure([_f32((4, 3), order="F")]).startswith("memory layout of tensor")
    assert repr(guard) == "Strides(('arg', 0), (12, 4))"
