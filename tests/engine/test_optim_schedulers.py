"""optim.lr_scheduler: PyTorch's closed forms, a torch twin, state_dict, and a schedule
stepping between jitted training steps without retracing."""

from __future__ import annotations

import math

import numpy as np
import pytest

import execmode as em
from execmode.optim import lr_scheduler as S


def _opt(lib, lrs=(0.1, 0.02)):
    if lib is em:
        ps = [em.zeros(2, requires_grad=True), em.zeros(1, requires_grad=True)]
        return em.optim.SGD([{"params": ps[:1], "lr": lrs[0]}, {"params": ps[1:],
                                                                 "lr": lrs[1]}], lr=lrs[0],
                            momentum=0.9)
    ps = [lib.zeros(2, requires_grad=True), lib.zeros(1, requires_grad=True)]
    return lib.optim.SGD([{"params": ps[:1], "lr": lrs[0]}, {"params": ps[1:], "lr": lrs[1]}],
                         lr=lrs[0], momentum=0.9)


def _schedule(lib, build, steps=25):
    opt = _opt(lib)
    sched = build(lib.optim.lr_scheduler, opt)
    lrs = [sched.get_last_lr() + _momenta(opt)]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr() + _momenta(opt))
        assert [g["lr"] for g in opt.param_groups] == lrs[-1][:2]
    return np.array(lrs)


def _momenta(opt):
    """The momentum of each group (OneCycleLR cycles it)."""
    return [g["momentum"] for g in opt.param_groups]


BUILDS = {
    "step": lambda L, o: L.StepLR(o, step_size=4, gamma=0.5),
    "multistep": lambda L, o: L.MultiStepLR(o, milestones=[3, 10], gamma=0.1),
    "exponential": lambda L, o: L.ExponentialLR(o, gamma=0.9),
    "cosine": lambda L, o: L.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "lambda": lambda L, o: L.LambdaLR(o, lambda e: 1 / (1 + e)),
    "lambda per group": lambda L, o: L.LambdaLR(o, [lambda e: 0.9 ** e, lambda e: e + 1]),
    "linear warmup": lambda L, o: L.LinearLR(o, start_factor=0.1, total_iters=5),
    "warmup then cosine": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.25, total_iters=4), L.CosineAnnealingLR(o, T_max=12)],
        milestones=[4]),
    "three phases": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.5, total_iters=3), L.StepLR(o, 2, 0.5),
            L.ExponentialLR(o, 0.8)], milestones=[3, 9]),
    "constant": lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=4),
    "polynomial": lambda L, o: L.PolynomialLR(o, total_iters=10, power=2.0),
    "warm restarts": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2,
                                                                eta_min=0.001),
    "chained": lambda L, o: L.ChainedScheduler([L.ConstantLR(o, 0.5, 3),
                                                L.ExponentialLR(o, 0.9)]),
    "two on one optimizer": lambda L, o: _Both(L.LinearLR(o, 0.2, total_iters=4),
                                               L.StepLR(o, 3, 0.5)),
    "one cycle": lambda L, o: L.OneCycleLR(o, max_lr=[0.5, 0.1], total_steps=26),
    "one cycle, three linear phases": lambda L, o: L.OneCycleLR(
        o, max_lr=0.5, epochs=2, steps_per_epoch=13, three_phase=True,
        anneal_strategy="linear", div_factor=10.0),
}


class _Both:
    """Two schedulers stepped one after the other (their factors compose)."""

    def __init__(self, *schedulers):
        self.schedulers = schedulers

    def step(self):
        for s in self.schedulers:
            s.step()

    def get_last_lr(self):
        return self.schedulers[-1].get_last_lr()

