"""Optimizers: parameter groups, AdamW, RMSprop, state_dict, and hyperparameters that a
jitted step reads at every call."""

from __future__ import annotations

import numpy as np
import pytest

import execmode as em
from execmode import nn

# --- NumPy references of PyTorch's update rules (the torch twin checks them too) --------


def np_adam(p, g, m, v, t, lr, b1, b2, eps, wd, decoupled):
    if decoupled:
        p = p * (1 - lr * wd)
    else:
        g = g + wd * p
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    p = p - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return p, m, v


def np_rmsprop(p, g, sq, ga, buf, lr, alpha, eps, wd, momentum, centered):
    g = g + wd * p
    sq = alpha * sq + (1 - alpha) * g * g
    if centered:
        ga = alpha * ga + (1 - alpha) * g
        avg = np.sqrt(sq - ga * ga) + eps
    else:
        avg = np.sqrt(sq) + eps
    if momentum:
        buf = momentum * buf + g / avg
        return p - lr * buf, sq, ga, buf
    return p - lr * g / avg, sq, ga, buf


def _quadratic_grads(params):
    """Loss sum(p**3 / 3 + p): gradient p**2 + 1, different for every element."""
    loss = sum(((p ** 3) / 3 + p).sum() for p in params)
    loss.backward()


START = [np.array([[0.5, -1.0], [2.0, 0.25]]), np.array([1.5, -0.5])]


def _run(make, steps=4, dtype=em.float64):
    params = [em.tensor(a, dtype=dtype, requires_grad=True) for a in START]
    opt = make(params)
    for _ in range(steps):
        opt.zero_grad()
        _quadratic_grads(params)
        opt.step()
    return [p.numpy() for p in params], opt


@pytest.mark.parametrize("decoupled", [False, True], ids=["adam", "adamw"])
def test_adam_and_adamw_match_the_reference(decoupled):
    cls = em.optim.AdamW if decoupled else em.optim.Adam
    got, _ = _run(lambda ps: cls(ps, lr=0.1, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.3))
    for a, want_p in zip(START, got):
        p, m, v = a.copy(), np.zeros_like(a), np.zeros_like(a)
        for t in range(1, 5):
            p, m, v = np_adam(p, p ** 2 + 1, m, v, t, 0.1, 0.8, 0.95, 1e-6, 0.3, decoupled)
        np.testing.assert_allclose(want_p, p, rtol=1e-12)


@pytest.mark.parametrize("momentum, centered", [(0.0, False), (0.9, False), (0.5, True)])
def test_rmsprop_matches_the_reference(momentum, centered):
    got, _ = _run(lambda ps: em.optim.RMSprop(ps, lr=0.05, alpha=0.9, eps=1e-6,
                                             weight_decay=0.1, momentum=momentum,
                                             centered=centered))
    for a, want_p in zip(START, got):
        p, sq, ga, buf = a.copy(), *(np.zeros_like(a) for _ in range(3))
        for _ in range(4):
            p, sq, ga, buf = np_rmsprop(p, p ** 2 + 1, sq, ga, buf, 0.05, 0.9, 1e-6, 0.1,
                                        momentum, centered)
        np.testing.assert_allclose(want_p, p, rtol=1e-12)


TWINS = [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.8, dampening=0.3, maximize=True)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("AdamW", dict(lr=0.05, weight_decay=0.2)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.2)),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
]


@pytest.mark.parametrize("name, kwargs", TWINS,
                         ids=[f"{t[0]}-{i}" for i, t in enumerate(TWINS)])
def test_optimizers_match_torch(name, kwargs):
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    got, _ = _run(lambda ps: getattr(em.optim, name)(
        [{"params": ps[:1]}, {"params": ps[1:], "lr": 0.02}], **kwargs), steps=5)
    params = [torch.tensor(a, requires_grad=True) for a in START]
    opt = getattr(torch.optim, name)([{"params": params[:1]}, {"params": params[1:],
                                                               "lr": 0.02}], **kwargs)
    for _ in range(5):
        opt.zero_grad()
        sum(((p ** 3) / 3 + p).sum() for p in params).backward()
        opt.step()
    for mine, theirs in zip(got, params):
        np.testing.assert_allclose(mine, theirs.detach().numpy(), rtol=1e-10)


