"""The checks of data-parallel training, on every rank: DistributedDataParallel eagerly
and under em.jit, and DistributedSampler."""

from __future__ import annotations

import os

import numpy as np
from worker_common import (
    RANK,
    WORLD,
    check,
    lowered_ops,
    raises,
    same_on_every_rank,
    value,
)

import execmode as em
import execmode.torch as torch
import execmode.torch.distributed as dist
import execmode.torch.nn.functional as F
from execmode import instrument
from execmode.distributed.buckets import average_gradients, buckets
from execmode.graph.ir import format_graph
from execmode.jit_driver import paths
from execmode.jit_driver.explain_cli import format_report
from execmode.tape import register_post_accumulate_grad_hook
from execmode.torch.nn.parallel import DistributedDataParallel as DDP
from execmode.torch.utils.data import DataLoader
from execmode.torch.utils.data.distributed import DistributedSampler

# The ranks run on one machine, where DDP does not overlap by default (reducer.py): the
# checks below take the overlap, the path ranks on several machines take, but for the one
# that checks the default.
os.environ["EXECMODE_DDP_OVERLAP"] = "1"

# --- DistributedDataParallel --------------------------------------------------------------

def make_model(seed: int):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def flat(params) -> np.ndarray:
    return np.concatenate([p.detach().numpy().reshape(-1) for p in params])