CLOSED = {  # epoch -> factor of the base lr, as written in PyTorch's documentation
    "step": lambda e: 0.5 ** (e // 4),
    "multistep": lambda e: 0.1 ** ((e >= 3) + (e >= 10)),
    "exponential": lambda e: 0.9 ** e,
    "lambda": lambda e: 1 / (1 + e),
    "linear warmup": lambda e: 0.1 + 0.9 * min(e, 5) / 5,
    "warmup then cosine": lambda e: 0.25 + 0.75 * e / 4 if e < 4
    else (1 + math.cos(math.pi * (e - 4) / 12)) / 2,
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_schedules_follow_the_closed_forms(name):
    lrs = _schedule(em, BUILDS[name])[:, :2]
    want = np.array([[0.1 * CLOSED[name](e), 0.02 * CLOSED[name](e)] for e in range(len(lrs))])
    np.testing.assert_allclose(lrs, want, rtol=1e-12)


def test_cosine_closed_form_with_eta_min():
    lrs = _schedule(em, BUILDS["cosine"])[:, 0]
    want = [0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * e / 10)) / 2 for e in range(26)]
    np.testing.assert_allclose(lrs, want, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_schedules_match_torch(name):
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about schedulers built at epoch 0
        theirs = _schedule(torch, BUILDS[name])
    np.testing.assert_allclose(_schedule(em, BUILDS[name]), theirs, rtol=1e-9, atol=1e-15)


def test_state_dict_resumes_the_schedule():
    opt = _opt(em)
    sched = S.SequentialLR(opt, [S.LinearLR(opt, 0.1, total_iters=3),
                                 S.CosineAnnealingLR(opt, T_max=8)], milestones=[3])
    for _ in range(5):
        sched.step()
    saved = sched.state_dict()
    saved_groups = [dict(g, params=None) for g in opt.param_groups]  # lr, initial_lr
    tail = []
    for _ in range(4):
        sched.step()
        tail.append(sched.get_last_lr())

    # PyTorch's resume order: build the scheduler (which sets lr), then load the
    # optimizer's state (the saved lr: steps are chainable) and the scheduler's.
    opt2 = _opt(em)
    sched2 = S.SequentialLR(opt2, [S.LinearLR(opt2, 0.1, total_iters=3),
                                   S.CosineAnnealingLR(opt2, T_max=8)], milestones=[3])
    for g, saved_group in zip(opt2.param_groups, saved_groups):
        g.update({k: v for k, v in saved_group.items() if k != "params"})
    sched2.load_state_dict(saved)
    assert sched2.last_epoch == 5
    resumed = []
    for _ in range(4):
        sched2.step()
        resumed.append(sched2.get_last_lr())
    assert resumed == tail


def test_lambda_state_dict_leaves_out_the_functions():
    sd = S.LambdaLR(_opt(em), lambda e: 1.0).state_dict()
    assert "lr_lambdas" not in sd and sd["last_epoch"] == 0


def test_scheduler_errors():
    opt = _opt(em)
    with pytest.raises(em.ArgumentError, match="step_size must be a positive integer"):
        S.StepLR(opt, 0)
    with pytest.raises(em.ArgumentError, match="one milestone fewer"):
        S.SequentialLR(opt, [S.StepLR(opt, 1)], milestones=[2])
    with pytest.raises(em.ArgumentError, match="em.optim optimizer"):
        S.StepLR(object(), 1)
    with pytest.raises(em.ArgumentError, match="initial_lr"):
        S.StepLR(_opt(em), 1, last_epoch=3)
    with pytest.raises(em.ArgumentError, match="2 functions"):
        S.LambdaLR(opt, [lambda e: 1.0])


def test_a_schedule_between_jitted_steps_costs_no_retrace():
    def run(jit):
        em.random.seed(0)
        model = em.nn.Linear(3, 1)
        opt = em.optim.AdamW(model.parameters(), lr=0.1)
        sched = S.SequentialLR(opt, [S.LinearLR(opt, 0.2, total_iters=3),
                                     S.CosineAnnealingLR(opt, T_max=7)], milestones=[3])
        x, y = em.random.normal((6, 3)), em.random.normal((6, 1))

        def step(x, y):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        f = em.jit(step, on_break="error") if jit else step
        losses = []
        for _ in range(10):
            losses.append(f(x, y).item())
            sched.step()
        return losses, f

    eager, _ = run(False)
    jitted, f = run(True)
    np.testing.assert_allclose(jitted, eager, rtol=1e-5)
    assert f.trace_count == 1


def _plateau(lib, metrics, **kwargs):
    opt = _opt(lib)
    sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    out = []
    for m in metrics:
        sched.step(m)
        out.append(sched.get_last_lr())
    return np.array(out), sched


PLATEAUS = [
    dict(patience=2, cooldown=1, factor=0.5, min_lr=[0.01, 0.001]),
    dict(mode="max", threshold_mode="abs", threshold=0.05, patience=1),
]


@pytest.mark.parametrize("kwargs", PLATEAUS, ids=["min rel", "max abs"])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    metrics = [1, 0.9, 0.95, 0.95, 0.95, 0.95, 0.8, 0.85, 0.9, 0.9, 0.9, 0.93, 0.9, 0.9,
               0.91, 0.9, 0.9, 0.9]
    ours, sched = _plateau(em, [em.tensor(m) for m in metrics], **kwargs)
    assert sched.last_epoch == len(metrics)
    torch = pytest.importorskip("torch", reason="the PyTorch twin check needs torch")
    theirs, _ = _plateau(torch, metrics, **kwargs)
    np.testing.assert_array_equal(ours, theirs)
    assert ours[-1, 0] < 0.1


def test_one_cycle_cycles_adams_first_beta_and_refuses_stepping_past_the_end():
    ps = [em.zeros(2, requires_grad=True)]
    opt = em.optim.Adam(ps, lr=0.1)
    sched = S.OneCycleLR(opt, max_lr=1.0, total_steps=4)
    assert opt.param_groups[0]["betas"] == (0.95, 0.999)
    for _ in range(3):
        sched.step()
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.95)
    with pytest.raises(em.ArgumentError, match="total_steps"):
        for _ in range(2):
            sched.step()
    with pytest.raises(em.ArgumentError, match="momentum"):
        S.OneCycleLR(em.optim.Adagrad(ps), max_lr=1.0, total_steps=4)
    with pytest.raises(em.ArgumentError, match="epochs and steps_per_epoch"):
        S.OneCycleLR(opt, max_lr=1.0)
