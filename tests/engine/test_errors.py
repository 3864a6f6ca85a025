"""Bad input: every class raises an ExecmodeError naming the op, the operands and the line.

Each offending call is written inside a one-line lambda, so the lambda's line number is the
line of the user's code the message must point at (see helpers.expect_error).
"""

from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest
from helpers import expect_error
from hypothesis import given
from hypothesis import strategies as st

import execmode as em
from execmode import functional as EF

A = em.zeros((2, 3))                    # f32[2,3]@cpu
B = em.zeros((4,))                      # f32[4]@cpu
M = em.zeros((5, 6), dtype=em.float64)  # f64[5,6]@cpu
FLAGS = em.tensor([True, False])        # bool[2]@cpu


def test_message_points_at_a_plain_statement():
    line = sys._getframe().f_lineno + 2
    with pytest.raises(em.ShapeError) as info:
        em.matmul(A, M)
    assert f"{__file__}:{line}" in str(info.value)
    assert info.value.op == "matmul" and info.value.location.lineno == line


def test_broadcast_mismatch():
    expect_error(em.ShapeError, lambda: em.add(A, B), op="add",
                 operands=["f32[2,3]@cpu", "f32[4]@cpu"], mentions=["broadcast"])
    expect_error(em.ShapeError, lambda: A * B, op="multiply",
                 operands=["f32[2,3]@cpu", "f32[4]@cpu"])
    expect_error(em.ShapeError, lambda: em.where(FLAGS, A, 0.0), op="where",
                 operands=["bool[2]@cpu", "f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.broadcast_to(A, (3, 3)), op="broadcast_to",
                 operands=["f32[2,3]@cpu"])


def test_matmul_inner_dimension_mismatch():
    expect_error(em.ShapeError, lambda: em.matmul(A, M), op="matmul",
                 operands=["f32[2,3]@cpu", "f64[5,6]@cpu"], mentions=["inner"])
    expect_error(em.ShapeError, lambda: A @ A, op="matmul", operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.matmul(em.zeros(()), A), op="matmul",
                 operands=["f32[]@cpu"])
    expect_error(em.ShapeError, lambda: em.tensordot(A, M, axes=1), op="tensordot",
                 operands=["f32[2,3]@cpu", "f64[5,6]@cpu"])


def test_bad_reshape():
    expect_error(em.ShapeError, lambda: A.reshape(4, 2), op="reshape",
                 operands=["f32[2,3]@cpu"], mentions=["(4, 2)"])
    expect_error(em.ShapeError, lambda: em.reshape(A, (-1, -1)), op="reshape",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.reshape(A, (-1, 4)), op="reshape",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.squeeze(A, 0), op="squeeze",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.stack([A, B]), op="stack",
                 operands=["f32[2,3]@cpu", "f32[4]@cpu"])
    expect_error(em.ShapeError, lambda: em.concat([A, M]), op="concat",
                 operands=["f32[2,3]@cpu", "f64[5,6]@cpu"])


def test_axis_out_of_range():
    expect_error(em.ShapeError, lambda: em.sum(A, axis=2), op="sum",
                 operands=["f32[2,3]@cpu"], mentions=["axis 2"])
    expect_error(em.ShapeError, lambda: A.mean(axis=-3), op="mean", operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.argmax(A, axis=5), op="argmax",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.softmax(A, axis=2), op="max",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.concat([A, A], axis=2), op="concat",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.expand_dims(A, 4), op="expand_dims",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.flatten(A, 3), op="flatten",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.permute_dims(A, (0, 2)), op="permute_dims",
                 operands=["f32[2,3]@cpu"])


def test_repeated_axis():
    expect_error(em.ShapeError, lambda: em.sum(A, axis=(0, 0)), op="sum",
                 operands=["f32[2,3]@cpu"], mentions=["repeats"])
    expect_error(em.ShapeError, lambda: em.var(A, axis=(1, -1)), op="var",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.permute_dims(A, (1, 1)), op="permute_dims",
                 operands=["f32[2,3]@cpu"])


def test_non_tensor_arguments():
    expect_error(em.ArgumentError, lambda: em.add([1, 2], A), op="add",
                 operands=["list", "f32[2,3]@cpu"], mentions=["em.tensor"])
    expect_error(em.ArgumentError, lambda: em.add(A, "two"), op="add",
                 operands=["f32[2,3]@cpu", "str"])
    expect_error(em.ArgumentError, lambda: em.matmul(A, [[1.0], [2.0]]), op="matmul",
                 operands=["f32[2,3]@cpu", "list"])
    expect_error(em.ArgumentError, lambda: em.matmul("A", A), op="matmul", operands=["str"])
    expect_error(em.ArgumentError, lambda: A + np.ones(3), op="add",
                 operands=["f32[2,3]@cpu", "ndarray"])
    expect_error(em.ArgumentError, lambda: em.exp([1.0]), op="exp", operands=["list"])
    expect_error(em.ArgumentError, lambda: em.sum(None), op="sum", operands=["NoneType"])
    expect_error(em.ArgumentError, lambda: em.concat([A, "x"]), op="concat",
                 operands=["str"])
    expect_error(em.ArgumentError, lambda: em.reshape(A, "23"), op="reshape",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ArgumentError, lambda: em.tensor([[1, 2], [3]]), op="tensor")


def test_bad_dtypes():
    expect_error(em.DTypeError, lambda: em.subtract(FLAGS, FLAGS), op="subtract",
                 operands=["bool[2]@cpu"])
    expect_error(em.DTypeError, lambda: -FLAGS, op="negative", operands=["bool[2]@cpu"])
    expect_error(em.DTypeError, lambda: em.where(A, A, A), op="where",
                 operands=["f32[2,3]@cpu"], mentions=["bool"])
    expect_error(em.DTypeError, lambda: A.astype("float16"), op="astype",
                 operands=["f32[2,3]@cpu"], mentions=["float16"])
    expect_error(em.DTypeError, lambda: em.zeros(2, dtype="float16"), op="full")
    expect_error(em.DTypeError, lambda: em.tensor([1], dtype="int7"), op="tensor")
    expect_error(em.DTypeError, lambda: em.tensor("text"), op="tensor", mentions=["<U4"])
    expect_error(em.DTypeError, lambda: A[em.tensor([0.5])], op="getitem",
                 operands=["f32[2,3]@cpu", "f32[1]@cpu"], mentions=["integer"])


def test_index_out_of_range():
    expect_error(em.ShapeError, lambda: A[5], op="getitem", operands=["f32[2,3]@cpu"],
                 mentions=["out of bounds"])
    expect_error(em.ShapeError, lambda: A[0, -4], op="getitem", operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: A[0, 0, 0], op="getitem", operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: A[em.tensor([0, 7])], op="getitem",
                 operands=["f32[2,3]@cpu", "i64[2]@cpu"], mentions=["out of bounds"])
    expect_error(em.ShapeError, lambda: A[FLAGS[:1]], op="boolean_mask",
                 operands=["f32[2,3]@cpu", "bool[1]@cpu"])
    expect_error(em.ShapeError, lambda: A.__setitem__(3, 1.0), op="index_put",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: A.__setitem__(0, em.ones(4)), op="index_put",
                 operands=["f32[2,3]@cpu", "f32[4]@cpu"])


def test_unknown_device():
    expect_error(em.DeviceError, lambda: em.zeros(3, device="tpu"), op="full",
                 mentions=["'tpu'"])
    expect_error(em.DeviceError, lambda: A.to("tpu"), op="to_device",
                 operands=["f32[2,3]@cpu"], mentions=["'tpu'"])
    expect_error(em.DeviceError, lambda: em.tensor([1.0], device="gpu:0"), op="tensor")
    expect_error(em.DeviceError, lambda: em.randn(2, device="cuda:x"), op="random_normal")


@pytest.mark.skipif(em.cuda_is_available(), reason="checks the error on a machine without "
                                                   "a GPU; this one has one")
def test_cuda_without_a_gpu_names_the_op_and_the_reason():
    expect_error(em.DeviceError, lambda: em.ones(2, device="cuda"), op="full",
                 mentions=["not available"])
    expect_error(em.DeviceError, lambda: A.to("cuda:0"), op="to_device",
                 operands=["f32[2,3]@cpu"], mentions=["not available"])


# Mixing devices needs a GPU: tests/engine/test_gpu.py checks that error where one exists.


def test_item_of_many_elements():
    expect_error(em.ArgumentError, lambda: A.item(), op="item", operands=["f32[2,3]@cpu"])


def test_item_of_many_elements_raises_an_execmode_error():
    with pytest.raises(em.ArgumentError, match="6 elements"):
        A.item()


def test_composites_name_themselves():
    expect_error(em.ShapeError, lambda: em.mse_loss(A, B), op="mse_loss",
                 operands=["f32[2,3]@cpu", "f32[4]@cpu"])
    expect_error(em.ShapeError, lambda: em.cross_entropy(A, em.tensor([0, 1, 2])),
                 op="cross_entropy", operands=["f32[2,3]@cpu", "i64[3]@cpu"])
    expect_error(em.ShapeError, lambda: em.layer_norm(A, 4), op="layer_norm",
                 operands=["f32[2,3]@cpu"])
    expect_error(em.ShapeError, lambda: em.linear(A, M), op="matmul",
                 operands=["f32[2,3]@cpu", "f64[6,5]@cpu"])


def test_errors_are_also_the_builtin_exception_kinds():
    # Code that catches ValueError/TypeError (as for NumPy) keeps working.
    assert issubclass(em.ShapeError, ValueError) and issubclass(em.DTypeError, TypeError)
    with pytest.raises(ValueError):
        em.add(A, B)


# --- no NumPy error leaks unexplained ---------------------------------------------------------

def _junk():
    """Fresh arguments of every kind on each call (assign and setitem write into them)."""
    return [
        em.zeros((2, 3)), em.zeros((4,)), em.zeros((5, 6), dtype=em.float64),
        em.tensor([True, False]), em.zeros(()), em.tensor([1, 2, 3]), 2, -1, 0.5, True, None,
        "x", [1, 2], (0, 0), (5,), (-1, -1), np.ones(2), 99,
    ]


JUNK = st.integers(0, len(_junk()) - 1).map(lambda i: _junk()[i])
# nonzero/argwhere/to_device are covered above; debug_print prints whatever it is given.
SKIPPED = {"nonzero", "argwhere", "to_device", "debug_print"}


def _public_functions():
    names = [n for n in EF.__all__ if n not in SKIPPED]
    names += ["relu", "sigmoid", "gelu", "softmax", "log_softmax", "logsumexp", "linear",
              "mse_loss", "cross_entropy", "layer_norm"]
    return sorted(set(names))


@pytest.mark.parametrize("name", _public_functions())
@given(data=st.data())
def test_bad_arguments_raise_only_execmode_errors(name, data):
    fn = getattr(em, name)
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in params if p.default is p.empty]
    count = data.draw(st.integers(len(required), len(params)))
    args = [data.draw(JUNK) for _ in range(count)]
    if name in ("zeros", "ones", "empty", "randn") and any(
            isinstance(a, int) and a == 99 for a in args):
        return  # 99 is a fine dimension for creation functions: nothing bad to check
    try:
        fn(*args)
    except em.ExecmodeError:
        pass