@check
def ddp_trains_as_one_process_on_the_whole_batch():
    steps, batch = 5, 8
    rng = np.random.default_rng(123)
    xs = rng.standard_normal((steps, batch, 6)).astype(np.float32)
    ys = rng.integers(0, 3, (steps, batch))
    model = make_model(seed=100 + RANK)  # different on each rank: the wrap takes rank 0's
    ddp = DDP(model, bucket_cap_mb=0.0005)  # ~500 bytes: several buckets
    assert same_on_every_rank(flat(model.parameters()))
    single = make_model(seed=0)
    single.load_state_dict(model.state_dict())
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    single_opt = torch.optim.SGD(single.parameters(), lr=0.1, momentum=0.9)
    share = batch // WORLD
    mine = slice(RANK * share, (RANK + 1) * share)
    for step in range(steps):
        loss = F.cross_entropy(ddp(torch.tensor(xs[step, mine])), torch.tensor(ys[step, mine]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        whole = F.cross_entropy(single(torch.tensor(xs[step])), torch.tensor(ys[step]))
        single_opt.zero_grad()
        whole.backward()
        single_opt.step()
        mean_loss = torch.tensor(loss.item())
        dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
        np.testing.assert_allclose(mean_loss.item(), whole.item(), rtol=1e-5)
        np.testing.assert_allclose(flat(model.parameters()), flat(single.parameters()),
                                   rtol=1e-5, atol=1e-6, err_msg=f"step {step}")
    assert ddp.buckets_reduced > 1
    assert same_on_every_rank(flat(model.parameters()))
    assert list(ddp.state_dict()) == ["module." + k for k in model.state_dict()]


@check
def ddp_no_sync_accumulates_locally_then_averages():
    model = make_model(seed=7)
    ddp = DDP(model)
    a = [value(r, (4, 6), np.float32) for r in range(WORLD)]
    b = [value(r + 50, (4, 6), np.float32) for r in range(WORLD)]
    with ddp.no_sync():
        ddp(torch.tensor(a[RANK])).sum().backward()
    assert not same_on_every_rank(flat(p.grad for p in model.parameters()))
    ddp(torch.tensor(b[RANK])).sum().backward()
    want = None
    for r in range(WORLD):  # the mean over ranks of each rank's accumulated gradients
        ref = make_model(seed=0)
        ref.load_state_dict(model.state_dict())
        ref(torch.tensor(a[r])).sum().backward()
        ref(torch.tensor(b[r])).sum().backward()
        g = flat(p.grad for p in ref.parameters()) / WORLD
        want = g if want is None else want + g
    np.testing.assert_allclose(flat(p.grad for p in model.parameters()), want,
                               rtol=1e-5, atol=1e-6)
    # nanoGPT's spelling of no_sync: the attribute no_sync sets
    ddp.require_backward_grad_sync = False
    ddp(torch.tensor(a[RANK])).sum().backward()
    assert not same_on_every_rank(flat(p.grad for p in model.parameters()))
    ddp.require_backward_grad_sync = True
    ddp(torch.tensor(b[RANK])).sum().backward()
    assert same_on_every_rank(flat(p.grad for p in model.parameters()))


def _same_as_averaging_at_the_end(model, x, y) -> None:
    """``model``'s averaged gradients are bit for bit those of a copy's own backward on
    (x, y) averaged at its end (buckets.average_gradients)."""
    plain = make_model(seed=0)
    plain.load_state_dict(model.state_dict())
    F.cross_entropy(plain(x), y).backward()
    average_gradients(dist.group.WORLD, plain.parameters(), 1)
    for p, q in zip(plain.parameters(), model.parameters()):
        assert np.array_equal(p.grad.numpy(), q.grad.numpy())


@check
def ddp_starts_each_bucket_while_backward_runs():
    """Each bucket's all-reduce starts (MPI's Iallreduce) once backward has produced its
    gradients, before backward produces the last one, in bucket order; every bucket is
    waited for after it; the averaged gradients are bit for bit those of the averaging at
    the end of backward (buckets.average_gradients) on the same local gradients."""
    model = make_model(seed=11)
    ddp = DDP(model, bucket_cap_mb=1e-6)  # a bucket per parameter
    names = [name for name, _ in model.named_parameters()]
    happened = []

    class Collectives:
        def on_op(self, event, tensor):
            if event.op in ("all_reduce", "all_reduce_wait"):
                happened.append((event.op, event.attrs["bucket"]))

    for name, p in model.named_parameters():  # after DDP's own hooks: they run first
        register_post_accumulate_grad_hook(p, lambda _, name=name: happened.append(
            ("gradient", (name,))))
    x = torch.tensor(value(RANK, (4, 6), np.float32))
    y = torch.tensor(np.arange(4) % 3)
    with instrument.listening(Collectives()):
        F.cross_entropy(ddp(x), y).backward()
    kinds = [kind for kind, _ in happened]
    last_gradient = len(kinds) - 1 - kinds[::-1].index("gradient")
    assert kinds.index("all_reduce") < last_gradient, happened
    started = [bucket for kind, bucket in happened if kind == "all_reduce"]
    assert started == [(name,) for name in reversed(names)], happened
    waited = [i for i, kind in enumerate(kinds) if kind == "all_reduce_wait"]
    assert len(waited) == len(names) and min(waited) > last_gradient, happened
    assert ddp.buckets_reduced == len(names)
    _same_as_averaging_at_the_end(model, x, y)


class Branches(torch.nn.Module):
    """Rank 0 alone uses ``only_rank0``; nobody uses ``never``. Returns (out, None), as
    nanoGPT's GPT returns (logits, loss)."""

    def __init__(self):
        super().__init__()
        self.shared = torch.nn.Linear(3, 2)
        self.only_rank0 = torch.nn.Linear(3, 2)
        self.never = torch.nn.Linear(3, 2)
        self.register_buffer("scale", torch.ones(1))

    def forward(self, x):
        out = self.shared(x) * self.scale
        if RANK == 0:
            out = out + self.only_rank0(x)
        return out, None


@check
def ddp_on_one_machine_averages_when_backward_ends_by_default():
    """Every rank shares one machine's memory here: with EXECMODE_DDP_OVERLAP unset, no
    bucket starts before backward has produced every gradient; the averages are the same
    bits."""
    assert dist.group.WORLD.one_node
    model = make_model(seed=12)
    ddp = DDP(model, bucket_cap_mb=1e-6)  # a bucket per parameter
    happened = []

    class Collectives:
        def on_op(self, event, tensor):
            if event.op.startswith("all_reduce"):
                happened.append(event.op)

    for p in model.parameters():
        register_post_accumulate_grad_hook(p, lambda _: happened.append("gradient"))
    x = torch.tensor(value(RANK, (4, 6), np.float32))
    y = torch.tensor(np.arange(4) % 3)
    switch = os.environ.pop("EXECMODE_DDP_OVERLAP")
    try:
        with instrument.listening(Collectives()):
            F.cross_entropy(ddp(x), y).backward()
    finally:
        os.environ["EXECMODE_DDP_OVERLAP"] = switch
    last_gradient = len(happened) - 1 - happened[::-1].index("gradient")
    assert "all_reduce" in happened and happened.index("all_reduce") > last_gradient, happened
    assert "all_reduce_wait" not in happened, happened  # blocking, one op each
    _same_as_averaging_at_the_end(model, x, y)


@check
def ddp_unused_parameters_and_buffers():
    model = Branches()
    ddp = DDP(model)
    model.scale.copy_(torch.tensor([float(RANK + 1)]))  # differs until the next forward
    out, nothing = ddp(torch.ones(5, 3))
    assert nothing is None and model.scale.item() == 1.0  # rank 0's buffer
    out.sum().backward()
    assert model.never.weight.grad is None  # unused on every rank: left alone
    assert same_on_every_rank(model.only_rank0.weight.grad.numpy())
    np.testing.assert_allclose(model.only_rank0.weight.grad.numpy(),
                               np.full((2, 3), 5.0 / WORLD), rtol=1e-6)
    # find_unused_parameters: the same gradients, the unused found when backward starts
    found = Branches()
    found.load_state_dict(model.state_dict())
    ddp = DDP(found, find_unused_parameters=True, bucket_cap_mb=1e-6)
    ddp(torch.ones(5, 3))[0].sum().backward()
    for p, q in zip(model.parameters(), found.parameters()):
        assert (p.grad is None) == (q.grad is None)
        assert p.grad is None or np.array_equal(p.grad.numpy(), q.grad.numpy())
    out, _ = ddp(torch.ones(5, 3))  # a parameter used outside the module: refused
    said = raises(dist.DistributedError,
                  lambda: (found.never.weight.sum() + out.sum()).backward())
    assert "parameter never.weight got a gradient" in said, said
    # The same with a .grad already there (zeroed, not None): backward adds into it in
    # place, so the .grad object stays; the refusal must not depend on it changing.
    found.zero_grad(set_to_none=False)
    assert found.never.weight.grad is not None
    out, _ = ddp(torch.ones(5, 3))
    said = raises(dist.DistributedError,
                  lambda: (found.never.weight.sum() + out.sum()).backward())
    assert "parameter never.weight got a gradient" in said, said


@check
def ddp_refuses_models_that_differ():
    model = torch.nn.Linear(3, 2 + RANK)
    said = raises(dist.DistributedError, lambda: DDP(model))
    assert "rank 0 has weight: f32[2,3]" in said and "rank 1 has weight: f32[3,3]" in said, said


@check
def ddp_jitted_forward_then_backward_outside_averages():
    """em.jit(ddp_model), then loss.backward() outside: the call's backward graph gives
    the local gradients and DDP averages them as after an eager forward, bit for bit
    against the same jitted model without DDP and buckets.average_gradients; a second
    step (a replay) too, and no_sync around the call accumulates without averaging."""
    model = make_model(seed=5)
    ddp = DDP(model, bucket_cap_mb=0.0005)
    plain = make_model(seed=0)
    plain.load_state_dict(model.state_dict())
    jitted_ddp, jitted_plain = em.jit(ddp), em.jit(plain)
    for step in range(2):
        x = torch.tensor(value(RANK + 10 * step, (4, 6), np.float32))
        y = torch.tensor(np.arange(4) % 3)
        F.cross_entropy(jitted_ddp(x), y).backward()
        F.cross_entropy(jitted_plain(x), y).backward()
        average_gradients(dist.group.WORLD, plain.parameters(), int(0.0005 * (1 << 20)))
        for p, q in zip(plain.parameters(), model.parameters()):
            assert np.array_equal(p.grad.numpy(), q.grad.numpy()), step
        assert same_on_every_rank(flat(p.grad for p in model.parameters()))
    assert jitted_ddp.trace_count == 1
    before = flat(p.grad for p in model.parameters())
    with ddp.no_sync():
        F.cross_entropy(em.jit(ddp)(x), y).backward()
    assert not same_on_every_rank(flat(p.grad for p in model.parameters()) - before)


def ddp_step(ddp, opt, x, y):
    loss = F.cross_entropy(ddp(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def jitted_step(ddp, opt):
    return em.jit(lambda x, y: ddp_step(ddp, opt, x, y))


@check
def ddp_jitted_step_is_one_graph_with_a_node_per_bucket():
    steps, batch, cap_mb = 3, 8, 0.0005  # ~500 bytes: several buckets
    rng = np.random.default_rng(321)
    xs = rng.standard_normal((steps, batch, 6)).astype(np.float32)
    ys = rng.integers(0, 3, (steps, batch))
    share = batch // WORLD
    mine = slice(RANK * share, (RANK + 1) * share)
    optimizers = ((torch.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
                  (torch.optim.Adam, {"lr": 0.01}))
    for tier in ("general", "generated", "native"):
        for make_opt, hyper in optimizers:
            eager = DDP(make_model(seed=100 + RANK), bucket_cap_mb=cap_mb)
            graph = DDP(make_model(seed=100 + RANK), bucket_cap_mb=cap_mb)
            single = make_model(seed=0)
            single.load_state_dict(eager.module.state_dict())
            opts = [make_opt(m.parameters(), **hyper) for m in (eager, graph, single)]
            with paths.pinned(replay=tier):
                jitted = jitted_step(graph, opts[1])
                for step in range(steps):
                    x, y = torch.tensor(xs[step, mine]), torch.tensor(ys[step, mine])
                    want = ddp_step(eager, opts[0], x, y)
                    got = jitted(x, y)
                    ddp_step(single, opts[2], torch.tensor(xs[step]), torch.tensor(ys[step]))
                    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-5)
                    for other in (eager.module, single):  # the kernels round as eager's
                        np.testing.assert_allclose(  # within float32, not bit for bit
                            flat(graph.module.parameters()), flat(other.parameters()),
                            rtol=1e-5, atol=1e-6, err_msg=f"{tier} {make_opt.__name__}")
            cf = jitted.concrete_functions[-1]
            assert jitted.trace_count == 1 and not cf.breaks and not cf.python_writes, \
                (tier, cf.breaks, cf.python_writes)
            assert all(p.grad is None for p in graph.parameters())  # zero_grad, as eagerly
            assert same_on_every_rank(flat(graph.module.parameters()))  # replicas in step
    # one all_reduce node per bucket, each naming the parameters eager DDP buckets together
    (segment,) = cf.segments
    named = dict((id(p), n) for n, p in graph.module.named_parameters())
    eager_buckets = [tuple(named[id(p)] for p in b) for b in
                     buckets(list(reversed(graph.module.parameters())), int(cap_mb * (1 << 20)))]
    nodes = [n for n in segment.compiled.lowered.nodes if n.op == "all_reduce"]
    assert [n.attr["bucket"] for n in nodes] == eager_buckets and len(nodes) > 1, nodes
    assert len(nodes) == eager.buckets_reduced == graph.buckets_reduced
    assert all(n.attr["reduce_op"] == "avg" for n in nodes)
    text = format_graph(segment.compiled.lowered)
    assert f"bucket={eager_buckets[0]!r}" in text, text
    said = format_report([jitted])  # execmode explain's text
    assert f"(bucket: {', '.join(eager_buckets[0])})" in said, said
    # the gradients: a jitted backward through DDP averages in the buckets eager DDP uses,
    # as eager DDP's own averaging does on the same local gradients (within rounding:
    # ``local`` runs as one C program, whose single reductions sum in float64, and
    # ``averaged`` step by step, its collectives run from Python; docs/graph-mode.md)
    plain = make_model(seed=0)
    ddp = DDP(make_model(seed=0), bucket_cap_mb=cap_mb)
    local = em.jit(lambda x, y: F.cross_entropy(plain(x), y).backward())
    averaged = em.jit(lambda x, y: F.cross_entropy(ddp(x), y).backward())
    for step in range(2):  # the second accumulates into .grad, as eagerly
        x, y = torch.tensor(xs[step, mine]), torch.tensor(ys[step, mine])
        local(x, y)
        average_gradients(dist.group.WORLD, plain.parameters(), int(cap_mb * (1 << 20)))
        averaged(x, y)
        for p, q in zip(plain.parameters(), ddp.module.parameters()):
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-6,
                                       atol=1e-7, err_msg=f"step {step}")
    # two traces: .grad was None, then a tensor (a guarded difference)
    assert averaged.trace_count == 2 and lowered_ops(averaged).count("all_reduce") == 2


@check
def ddp_under_jit_no_sync_unused_parameters_and_buffers():
    """As eagerly under em.jit: no_sync inside the step, a parameter that one rank
    alone uses, one that no rank uses, a buffer taken from rank 0 before the forward."""
    def accumulate(ddp, a, b):
        with ddp.no_sync():
            ddp(a).sum().backward()
        ddp(b).sum().backward()

    a = torch.tensor(value(RANK, (4, 6), np.float32))
    b = torch.tensor(value(RANK + 50, (4, 6), np.float32))
    eager, graph = DDP(make_model(seed=7)), DDP(make_model(seed=7))
    accumulate(eager, a, b)
    jitted = em.jit(lambda a, b: accumulate(graph, a, b))
    jitted(a, b)
    assert lowered_ops(jitted).count("all_reduce") == 1  # the step outside no_sync
    for p, q in zip(eager.parameters(), graph.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)
    models = [Branches(), Branches()]
    models[1].load_state_dict(models[0].state_dict())
    eager, graph = DDP(models[0]), DDP(models[1])
    for ddp in (eager, graph):
        ddp.module.scale.copy_(torch.tensor([float(RANK + 1)]))  # rank 0's comes back
    eager(torch.ones(5, 3))[0].sum().backward()
    jitted = em.jit(lambda x: graph(x)[0].sum().backward())
    jitted(torch.ones(5, 3))
    assert graph.module.never.weight.grad is None and graph.module.scale.item() == 1.0
    np.testing.assert_allclose(graph.module.only_rank0.weight.grad.numpy(),
                               np.full((2, 3), 5.0 / WORLD), rtol=1e-6)
    assert "broadcast" in lowered_ops(jitted) and not jitted.concrete_functions[-1].breaks
    # the ranks trace together: one that traces again alone (a new shape) while the other
    # replays fails on both, saying why, and both stay in step for the next collective
    ddp = DDP(torch.nn.Linear(3, 2))
    step = em.jit(lambda x: ddp(x).sum().backward())
    for _ in range(2):  # .grad None, then a tensor: two traces, on every rank
        step(torch.ones(4, 3))
    if RANK == 1:
        said = raises(dist.DistributedError, lambda: step(torch.ones(5, 3)))
        assert "the ranks must trace their steps together" in said, said
    else:
        said = raises(em.ShapeError, lambda: step(torch.ones(4, 3)))
        assert "rank 1 has bool[2]" in said, said
    x = torch.ones(1)
    dist.all_reduce(x)
    assert x.item() == WORLD


# --- DistributedSampler -------------------------------------------------------------------

class Numbers(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor(i)


def gathered(indices: list) -> list[list]:
    t = torch.tensor(np.array(indices, np.int64))
    out = [torch.zeros_like(t) for _ in range(WORLD)]
    dist.all_gather(out, t)
    return [o.numpy().tolist() for o in out]


@check
def distributed_sampler_partitions():
    sampler = DistributedSampler(Numbers(11), shuffle=True, seed=3)
    assert (sampler.num_replicas, sampler.rank, len(sampler)) == (WORLD, RANK, 6)
    epoch0 = gathered(list(sampler))
    together = sorted(i for part in epoch0 for i in part)
    assert len(together) == 12 and set(together) == set(range(11))  # one index padded
    assert epoch0 == gathered(list(sampler))  # the same epoch, the same order
    sampler.set_epoch(1)
    assert gathered(list(sampler)) != epoch0
    dropping = DistributedSampler(Numbers(11), shuffle=False, drop_last=True)
    parts = gathered(list(dropping))
    assert parts == [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]
    loader = DataLoader(Numbers(10), batch_size=2, sampler=DistributedSampler(Numbers(10)))
    seen = [int(i) for batch in loader for i in batch.numpy()]
    everyone = gathered(seen)
    assert sorted(i for part in everyone for i in part) == list(range(10))


# --- the same training, the buckets averaged when backward ends -----------------------------
# (the default on one machine: reducer.overlap_enabled)

def _without_overlap(fn):
    def run():
        os.environ["EXECMODE_DDP_OVERLAP"] = "0"
        try:
            fn()
        finally:
            os.environ["EXECMODE_DDP_OVERLAP"] = "1"
    run.__name__ = f"{fn.__name__}_without_overlap"
    return run


for _fn in (ddp_trains_as_one_process_on_the_whole_batch,
            ddp_no_sync_accumulates_locally_then_averages,
            ddp_jitted_forward_then_backward_outside_averages):
    check(_without_overlap(_fn))