def test_param_groups_have_their_own_hyperparameters():
    em.random.seed(0)
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    opt = em.optim.SGD([{"params": model[0].parameters()},
                        {"params": model[1].parameters(), "lr": 0.0125, "weight_decay": 0.5}],
                       lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.0125]
    assert [g["weight_decay"] for g in opt.param_groups] == [0.0, 0.5]
    assert opt.param_groups[1]["momentum"] == 0.9  # a default fills what a group leaves out
    before = [p.numpy().copy() for p in model.parameters()]
    model(em.ones((4, 2))).sum().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    opt.step()
    for k, (b, g, p) in enumerate(zip(before, grads, model.parameters())):
        lr, wd = (0.1, 0.0) if k < 2 else (0.0125, 0.5)
        np.testing.assert_allclose(p.numpy(), b - lr * (g + wd * b), rtol=1e-6)
    with pytest.raises(AttributeError, match=r"2 parameter groups.*param_groups\[i\]\['lr'\]"):
        _ = opt.lr
    opt.add_param_group({"params": [em.zeros(2, requires_grad=True)], "lr": 1.0})
    assert len(opt.param_groups) == 3 and len(opt.params) == 5


def test_single_group_shortcuts_read_and_write_the_group():
    opt = em.optim.Adam([em.zeros(2, requires_grad=True)], lr=0.1)
    assert opt.lr == 0.1 and opt.betas == (0.9, 0.999)
    opt.lr = 0.5
    assert opt.param_groups[0]["lr"] == 0.5


def test_optimizer_argument_errors():
    p = em.zeros(2, requires_grad=True)
    with pytest.raises(em.ArgumentError, match="empty"):
        em.optim.AdamW([], lr=0.1)
    with pytest.raises(em.ArgumentError, match=">= 0"):
        em.optim.RMSprop([p], lr=-0.1)
    em.optim.SGD([p], lr=0.0)  # allowed, as PyTorch
    with pytest.raises(em.ArgumentError, match="differentiable=True"):
        em.optim.Adam([p], differentiable=True)
    with pytest.raises(em.ArgumentError, match="zero dampening"):
        em.optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(em.ArgumentError, match="rho"):
        em.optim.Adadelta([p], rho=1.5)
    with pytest.raises(em.ArgumentError, match="more than one parameter group"):
        em.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(em.ArgumentError, match="no hyperparameter 'momentun'"):
        em.optim.SGD([{"params": [p], "momentun": 0.9}], lr=0.1)
    with pytest.raises(em.ArgumentError, match="betas"):
        em.optim.Adam([p], betas=(0.9, 1.5))
    with pytest.raises(em.ArgumentError, match="single Tensor"):
        em.optim.SGD(p, lr=0.1)


# --- hyperparameters under jit ---------------------------------------------------------
def _train_with_changes(make, change, jit, steps=6):
    em.random.seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = make(model)
    x = em.random.normal((8, 3))
    y = em.random.normal((8, 1))

    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    f = em.jit(step, on_break="error") if jit else step
    losses = []
    for i in range(steps):
        change(opt, i)
        losses.append(f(x, y).item())
    return losses, [p.numpy() for p in model.parameters()], f


def _groups(cls, **kwargs):
    return lambda model: cls([{"params": model[0].parameters()},
                              {"params": model[2].parameters(), "lr": 0.01}], **kwargs)


def _set_lrs(opt, i):
    opt.param_groups[0]["lr"] = 0.1 / (1 + i)
    opt.param_groups[1]["lr"] = 0.02 * (1 + i)


