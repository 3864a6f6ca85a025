"""Accumulated gradients as PyTorch keeps them (execmode/grad_accumulation.py): ``.grad``
is one tensor object across accumulations, added into in place, in the parameter's
layout, sharing memory with no other gradient; eager and em.jit leave the same state."""

from __future__ import annotations

import numpy as np
import pytest
from pytorch_twins import torch_or_skip

import execmode as em
import execmode.torch as et


def _element_strides(array) -> tuple:
    return tuple(s // array.itemsize for s in array.strides)


def _linears(torch):
    """The same Linear(4, 5) in PyTorch and execmode (PyTorch's initial weights), and a
    batch for both."""
    torch.manual_seed(0)
    theirs = torch.nn.Linear(4, 5)
    ours = et.nn.Linear(4, 5)
    ours.load_state_dict({k: et.from_numpy(v.detach().numpy().copy())
                          for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    return theirs, ours, torch.from_numpy(x), et.from_numpy(x)


@pytest.mark.parametrize("zeroing", ["none", "set_to_none=False"])
def test_a_linear_weight_accumulates_in_place_as_pytorch_does(zeroing):
    torch = torch_or_skip()
    theirs, ours, tx, ex = _linears(torch)
    t_opt = torch.optim.SGD(theirs.parameters(), lr=0.0)
    e_opt = et.optim.SGD(ours.parameters(), lr=0.0)
    held = {}
    for step in range(3):
        if zeroing != "none" and step == 2:
            t_opt.zero_grad(set_to_none=False)
            e_opt.zero_grad(set_to_none=False)
        (theirs(tx) * 1.5).sum().backward()
        (ours(ex) * 1.5).sum().backward()
        for name in ("weight", "bias"):
            tg = getattr(theirs, name).grad
            eg = getattr(ours, name).grad
            np.testing.assert_allclose(eg.numpy(), tg.numpy(), rtol=1e-6, atol=1e-6)
            assert eg.dtype == em.float32
            assert _element_strides(eg.numpy()) == tuple(tg.stride()), name
            assert eg.numpy().flags.c_contiguous and eg.numpy().base is None
            if step == 0:
                held[name] = (tg, eg)
            else:
                # the same object, holding the accumulated values, in both frameworks
                assert (tg is held[name][0]) and (eg is held[name][1]), name
                np.testing.assert_allclose(held[name][1].numpy(), tg.numpy(), rtol=1e-6)


def test_gradients_sent_to_several_leaves_share_no_memory():
    """add's vjp passes one gradient to both operands, and the caller's gradient reaches
    the leaves unchanged: each .grad is a copy, so accumulating into one changes no other
    (PyTorch clones a gradient someone else references)."""
    torch = torch_or_skip()
    results = []
    for fw in (torch, et):
        a, b, c = (fw.ones(3, requires_grad=True) for _ in range(3))
        g = fw.full((3,), 2.0)
        ((a + b) + c).backward(g)
        grads = (a.grad, b.grad, c.grad)
        assert len({id(x) for x in (*grads, g)}) == 4
        ((a + b) * 3.0 + c).backward(g)
        a.backward(g)  # a leaf as the root: its gradient is the caller's, copied
        assert a.grad is grads[0]
        results.append([x.detach().numpy().copy() for x in (a.grad, b.grad, c.grad, g)])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_vjp_sending_one_fresh_gradient_to_a_leaf_and_an_inner_tensor():
    """x * y's gradient for y reaches the leaf w directly and, through the inner t = w +
    0.0 (a pass-through vjp), the leaf w again: accumulating the second contribution
    must not change the first's memory."""
    torch = torch_or_skip()
    results = []
    for fw in (torch, et):
        w = fw.tensor([1.0, 2.0, 3.0], requires_grad=True)
        v = fw.tensor([4.0, 5.0, 6.0], requires_grad=True)
        for _ in range(2):
            y = w * v
            t = y + 0.0
            (y + t).sum().backward()
        results.append((w.grad.detach().numpy().copy(), v.grad.detach().numpy().copy()))
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_transposed_leaf_keeps_its_layout_in_grad():
    torch = torch_or_skip()
    base = np.arange(20, dtype=np.float32).reshape(4, 5)
    tw = torch.from_numpy(base.copy()).t().requires_grad_()
    ew = em.asarray(base.copy().T)
    ew.requires_grad_()
    assert ew.numpy().flags.f_contiguous  # a leaf in F order, as PyTorch's
    m = np.ones((5, 4), np.float32)
    for _ in range(2):
        (tw * torch.from_numpy(m)).sum().backward()
        (ew * em.asarray(m)).sum().backward()
    assert _element_strides(ew.grad.numpy()) == tuple(tw.grad.stride())
    np.testing.assert_array_equal(ew.grad.numpy(), tw.grad.numpy())


def test_a_retained_gradient_is_a_copy_summed_out_of_place():
    torch = torch_or_skip()
    for fw in (torch, et):
        a = fw.ones(3, requires_grad=True)
        t = a * 2.0
        t.retain_grad()
        (t * 1.0).sum().backward(retain_graph=True)
        first = t.grad
        (t * 1.0).sum().backward()
        assert t.grad is not first  # PyTorch: grad = grad + new for a non-leaf
        assert first.detach().numpy().tolist() == [1.0, 1.0, 1.0]
        assert t.grad.detach().numpy().tolist() == [2.0, 2.0, 2.0]
        assert a.grad.detach().numpy().tolist() == [4.0, 4.0, 4.0]


def test_hooks_run_when_an_existing_grad_is_accumulated_into():
    w = em.asarray(np.float32([1.0, 2.0]))
    w.requires_grad_()
    seen = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().tolist()))
    (w * 2.0).sum().backward()
    (w * 3.0).sum().backward()  # the same .grad object, added into
    assert seen == [[2.0, 2.0], [5.0, 5.0]]


def _state(model) -> list:
    return [(p.grad, p.grad.numpy().copy(), p.grad.numpy().strides, p.grad.dtype)
            for p in model.parameters()]


def test_eager_and_jit_leave_the_same_accumulated_grads():
    """Without zeroing, then with zero_grad(set_to_none=False), then set_to_none: every
    .grad's values, dtype, strides and identity across calls agree between eager and
    em.jit, and a reference held to a .grad sees the next call's accumulation."""
    runs = {}
    for jit in (False, True):
        et.manual_seed(0)
        model = et.nn.Sequential(et.nn.Linear(4, 5), et.nn.Tanh(), et.nn.Linear(5, 2))
        opt = et.optim.SGD(model.parameters(), lr=0.0)
        x = et.from_numpy(np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32))

        def step(x, zero, model=model, opt=opt):
            if zero is not None:
                opt.zero_grad(set_to_none=zero)
            model(x).sum().backward()

        run = em.jit(step) if jit else step  # zero, a Python value: static
        states = []
        for zero in (None, None, False, None, True, None):
            run(x, zero)
            states.append(_state(model))
            grads = [p.grad.numpy() for p in model.parameters()]
            assert not any(np.shares_memory(a, b) for i, a in enumerate(grads)
                           for b in grads[i + 1:])  # no two .grads share memory
        runs[jit] = states
    for k, (eager, jitted) in enumerate(zip(runs[False], runs[True], strict=True)):
        for (_, ev, es, ed), (_, jv, js, jd) in zip(eager, jitted, strict=True):
            np.testing.assert_allclose(jv, ev, rtol=1e-6, atol=1e-6, err_msg=f"call {k}")
            assert (js, jd) == (es, ed), f"call {k}"
    for states in runs.values():
        for k in range(1, len(states)):
            same = [a[0] is b[0] for a, b in zip(states[k - 1], states[k], strict=True)]
            # a new .grad only after set_to_none=True (call 4)
            assert all(same) == (k != 4), k
        # the first call's .grad objects hold the values of call 3 (the last before
        # set_to_none dropped them)
        for first, third in zip(states[0], states[3], strict=True):
            np.testing.assert_array_equal(first[0].numpy(), third[1])


