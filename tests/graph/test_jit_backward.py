"""backward() through the results of a jitted function (jit_driver/backward.py): the
results share one autograd node whose backward runs a compiled backward graph traced from
the same call; gradients, refusals and state equal eager's."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode import instrument, nn
from execmode.jit_driver import paths
from execmode.jit_driver.explain_cli import format_report


def _mlp(seed=0):
    em.random.seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))


def _grads(params):
    return [None if p.grad is None else p.grad.numpy().copy() for p in params]


def _assert_same(got, want, tol=1e-6):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_a_jitted_model_trains_with_eager_loss_backward_and_step_as_eagerly():
    eager, compiled = _mlp(), _mlp()
    jitted = em.jit(compiled)
    opts = [em.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (eager, compiled)]
    em.random.seed(1)
    for _ in range(3):
        x, y = em.random.normal((4, 5)), em.random.randint(0, 3, (4,))
        for model, opt in zip((eager, jitted), opts):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        _assert_same(_grads(compiled.parameters()), _grads(eager.parameters()))
        _assert_same([p.numpy() for p in compiled.parameters()],
                     [p.numpy() for p in eager.parameters()])
    cf = jitted.concrete_functions[0]
    assert len(jitted.concrete_functions) == 1 and list(cf.joint.graphs) == [(0,)]
    # Replays keep the generated fast path (unless EXECMODE_JIT_REPLAY forces the general).
    assert jitted._fast is not None or paths.current()["replay"] == "general"
    assert cf.joint.graphs[(0,)].segment.graph.name.endswith(":0/backward")


def test_gradients_of_several_results_add_up_and_an_unused_one_adds_nothing():
    def f(x):
        return em.tanh(x @ w), em.log(b - b), em.exp(b) * 2.0   # log(0): -inf

    for loss in (lambda o: o[0].sum() + (o[2] * o[2]).sum(), lambda o: o[0].sum()):
        got = []
        for run in (f, em.jit(f)):
            em.random.seed(3)
            w = em.random.normal((3, 4)).requires_grad_()
            b = em.random.normal((4,)).requires_grad_()
            loss(run(em.ones((2, 3)))).backward()
            got.append(_grads([w, b]))
        _assert_same(got[1], got[0])  # no NaN from the unused result's zero gradient


def test_a_second_backward_through_the_same_result_accumulates_as_eagerly():
    # As in PyTorch, a second backward needs retain_graph=True the first time; without it
    # both raise PyTorch's error (the call's node counts as saving, as AOTAutograd's).
    results = []
    for jit in (False, True):
        model = _mlp()
        run = em.jit(model) if jit else model
        out = run(em.ones((2, 5)))
        out.sum().backward(retain_graph=True)
        out.sum().backward()
        results.append(_grads(model.parameters()))
        with pytest.raises(em.BackwardError, match="second time"):
            out.sum().backward()
    _assert_same(results[1], results[0])


def test_results_of_a_call_without_grad_have_no_history():
    jitted = em.jit(_mlp())
    with em.no_grad():
        out = jitted(em.ones((2, 5)))
    assert not out.requires_grad and out.grad_fn is None
    assert jitted.concrete_functions[0].joint is None


def test_a_frozen_parameter_gets_no_gradient_and_unfreezing_retraces():
    model = _mlp()
    jitted = em.jit(model)
    model[0].weight.requires_grad_(False)
    jitted(em.ones((2, 5))).sum().backward()
    assert model[0].weight.grad is None and model[0].bias.grad is not None
    model[0].weight.requires_grad_(True)
    jitted(em.ones((2, 5))).sum().backward()
    assert model[0].weight.grad is not None
    assert "requires_grad" in jitted.retraces[-1].reason


def test_gradients_flow_on_into_the_callers_history_and_through_jitted_layers():
    results = []
    for jit in (False, True):
        first, second = _mlp(1), nn.Linear(3, 2)
        x = em.ones((2, 5), requires_grad=True)
        a, b = (em.jit(first), em.jit(second)) if jit else (first, second)
        (b(a(x * 2.0)) ** 2).sum().backward()
        results.append(_grads([x, *first.parameters(), *second.parameters()]))
    _assert_same(results[1], results[0])


def test_a_returned_view_of_an_argument_and_a_written_argument_backpropagate():
    def f(x, h):
        h += x * w           # h (no grad) takes a history through w, as eagerly
        return x[0], h.T

    results = []
    for run in (f, em.jit(f)):
        w = em.tensor([1.0, -2.0, 3.0], requires_grad=True)
        for _ in range(2):
            x, h = em.ones((2, 3), requires_grad=True), em.zeros((2, 3))
            first, ht = run(x, h)
            ((first * first).sum() + ht.sum() + (h * h).sum()).backward()
        results.append(_grads([w, x]))
    _assert_same(results[1], results[0])


def test_values_overwritten_after_the_call_refuse_as_eagerly():
    for jit in (False, True):
        model = _mlp()
        out = (em.jit(model) if jit else model)(em.ones((2, 5)))
        with em.no_grad():
            model[0].weight -= 0.1
        with pytest.raises(em.BackwardError, match="overwritten in place"):
            out.sum().backward()


def test_saved_views_of_a_value_are_made_again_in_the_backward_graph():
    # Attention's q, k and v: strided views of one product, saved for the matmuls' vjps.
    # The backward graph saves the product and views it again (its program reads the
    # views in place, copying nothing at the call); a view taken before the value was
    # written in place is saved as it was, and refuses as eagerly.
    def attention(x):
        qkv = x @ w
        q, k = qkv[:, :4].reshape(3, 2, 2), qkv[:, 4:].reshape(3, 2, 2)
        q, k = em.permute_dims(q, (1, 0, 2)), em.permute_dims(k, (1, 0, 2))
        return em.tanh(q @ em.matrix_transpose(k))

    def written(x):
        h = x @ w
        q = h[:, :4]
        out = q @ em.matrix_transpose(q)
        h *= 2.0
        return out

    grads = []
    for run in (attention, em.jit(attention)):
        w = em.tensor(np.linspace(-1, 1, 40, dtype=np.float32).reshape(5, 8),
                      requires_grad=True)
        for _ in range(2):
            x = em.tensor(np.linspace(0, 1, 15, dtype=np.float32).reshape(3, 5),
                          requires_grad=True)
            # (a gradient that arrives C-ordered: sum's own is a broadcast, copied)
            (run(x) * em.ones((2, 3, 3))).sum().backward()
        grads.append(_grads([w, x]))
    _assert_same(grads[1], grads[0])
    backward = run.concrete_functions[0].joint.graphs[(0,)]
    program = backward.compiled.plan.program
    assert program is not None and all(copy is None for copy in program._keepalive)
    for run in (written, em.jit(written)):
        w = em.ones((5, 8), requires_grad=True)
        with pytest.raises(em.BackwardError, match="overwritten"):
            run(em.ones((3, 5))).sum().backward()


def test_cheap_saved_values_are_computed_again_where_that_saves_one():
    # GELU's vjps read 0.5 * h and h / sqrt 2: the backward saves h once and computes
    # both again (backward_trace.recomputed_values), with eager's gradients. A value the
    # caller can write after the call (an argument) is never the operand: the call saves
    # 0.5 * a and a * 2.0 as eager does, and refuses a backward after a write as eager does.
    def gelu_layer(x):
        return nn.functional.gelu(x @ w)

    def of_argument(a):
        return (a * 0.5) * (a * 2.0)

    grads = []
    for run in (gelu_layer, em.jit(gelu_layer)):
        w = em.tensor(np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6),
                      requires_grad=True)
        x = em.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
        run(x).sum().backward()
        grads.append(_grads([w]))
    _assert_same(grads[1], grads[0])
    assert len(run.concrete_functions[0].joint.tape.recompute) == 2
    for run in (of_argument, em.jit(of_argument)):
        a = em.tensor([1.0, 2.0, 3.0], requires_grad=True)
        out = run(a)
        with em.no_grad():
            a += 10.0
        with pytest.raises(em.BackwardError, match="overwritten in place"):
            out.sum().backward()
    assert not run.concrete_functions[0].joint.tape.recompute


def test_a_jitted_backwards_gradients_become_grad_without_a_copy(monkeypatch):
    # The backward program's outputs are new arrays at every call, a bias's in its own
    # shape (not a reshaped view of its sum), so autograd keeps each as the leaf's .grad.
    from execmode import grad_accumulation

    owned = []
    keep = grad_accumulation.store_first
    monkeypatch.setattr(grad_accumulation, "store_first",
                        lambda leaf, g, alone: owned.append(alone) or keep(leaf, g, alone))
    model = _mlp()
    jitted = em.jit(model)
    for _ in range(3):
        for p in model.parameters():
            p.grad = None
        owned.clear()
        (jitted(em.ones((4, 5))) ** 2).sum().backward()
    assert owned == [True] * 4
    grads = [p.grad._data for p in model.parameters()]
    assert all(g.base is None and g.flags.c_contiguous for g in grads)


def _tanh_of(model):
    return lambda x: em.tanh(model(x))


def test_writing_a_result_with_grad_on_keeps_what_its_backward_reads():
    # y = tanh(...) is saved for tanh's vjp; y += 1 must not change the gradient.
    results = []
    for jit in (False, True):
        model = _mlp()
        f = _tanh_of(model)
        run = em.jit(f) if jit else f
        y = run(em.ones((2, 5)))
        y += 1.0
        y.sum().backward()
        results.append(_grads(model.parameters()))
    _assert_same(results[1], results[0])


def test_a_function_with_graph_breaks_backpropagates_through_every_segment():
    def f(x):
        h = x @ w
        if float(h.sum()) > -1e9:   # a graph break: the earlier tape runs eagerly
            h = em.tanh(h) * 2.0
        return h

    results = []
    for run in (f, em.jit(f)):
        w = em.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4),
                      requires_grad=True)
        for _ in range(2):
            x = em.ones((2, 3), requires_grad=True)
            run(x).sum().backward()
        results.append(_grads([w, x]))
    _assert_same(results[1], results[0])


def test_a_history_carried_across_calls_links_each_call_to_the_last():
    # g += w * x inside: g's history from the previous call flows into each call's
    # backward, another history at every call, so the call re-runs its Python (a replay
    # would link every call to the first's).
    results = []
    for jit in (False, True):
        g = em.zeros(3)
        w = em.tensor([1.0, 2.0, 3.0], requires_grad=True)

        def f(x, g=g, w=w):
            em.assign(g, g + w * x)
            return g * 2.0

        run = em.jit(f) if jit else f
        outs = [run(em.tensor([0.5, 2.0, -1.0])) for _ in range(3)]
        outs[2].sum().backward()
        results.append(_grads([w]))
    _assert_same(results[1], results[0])


def test_backward_traced_into_another_jitted_function_says_so():
    model = _mlp()
    out = em.jit(model)(em.ones((2, 5)))

    @em.jit
    def step():
        out.sum().backward()

    with pytest.raises(em.BackwardError, match="another jitted function"):
        step()


def test_a_jitted_module_is_still_the_module():
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    jitted = em.jit(model)
    assert jitted.parameters() == model.parameters()
    assert list(jitted.state_dict()) == list(model.state_dict())
    assert jitted._orig_mod is model and jitted.training
    x = em.ones((2, 3))
    jitted(x)
    assert jitted.eval() is model and not model.training and not jitted.training
    np.testing.assert_allclose(jitted(x).numpy(), model(x).numpy(), rtol=1e-6)  # no dropout
    assert "training" in jitted.retraces[-1].reason
    jitted.train()
    assert model[1].training and jitted.name == "Sequential"


def test_explain_reports_the_backward_graph():
    model = _mlp()
    report = em.explain(model, em.ones((2, 5)))
    assert "Sequential#0:0/backward" in str(report)
    assert report.backward_graphs and report.to_json()["backward_graphs"][0]["saved"] >= 2
    jitted = em.jit(model)
    jitted(em.ones((2, 5))).sum().backward()
    assert "backward: Sequential#0:0/backward" in format_report([jitted])
    opt = em.optim.SGD(model.parameters(), lr=0.1)

    def step(x):  # a training step's loss, after the update: eagerly, no backward
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss

    assert "raises, as it would eagerly" in str(em.explain(step, em.ones((2, 5))))


class _Graphs:
    def __init__(self):
        self.ids = []

    def on_event(self, event):
        if event.kind in ("graph", "pass", "trace"):
            self.ids.append((event.kind, event.data.get("graph_id")))


def test_the_backward_graph_is_recorded_like_the_forward():
    listener = _Graphs()
    with instrument.listening(listener):
        out = em.jit(_mlp(), backend="numpy")(em.ones((2, 5)))
        out.sum().backward()
    backward = [kind for kind, gid in listener.ids if gid == "Sequential#0:0/backward"]
    assert {"trace", "graph", "pass"} <= set(backward)
