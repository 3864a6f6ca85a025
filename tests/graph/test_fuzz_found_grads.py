"""One test per mismatch class the differential fuzzer found around ``.grad`` accumulating
in place (execmode/grad_accumulation.py, PyTorch's AccumulateGrad) under em.jit; each names
its seed and program, minimized by hand from its repros."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz.check import assert_agrees

import execmode as em

_SETUP = """
import execmode as em

# --- setup ---
w = em.tensor([[0.75, 2.25, -1.25], [0.5, -2.25, -2.5], [2.25, -0.5, -2.75], [-2.25, 1.75, 1.0]], dtype=em.float32, requires_grad=True)
b = em.tensor([1.25, -3.0, 0.25], dtype=em.float32, requires_grad=True)
"""

_CALLS = """
F = em.jit(f, passes={passes})
# --- call 1 ---
out1 = F(em.tensor([-1.75, -2.25, 0.5, 3.0], dtype=em.float32, requires_grad=True))
# --- call 2 ---
out2 = F(em.tensor([-0.5, 2.0, 0.5, 2.75], dtype=em.float32, requires_grad=True))
# --- call 3 ---
out3 = F(em.tensor([1.0, 0.25, -2.0, 0.5], dtype=em.float32, requires_grad=True))
"""


@pytest.mark.parametrize("passes", [None, ["simplify", "plan_memory"]])
def test_a_backward_inside_the_function_accumulates_into_grads_it_can_write(passes):
    # 20261171-4575, 20261170-734: the bias's first gradient is sum's ones broadcast to
    # (3,); store_first traced a copy of that view, simplify dropped the copy, and the
    # replay left b.grad the read-only broadcast. The second call adds into b.grad in
    # place: "assignment destination is read-only".
    assert_agrees(_SETUP + """
# --- function ---
def f(y):
    v0 = (y @ w + b).sum()
    v0.backward(retain_graph=True)
    return (v0,)
""" + _CALLS.format(passes=passes))


@pytest.mark.parametrize("passes", [None, ["simplify", "plan_memory"]])
def test_assigning_into_a_grad_the_function_made_writes_it(passes):
    # The same .grad written by em.assign after the call, before its next backward: eager
    # writes b.grad's array of its own; jit's was the read-only broadcast.
    assert_agrees(_SETUP + f"""
# --- function ---
def f(y):
    (y @ w + b).sum().backward()
    return (y.grad,)

F = em.jit(f, passes={passes})
# --- call 1 ---
out1 = F(em.tensor([-1.75, -2.25, 0.5, 3.0], dtype=em.float32, requires_grad=True))
# --- call 2 ---
em.assign(b.grad, em.tensor([1.0, 2.0, 3.0], dtype=em.float32))
out2 = F(em.tensor([0.5, 0.5, 0.5, 0.5], dtype=em.float32, requires_grad=True))
""")


def test_grads_a_jitted_backward_leaves_are_writeable_arrays_of_their_own():
    # What the two classes above read as a mismatch, asserted directly: every .grad is a
    # C-ordered, writeable array of its own, as eager's (and PyTorch's) are.
    w = em.tensor(np.arange(12, dtype=np.float32).reshape(4, 3), requires_grad=True)
    b = em.tensor(np.ones(3, dtype=np.float32), requires_grad=True)

    def f(y):
        (y @ w + b).sum().backward()

    y = em.tensor(np.float32([1.0, -2.0, 0.5, 3.0]), requires_grad=True)
    em.jit(f, passes=["simplify", "plan_memory"])(y)
    grads = [t.grad.numpy() for t in (w, b, y)]
    for g in grads:
        assert g.flags.writeable and g.flags.c_contiguous and g.base is None
    assert not any(np.shares_memory(a, c) for k, a in enumerate(grads) for c in grads[k + 1:])


def test_an_output_a_pass_made_a_view_is_a_fresh_array_as_in_eager():
    # The rule behind both classes (passes/outputs.py): ``x * 1`` is simplified to ``x``,
    # here a broadcast; eager's result is a fresh, writeable array.
    def f(x):
        return em.broadcast_to(x.sum(), (3,)) * 1.0

    x = em.tensor(np.float32([1.0, 2.0]))
    want = f(x).numpy()
    got = em.jit(f, passes=["simplify", "plan_memory"])(x).numpy()
    assert got.flags.writeable and got.strides == want.strides
    got[0] = 7.0
    np.testing.assert_array_equal(got, [7.0, 3.0, 3.0])


def test_assigning_a_scalar_into_a_grad_the_function_made_leaves_an_array_of_its_own():
    # 20261171-35 (as generated before 8a2be12): em.assign(b.grad, a 0-d value) after a
    # backward inside the function, where b.grad was None before the call.
    assert_agrees(_SETUP + """
# --- function ---
def f(x):
    v1 = em.tanh(x @ w + b).sum()
    v1.backward(retain_graph=True)
    em.assign(b.grad, v1 * 2.0)
    return (v1,)