def test_jit_gives_a_grad_of_its_own_where_eager_does():
    # The bias's gradient is a reshape of a sum: store_first traces a copy, which simplify
    # drops; passes/outputs.py copies the output back (a view after the passes only).
    et.manual_seed(0)
    model = et.nn.Linear(4, 5)
    x = et.from_numpy(np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32))
    y = et.tensor([0, 2, 1])

    def step(x, y):
        model.zero_grad(set_to_none=True)
        et.nn.functional.cross_entropy(model(x), y).backward()

    step(x, y)
    eager = [p.grad.numpy().base is None for p in model.parameters()]
    assert eager == [True, True]
    em.jit(step)(x, y)
    assert [p.grad.numpy().base is None for p in model.parameters()] == eager


def test_a_fresh_gradient_given_to_a_leaf_and_an_inner_tensor_is_copied():
    """A vjp that returns one fresh tensor for two operands, a leaf and an inner tensor:
    the leaf's .grad must not be that tensor, or accumulating the leaf's next contribution
    in place would change the inner tensor's pending gradient."""
    from execmode.ops import OPS

    op = OPS["multiply"]
    real_vjp = op.vjp

    def one_result_twice(g, out, a, b):  # d(a*b) for a == b == 1: g and g, as one tensor
        h = g * 1.0
        return h, h

    w = em.asarray(np.float32([1.0, 1.0]))
    w.requires_grad_()
    object.__setattr__(op, "vjp", one_result_twice)
    try:
        t = w + 0.0       # inner
        y = w * t         # its vjp: h to w (first) and h to t (pending)
        z = (t * 1.0) + w  # walked after y: adds into w's .grad before t's node runs
        (z + y).sum().backward()
    finally:
        object.__setattr__(op, "vjp", real_vjp)
    # w: 1 (y) + 1 (z) + t's 2 (1 from y, 1 from t * 1.0) = 4; 5 if h were w's .grad
    assert w.grad.numpy().tolist() == [4.0, 4.0]


