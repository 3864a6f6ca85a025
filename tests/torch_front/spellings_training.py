"""The probe's cases of training: optimizers, schedulers, utils.data and autograd."""

from __future__ import annotations

from torch_front.spelling_inputs import (
    CASES,
    A,
    C,
    cases,
)


# --- optim and schedulers ------------------------------------------------------------------
def optimizer(name, build, steps=3):
    def run(t):
        w = t.tensor(A, requires_grad=True)
        opt = build(t, [w])
        for _ in range(steps):
            opt.zero_grad()
            ((w - 0.3) ** 2).sum().backward()
            opt.step()
        return w.detach()
    CASES.append((name, run))


optimizer("optim.SGD", lambda t, p: t.optim.SGD(p, lr=0.1))
optimizer("optim.SGD(momentum, nesterov, weight_decay)", lambda t, p: t.optim.SGD(
    p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2))
optimizer("optim.Adam", lambda t, p: t.optim.Adam(p, lr=1e-2))
optimizer("optim.Adam(betas, eps, amsgrad)", lambda t, p: t.optim.Adam(
    p, lr=1e-2, betas=(0.8, 0.9), eps=1e-6, amsgrad=True))
optimizer("optim.AdamW", lambda t, p: t.optim.AdamW(p, lr=1e-2, weight_decay=0.1))
optimizer("optim.RMSprop", lambda t, p: t.optim.RMSprop(p, lr=1e-2))
optimizer("optim.Adagrad", lambda t, p: t.optim.Adagrad(p, lr=0.1))
optimizer("optim.Adadelta", lambda t, p: t.optim.Adadelta(p, lr=1.0))
optimizer("optim param groups", lambda t, p: t.optim.SGD([{"params": p, "lr": 0.05}], lr=1.0))


def scheduler(name, build, steps=6):
    def run(t):
        w = t.tensor(A, requires_grad=True)
        opt = t.optim.SGD([w], lr=0.1)
        sched = build(t, opt)
        lrs = []
        for _ in range(steps):
            opt.step()
            sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        return lrs
    CASES.append((name, run))


scheduler("lr_scheduler.StepLR", lambda t, o: t.optim.lr_scheduler.StepLR(o, 2, gamma=0.5))
scheduler("lr_scheduler.MultiStepLR", lambda t, o: t.optim.lr_scheduler.MultiStepLR(
    o, [2, 4], 0.1))
scheduler("lr_scheduler.ExponentialLR", lambda t, o: t.optim.lr_scheduler.ExponentialLR(o, 0.9))
scheduler("lr_scheduler.CosineAnnealingLR", lambda t, o: t.optim.lr_scheduler
          .CosineAnnealingLR(o, T_max=6))
scheduler("lr_scheduler.OneCycleLR", lambda t, o: t.optim.lr_scheduler.OneCycleLR(
    o, max_lr=1.0, total_steps=10))
scheduler("lr_scheduler.LambdaLR", lambda t, o: t.optim.lr_scheduler.LambdaLR(
    o, lambda e: 1 / (e + 1)))
scheduler("lr_scheduler.LinearLR", lambda t, o: t.optim.lr_scheduler.LinearLR(
    o, start_factor=0.5, total_iters=4))
scheduler("lr_scheduler.SequentialLR", lambda t, o: t.optim.lr_scheduler.SequentialLR(
    o, [t.optim.lr_scheduler.LinearLR(o, 0.5, total_iters=2),
        t.optim.lr_scheduler.ExponentialLR(o, 0.9)], milestones=[2]))


def _plateau(t):
    w = t.tensor(A, requires_grad=True)
    opt = t.optim.SGD([w], lr=0.1)
    sched = t.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1, factor=0.5)
    lrs = []
    for loss in (1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5):
        sched.step(loss)
        lrs.append(opt.param_groups[0]["lr"])
    return lrs


def _opt_state_dict(t):
    w = t.tensor(A, requires_grad=True)
    opt = t.optim.Adam([w], lr=1e-2)
    w.sum().backward()
    opt.step()
    sd = opt.state_dict()
    return sorted(sd), sorted(sd["state"][0]), sd["param_groups"][0]["lr"]


cases([
    ("lr_scheduler.ReduceLROnPlateau", _plateau),
    ("optimizer.state_dict()", _opt_state_dict),
    ("scheduler.get_last_lr()", lambda t: t.optim.lr_scheduler.StepLR(
        t.optim.SGD([t.tensor(A, requires_grad=True)], lr=0.1), 1).get_last_lr()),
])


# --- utils.data ----------------------------------------------------------------------------
def _loader_batches(t, **kw):
    data = t.utils.data.TensorDataset(t.tensor(C), t.arange(4))
    return [tuple(batch) for batch in t.utils.data.DataLoader(data, batch_size=3, **kw)]


class _Squares:
    """A map-style Dataset (a class with __getitem__ and __len__)."""

    def __init__(self, t):
        self.t = t

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": self.t.tensor([float(i)]), "y": i * i}


cases([
    ("utils.data.TensorDataset", lambda t: tuple(t.utils.data.TensorDataset(
        t.tensor(C), t.arange(4))[1])),
    ("DataLoader(batch_size)", lambda t: _loader_batches(t)),
    ("DataLoader(drop_last)", lambda t: _loader_batches(t, drop_last=True)),
    ("DataLoader(shuffle) sizes", lambda t: [tuple(x.shape) for x, _ in _loader_batches(
        t, shuffle=True)]),
    ("DataLoader over a Dataset of dicts", lambda t: [
        (d["x"], d["y"]) for d in t.utils.data.DataLoader(_Squares(t), batch_size=2)]),
    ("len(DataLoader)", lambda t: len(t.utils.data.DataLoader(range(10), batch_size=4))),
    ("random_split lengths", lambda t: [len(s) for s in t.utils.data.random_split(
        range(10), [7, 3])]),
    ("Subset", lambda t: list(t.utils.data.Subset(range(10), [1, 5]))),
    ("ConcatDataset", lambda t: len(t.utils.data.ConcatDataset([range(3), range(4)]))),
    ("BatchSampler(SequentialSampler)", lambda t: list(t.utils.data.BatchSampler(
        t.utils.data.SequentialSampler(range(5)), batch_size=2, drop_last=False))),
    ("default_collate", lambda t: t.utils.data.default_collate([(1, 2.0), (3, 4.0)])),
])


# --- autograd ------------------------------------------------------------------------------
def _autograd_grad(t):
    x = t.tensor(A, requires_grad=True)
    (g,) = t.autograd.grad((x ** 2).sum(), x)
    return g


def _retain_graph(t):
    x = t.tensor(A, requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad


def _detach_and_no_grad_sum(t):
    x = t.tensor(A, requires_grad=True)
    y = x.detach() * 2
    return y.requires_grad, (x * 2).requires_grad


def _set_grad_enabled(t):
    x = t.tensor(A, requires_grad=True)
    with t.set_grad_enabled(False):
        y = x * 2
    return y.requires_grad


def _inference_mode(t):
    x = t.tensor(A, requires_grad=True)
    with t.inference_mode():
        y = x * 2
    return y.requires_grad


cases([
    ("torch.autograd.grad", _autograd_grad),
    ("backward(retain_graph=True) twice", _retain_graph),
    ("x.detach()", _detach_and_no_grad_sum),
    ("torch.set_grad_enabled", _set_grad_enabled),
    ("torch.inference_mode", _inference_mode),
    ("backward(gradient)", lambda t: _backward_with(t)),
])


def _backward_with(t):
    x = t.tensor(A, requires_grad=True)
    (x * 3).backward(t.ones(3, 4))
    return x.grad