F = em.jit(f, passes=['simplify'])
# --- call 1 ---
out1 = F(em.zeros(0, 4, dtype=em.float32))
# --- call 2 ---
w.grad = None
out2 = F(em.ones(1, 4, dtype=em.float32))
""")


def test_an_op_that_read_a_grad_backpropagates_after_the_grad_accumulated():
    # 20261190-2387: v2 = b.grad + w, then one backward through v2 and v1's retained graph
    # adds into b.grad in place before reaching the add; eager refused ("b.grad was
    # overwritten in place after add used it"), jit and PyTorch (whose version check
    # covers saved tensors alone) backpropagate.
    assert_agrees(_SETUP + """
# --- function ---
def f(y):
    v1 = (y * w[:, 0]).sum() + (b * b).sum()
    v1.backward(retain_graph=True)
    v2 = b.grad + w
    return v1, v2

F = em.jit(f, passes=[])
# --- call 1 ---
out1 = F(em.tensor([-1.75, 1.0, 3.0, -0.75], dtype=em.float32))
# --- call 2 ---
(out1[1].sum() + out1[0].sum()).backward()
out2 = F(em.tensor([1.0, 2.0, 3.0, 4.0], dtype=em.float32))
""")


def test_an_op_that_saved_a_grad_still_refuses_after_it_accumulated():
    # The other side (PyTorch raises too): multiply saves b.grad for w's gradient.
    w = em.tensor([1.0, 2.0], requires_grad=True)
    b = em.tensor([3.0, 4.0], requires_grad=True)
    (b * b).sum().backward()
    loss = (b.grad * w).sum() + (b * b).sum()
    with pytest.raises(em.BackwardError, match="overwritten in place"):
        loss.backward()


def test_one_gradient_for_two_leaves_is_two_grads_apart():
    # Seed 20261212, program 3031: x + z gives x and z the same gradient; eager's .grad of
    # each is a tensor of its own (no memory shared), jit set one tensor as both.
    assert_agrees("""
import execmode as em

# --- setup ---
w = em.tensor([[-1.75, 0.5, 2.5], [2.75, 0.25, 3.0], [-3.0, 0.5, -3.0], [-1.25, 1.75, -1.0]], dtype=em.float32, requires_grad=True)
b = em.tensor([-1.0, 0.75, -2.5], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x, z):
    v3 = x + z
    v6 = ((v3 @ w) * b).sum()
    v6.backward(retain_graph=True)
    return z

F = em.jit(f, passes=[])
# --- call 1 ---
x1 = em.tensor([[1.25, 2.5, -1.25, -1.5]], dtype=em.float32, requires_grad=True)
z1 = em.tensor([[1.0, -0.75, -2.0, 1.75]], dtype=em.float32, requires_grad=True)
out1 = F(x1, z1)
# --- call 2 ---
x2 = em.tensor([[0.5, -2.0, 1.0, 3.0]], dtype=em.float32, requires_grad=True)
z2 = em.tensor([[2.0, 0.25, -1.0, -0.5]], dtype=em.float32, requires_grad=True)
out2 = F(x2, z2)
""")


def test_where_reading_an_accumulated_grad_backpropagates_as_in_pytorch():
    # Seed 20261218, program 919: f runs backward inside (w.grad accumulates in place), then
    # where(b > 0, b, w.grad); an outside backward through both results accumulated into
    # w.grad before it reached where, and eager refused ("w.grad was overwritten") where
    # the jit's one node did not. where's gradient reads its condition only: PyTorch saves
    # nothing else, and eager now lets a .grad that only backward wrote through, as it
    # does for ops that need no values.
    assert_agrees("""
import execmode as em

# --- setup ---
w = em.tensor([[1.0, -1.75, 0.25], [-0.75, 0.5, 1.5], [-2.25, 2.5, 1.75], [-1.0, -2.25, 2.0]], dtype=em.float32, requires_grad=True)
b = em.tensor([1.75, -1.75, -0.75], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x):
    v0 = ((x @ w) * b).sum()
    v0.backward(retain_graph=True)
    v1 = em.where(b > 0.0, b, w.grad)
    v2 = v0 * 0.25
    return v1, v2

