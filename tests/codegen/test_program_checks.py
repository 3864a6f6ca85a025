"""Whole-graph programs with an op that may raise (a label check) and a constant among
their outputs: the program runs them, gives eager's values, and a bad label raises
eager's error through every replay path (the first call, the C fast entry's Python
replay, the general path) with nothing written."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode.codegen.toolchain import NoCompiler, get_toolchain
from execmode.ops import OPS


@pytest.fixture(autouse=True, scope="module")
def _compiler():
    try:
        get_toolchain()
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")


def _masked(x, labels):
    keep = em.functional.primitives.apply(OPS["check_labels"], labels, num_classes=5,
                                          ignore_index=-100, caller="masked")
    return em.where(keep, x * 2.0, 0.0)


def _plan(jitted):
    (concrete,) = jitted.concrete_functions
    return concrete.segments[0].compiled.plan


def _labels(values):
    return em.tensor(np.array(values, dtype=np.int64))


def test_a_label_check_runs_inside_the_program_with_eagers_values():
    x = em.tensor(np.linspace(-1, 1, 6, dtype=np.float32))
    labels = _labels([0, 4, -100, 2, 1, -100])
    f = em.jit(_masked)
    for _ in range(3):
        np.testing.assert_array_equal(f(x, labels).numpy(), _masked(x, labels).numpy())
    plan = _plan(f)
    assert plan.program is not None, plan.program_reason
    assert plan.program.failed is not None and plan.program.calls >= 2


@pytest.mark.parametrize("bad", [5, -1])
def test_a_bad_label_raises_eagers_error_on_every_call_and_the_next_good_call_runs(bad):
    x = em.tensor(np.ones(4, np.float32))
    good, wrong = _labels([1, 2, 3, 4]), _labels([1, bad, 3, 4])
    with pytest.raises(em.IndexingError) as eager_error:
        _masked(x, wrong)
    f = em.jit(_masked)
    f(x, good)
    f(x, good)  # the replay paths are built
    calls = _plan(f).program.calls
    for _ in range(2):
        with pytest.raises(em.IndexingError) as jit_error:
            f(x, wrong)
        assert str(jit_error.value).splitlines()[0] == str(eager_error.value).splitlines()[0]
    assert _plan(f).program.calls > calls  # the program ran, failed and was replayed
    assert _plan(f).program.failed[0] == 0
    np.testing.assert_array_equal(f(x, good).numpy(), _masked(x, good).numpy())


def test_a_failed_check_writes_nothing_into_an_assigned_input():
    state = em.zeros(3)
    labels_ok, labels_bad = _labels([0, 1, 2]), _labels([0, 9, 2])

    def update(labels):
        keep = em.functional.primitives.apply(OPS["check_labels"], labels, num_classes=5,
                                              ignore_index=-100, caller="update")
        state.add_(em.where(keep, 1.0, 0.0))
        return state * 1.0

    f = em.jit(update)
    f(labels_ok)
    f(labels_ok)
    assert _plan(f).program is not None, _plan(f).program_reason
    before = state.numpy().copy()
    with pytest.raises(em.IndexingError):
        f(labels_bad)
    np.testing.assert_array_equal(state.numpy(), before)


def test_a_constant_among_the_outputs_is_copied_into_each_calls_own_array():
    def with_positions(x):
        return x + 1.0, em.arange(4)

    f = em.jit(with_positions)
    x = em.ones(4)
    first = f(x)[1]
    second = f(x)[1]
    assert _plan(f).program is not None, _plan(f).program_reason
    np.testing.assert_array_equal(second.numpy(), np.arange(4))
    assert not np.shares_memory(first.numpy(), second.numpy())
    second.numpy()[:] = 7  # the caller's array: the constant the program keeps is its own
    np.testing.assert_array_equal(f(x)[1].numpy(), np.arange(4))