def _set_betas(opt, i):
    opt.param_groups[0]["betas"] = (0.9 - 0.1 * i, 0.99)
    opt.param_groups[1]["weight_decay"] = 0.1 * (1 + i)  # 0 would change `if decay:`


CHANGES = [
    ("sgd lrs", _groups(em.optim.SGD, lr=0.1, momentum=0.9), _set_lrs),
    ("adamw lrs", _groups(em.optim.AdamW, lr=0.05), _set_lrs),
    ("rmsprop lrs", _groups(em.optim.RMSprop, lr=0.01, momentum=0.5), _set_lrs),
    ("adam betas and decay", _groups(em.optim.Adam, lr=0.05, weight_decay=0.01), _set_betas),
    ("sgd dampening lrs", _groups(em.optim.SGD, lr=0.1, momentum=0.9, dampening=0.5),
     _set_lrs),
    ("adagrad lrs", _groups(em.optim.Adagrad, lr=0.1, lr_decay=0.01), _set_lrs),
    ("adadelta lrs", _groups(em.optim.Adadelta, lr=1.0), _set_lrs),
]


@pytest.mark.parametrize("make, change", [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_per_group_hyperparameters_are_graph_inputs(make, change):
    eager, w_eager, _ = _train_with_changes(make, change, jit=False)
    jitted, w_jit, f = _train_with_changes(make, change, jit=True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)
    for a, b in zip(w_jit, w_eager):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert f.trace_count == 1, [r.reason for r in f.retraces]  # no retrace per new value


# --- state_dict -----------------------------------------------------------------------
def test_state_dict_layout_is_pytorchs():
    em.random.seed(0)
    model = nn.Linear(2, 2)
    opt = em.optim.AdamW([{"params": [model.weight]}, {"params": [model.bias], "lr": 0.5}])
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0] and sd["param_groups"][1]["params"] == [1]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    t = torch.nn.Linear(2, 2)
    topt = torch.optim.AdamW([{"params": [t.weight]}, {"params": [t.bias], "lr": 0.5}])
    t(torch.ones(1, 2)).sum().backward()
    topt.step()
    tsd = topt.state_dict()
    assert set(tsd["state"][0]) == set(sd["state"][0])
    assert set(tsd["param_groups"][0]) >= set(sd["param_groups"][0])


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"])
def test_load_state_dict_resumes_identically(name):
    kwargs = {"SGD": dict(lr=0.1, momentum=0.9, dampening=0.2)}.get(name, dict(lr=0.05))
    make = lambda ps: getattr(em.optim, name)(ps, **kwargs)  # noqa: E731
    straight, _ = _run(make, steps=6)
    first, opt = _run(make, steps=3)
    saved = {k: v for k, v in opt.state_dict().items()}
    saved = {"state": {i: {k: em.tensor(t.numpy().copy()) for k, t in s.items()}
                       for i, s in saved["state"].items()},
             "param_groups": [dict(g) for g in saved["param_groups"]]}
    params = [em.tensor(a, requires_grad=True) for a in first]
    resumed = make(params)
    resumed.load_state_dict(saved)
    for _ in range(3):
        resumed.zero_grad()
        _quadratic_grads(params)
        resumed.step()
    for a, b in zip(params, straight):
        np.testing.assert_array_equal(a.numpy(), b)


def test_load_state_dict_errors():
    p, q = em.zeros(2, requires_grad=True), em.zeros(3, requires_grad=True)
    opt = em.optim.Adam([p, q])
    sd = opt.state_dict()
    with pytest.raises(em.ArgumentError, match="1 parameter groups.*2"):
        em.optim.Adam([{"params": [p]}, {"params": [q]}]).load_state_dict(sd)
    with pytest.raises(em.ArgumentError, match="group 0 has 2 parameters"):
        em.optim.Adam([p]).load_state_dict(sd)
    with pytest.raises(em.ShapeError, match=r"'exp_avg' of parameter 0.*\(2,\).*\(3,\)"):
        em.optim.Adam([q, p]).load_state_dict(sd)
    with pytest.raises(em.ArgumentError, match="unexpected state"):
        em.optim.SGD([p, q], lr=0.1, momentum=0.9).load_state_dict(sd)


def test_named_parameters_are_accepted_and_their_names_kept():
    em.random.seed(0)
    model = nn.Linear(2, 1)
    opt = em.optim.SGD(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.params == model.parameters()


def test_new_state_dict_layouts_are_pytorchs():
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    for name in ("Adagrad", "Adadelta", "RMSprop", "SGD"):
        kwargs = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.1)
        ours = getattr(em.optim, name)([em.zeros(2, requires_grad=True)], **kwargs)
        t = torch.zeros(2, requires_grad=True)
        theirs = getattr(torch.optim, name)([t], **kwargs)
        t.sum().backward()
        theirs.step()
        sd, tsd = ours.state_dict(), theirs.state_dict()
        assert set(sd["state"][0]) == set(tsd["state"][0]), name
        assert set(sd["param_groups"][0]) - {"initial_lr"} <= set(tsd["param_groups"][0]), name


# --- LBFGS: PyTorch's loop, eager in effect ---------------------------------------------
_A = np.random.default_rng(3).standard_normal((6, 3))
_B = np.random.default_rng(4).standard_normal(6)


def _lbfgs(lib, line_search, jit=False, steps=3):
    if lib is em:
        w = em.zeros(3, dtype=em.float64, requires_grad=True)
        a, b = em.tensor(_A), em.tensor(_B)
    else:
        w = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        a, b = lib.tensor(_A), lib.tensor(_B)
    opt = lib.optim.LBFGS([w], lr=1, max_iter=8, history_size=4, line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        loss = ((a @ w - b) ** 2).sum() + (w ** 4).sum()
        loss.backward()
        return loss

    def step():
        return opt.step(closure)

    run = em.jit(step) if jit else step
    losses = [float(run().detach()) for _ in range(steps)]
    return losses, w.detach().numpy().copy(), opt


@pytest.mark.slow
@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_under_jit_breaks_its_graph_and_gives_eagers_numbers(line_search):
    # Slow tier: every decision is a graph break, and each segment compiles its kernels
    # (seconds on a cold kernel cache).
    losses, w, _ = _lbfgs(em, line_search)
    jitted, w_jit, _ = _lbfgs(em, line_search, jit=True)
    np.testing.assert_allclose(jitted, losses, rtol=1e-12)
    np.testing.assert_allclose(w_jit, w, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
def test_lbfgs_matches_torch(line_search):
    losses, w, opt = _lbfgs(em, line_search)
    assert losses[-1] < losses[0]
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    t_losses, t_w, t_opt = _lbfgs(torch, line_search)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-10)
    np.testing.assert_allclose(w, t_w, rtol=1e-8, atol=1e-12)
    theirs = t_opt.state[t_opt.param_groups[0]["params"][0]]
    assert opt.state[0]["func_evals"] == theirs["func_evals"]
    assert opt.state[0]["n_iter"] == theirs["n_iter"]


def test_lbfgs_state_dict_round_trip_and_errors():
    _, w, opt = _lbfgs(em, None, steps=1)
    sd = opt.state_dict()
    assert set(sd["state"][0]) >= {"d", "t", "old_dirs", "old_stps", "ro", "H_diag",
                                   "n_iter", "func_evals"}
    p = em.tensor(w, requires_grad=True)
    other = em.optim.LBFGS([p], max_iter=8, history_size=4)
    other.load_state_dict(sd)
    assert other.state[0]["n_iter"] == opt.state[0]["n_iter"]
    with pytest.raises(em.ArgumentError, match="closure"):
        other.step()
    with pytest.raises(em.ArgumentError, match="parameter groups"):
        em.optim.LBFGS([{"params": [p]}, {"params": [em.zeros(1, requires_grad=True)]}])
    with pytest.raises(em.ArgumentError, match="strong_wolfe"):
        em.optim.LBFGS([p], line_search_fn="backtracking")