F = em.jit(f, passes=[])
# --- call 1 ---
x1 = em.tensor([[2.5, -2.5, 0.25, 0.5], [-2.5, 1.75, 2.75, -2.75]], dtype=em.float32, requires_grad=True)
out1 = F(x1)
# --- call 2 ---
x2 = em.tensor([[0.0, -2.75, 2.25, 3.0], [0.5, 1.25, -1.0, -1.0], [0.0, 2.25, 1.0, 0.25]], dtype=em.float32, requires_grad=True)
out2 = F(x2)
# --- call 3 ---
(out2[0].sum() + out2[1].sum()).backward()
out3 = F(x1)
""")


def test_where_still_refuses_a_condition_overwritten_after_it():
    from execmode.errors import BackwardError

    x = em.tensor([1.0, -2.0, 3.0], requires_grad=True)
    c = x > 0.0
    y = em.where(c, x, 0.0)
    c[...] = em.tensor([False, False, False])
    with pytest.raises(BackwardError, match="overwritten"):
        y.sum().backward()


def test_det_of_a_gram_matrix_that_overflowed_backpropagates_nan_in_both_modes():
    # Seed 20261237, program 1236: x @ x.T of inf beside -3.06e38 is -inf off the diagonal
    # through OpenBLAS (multiply and add fused) and NaN through the small C matmul (the
    # product rounded to float32 first: the documented small-matmul overflow order). det's
    # backward then ran LAPACK's SVD of the NaN matrix in the graph, which raised where
    # eager's of the inf one did not; det's gradient there is NaN in both, as PyTorch's.
    assert_agrees("""
import execmode as em

nan, inf = float("nan"), float("inf")

# --- setup ---

# --- function ---
def f(x):
    return em.linalg.det(x @ x.T + 4.0 * em.eye(x.shape[0], dtype=x.dtype))

F = em.jit(f, passes=['fold_constants', 'eliminate_common_subexpressions'])
# --- call 1 ---
x1 = em.tensor([[-2.5, -1.5, 1.0, -2.75], [inf, -3.06e+38, 0.0, 3.0]], dtype=em.float32, requires_grad=True)
out1 = F(x1)
# --- call 2 ---
(out1 * out1).sum().backward()
x2 = em.tensor([[1.5, 2.0, -0.0, -1.5], [-3.4e+38, 0.0, 1.25, 2.0]], dtype=em.float32, requires_grad=True)
out2 = F(x2)
""")


_READS_A_GRAD = """
import execmode as em

# --- setup ---
w = em.tensor([[1.0, -2.0, -3.0], [-2.25, 1.25, -1.25], [2.25, 1.0, 1.5], [-1.5, -1.5, 0.0]], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x):
    v0 = (x * w[:, 0]).sum()
    v0.backward(retain_graph=True)
    return v0, {op}(w.grad, w) * 2.0

F = em.jit(f, passes=[])
# --- call 1 ---
out1 = F(em.tensor([[-1.0, 1.0, 1.0, -1.5]], dtype=em.float32))
# --- call 2 ---
(out1[{first}].sum() + out1[{second}].sum()).backward()
out2 = F(em.tensor([[0.5, 2.0, -1.0, 1.5]], dtype=em.float32))
# --- call 3 ---
(out2[{first}].sum() + out2[{second}].sum()).backward()
out3 = F(em.tensor([[0.5, 2.0, -1.0, 1.5]], dtype=em.float32))
"""


@pytest.mark.parametrize("op", ["em.maximum", "em.add"])
@pytest.mark.parametrize("first", [0, 1])
def test_a_grad_read_after_the_walk_added_into_it_refuses_as_eagerly(op, first):
    # Seed 20261271, program 1178: an outside backward through both results reaches w
    # through v0 and adds into w.grad in place; where that comes before maximum, which
    # saved w.grad, eager refuses ("w.grad was overwritten after maximum used it"). The
    # jit's one node ran its walk in a fixed order and checked writes only at its start,
    # so it computed. Whether eager refuses depends on the order the outside expression
    # reaches the results (first), which the call's walk now follows; add saves nothing,
    # and backpropagates either way, as in PyTorch.
    assert_agrees(_READS_A_GRAD.format(op=op, first=first, second=1 - first))


@pytest.mark.parametrize("op", ["em.maximum", "em.add"])
def test_an_outside_backward_into_a_grad_a_call_read_is_checked_as_eagerly(op):
    # The same check across the call: after the call, another backward adds into the
    # .grad that the call made (w.grad was None) or read, before the call's result is
    # differentiated. Eager refuses through maximum and not through add; the jit computed
    # through maximum where it made the .grad (nothing checked it), and refused through
    # add where the .grad was there before (a write that was backward's accumulation).
    assert_agrees(f"""
import execmode as em

# --- setup ---
w = em.tensor([1.0, -2.0, 3.0], dtype=em.float32, requires_grad=True)

# --- function ---
def f(x):
    (w * x).sum().backward()
    return {op}(w.grad, w).sum()

F = em.jit(f, passes=[])
# --- call 1 ---
out1 = F(em.tensor([1.0, 1.0, 2.0], dtype=em.float32))
# --- call 2 ---
(w * 3.0).sum().backward()
out1.backward()
out2 = F(em.tensor([1.0, 1.0, 2.0], dtype=em.float32))
# --- call 3 ---
(w * 3.0).sum().backward()
out2.backward()
out3 = F(em.tensor([0.5, 1.0, 2.0], dtype=em.float32))
""")