def test_held_alone_tells_a_fresh_array_from_a_shared_one():
    from execmode.grad_accumulation import held_alone

    g = em.asarray(np.ones((2, 3), np.float32))
    fresh = g * 2.0
    assert held_alone(fresh)  # what backward keeps as .grad without a copy
    view = fresh.numpy()[:1]
    assert not held_alone(fresh)  # a view of it is alive
    del view
    assert held_alone(fresh)
    assert not held_alone(em.reshape(fresh, (3, 2)))  # a view itself
    alias = fresh.detach()  # the same memory, another tensor
    assert alias.numpy() is fresh.numpy()
    assert not held_alone(fresh) and not held_alone(alias)


def test_lbfgs_with_in_place_zeroing_keeps_its_line_search_gradients():
    """One parameter and zero_grad(set_to_none=False) in the closure: each closure zeroes
    and accumulates into the one .grad in place, while the strong-Wolfe line search keeps
    earlier flat gradients; LBFGS takes PyTorch's steps."""
    torch = torch_or_skip()
    target = np.float64([1.0, -2.0, 3.0])
    results = []
    for fw in (torch, et):
        w = fw.zeros(3, dtype=fw.float64, requires_grad=True)
        aim = fw.tensor(target)
        opt = fw.optim.LBFGS([w], lr=1.0, max_iter=20, line_search_fn="strong_wolfe")

        def closure(w=w, aim=aim, opt=opt, fw=fw):
            opt.zero_grad(set_to_none=False)
            loss = ((w - aim) ** 4).sum() + (w * w).sum()
            loss.backward()
            return loss

        for _ in range(3):
            opt.step(closure)
        results.append(w.detach().numpy().copy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-9, atol=1e-12)
