"""The checks that run inside every rank: ``execmode launch -n 2 ranks_worker.py OUT``
(tests/distributed/test_ranks.py starts it once). Each check runs on every rank; each rank
writes ``OUT/rank<R>.json``: check name -> "ok" or the failure's traceback.

The data of rank r is drawn from a generator seeded with r, so every rank can compute
what a collective must give with NumPy alone.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

import numpy as np

import execmode as em
import execmode.torch as torch
import execmode.torch.distributed as dist
import execmode.torch.nn.functional as F
from execmode import instrument
from execmode.distributed.buckets import average_gradients, buckets
from execmode.graph.ir import format_graph
from execmode.jit_driver import paths
from execmode.jit_driver.explain_cli import format_report
from execmode.torch.nn.parallel import DistributedDataParallel as DDP
from execmode.torch.utils.data import DataLoader
from execmode.torch.utils.data.distributed import DistributedSampler

# Before init_process_group nothing has imported mpi4py (is_available only looks for it).
MPI_IMPORTED_EARLY = dist.is_available() and "mpi4py" in sys.modules

dist.init_process_group("mpi")
RANK, WORLD = dist.get_rank(), dist.get_world_size()
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def value(rank: int, shape, dtype) -> np.ndarray:
    rng = np.random.default_rng(rank)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(-5, 6, shape).astype(dtype)


def every_rank(shape, dtype) -> np.ndarray:
    return np.stack([value(r, shape, dtype) for r in range(WORLD)])


def raises(cls, fn) -> str:
    try:
        fn()
    except cls as e:
        return str(e)
    raise AssertionError(f"{fn} did not raise {cls.__name__}")


def same_on_every_rank(array: np.ndarray) -> bool:
    t = torch.tensor(np.ascontiguousarray(array, dtype=np.float64))
    gathered = [torch.zeros_like(t) for _ in range(WORLD)]
    dist.all_gather(gathered, t)
    return all(np.array_equal(g.numpy(), gathered[0].numpy()) for g in gathered)


# --- the process group ------------------------------------------------------------------

@check
def process_group():
    assert not MPI_IMPORTED_EARLY
    assert WORLD == 2 and dist.is_initialized()
    # execmode launch gave the ranks torchrun's variables, and MPI agrees with them
    assert os.environ["RANK"] == str(RANK) and os.environ["WORLD_SIZE"] == str(WORLD)
    assert os.environ["LOCAL_RANK"] == str(RANK)
    assert dist.get_backend() == "mpi" and dist.group.WORLD is not None
    assert "already" in raises(dist.DistributedError, lambda: dist.init_process_group("mpi"))


# --- each collective against NumPy ------------------------------------------------------

@check
def all_reduce_each_op_and_dtype():
    ops = {dist.ReduceOp.SUM: np.sum, dist.ReduceOp.PRODUCT: np.prod,
           dist.ReduceOp.MIN: np.min, dist.ReduceOp.MAX: np.max}
    for dtype in (np.float32, np.float64, np.int32, np.int64):
        for op, reduce in ops.items():
            x = torch.tensor(value(RANK, (3, 4), dtype))
            assert dist.all_reduce(x, op=op) is None
            want = reduce(every_rank((3, 4), dtype), axis=0)
            assert x.dtype == np.dtype(dtype)
            np.testing.assert_allclose(x.numpy(), want, rtol=1e-6, err_msg=f"{op} {dtype}")
        if np.dtype(dtype).kind == "f":
            x = torch.tensor(value(RANK, (5,), dtype))
            dist.all_reduce(x, op=dist.ReduceOp.AVG)
            np.testing.assert_allclose(x.numpy(), every_rank((5,), dtype).mean(axis=0),
                                       rtol=1e-6)
    flags = torch.tensor(value(RANK, (8,), np.bool_))
    dist.all_reduce(flags)  # SUM of bools: any
    np.testing.assert_array_equal(flags.numpy(), every_rank((8,), np.bool_).any(axis=0))
    flags = torch.tensor(value(RANK, (8,), np.bool_))
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)  # all
    np.testing.assert_array_equal(flags.numpy(), every_rank((8,), np.bool_).all(axis=0))


@check
def all_reduce_in_place_through_views_and_scalars():
    scalar = torch.tensor(float(RANK + 2))
    dist.all_reduce(scalar, op=dist.ReduceOp.PRODUCT)
    assert scalar.item() == np.prod([r + 2.0 for r in range(WORLD)])
    base = torch.tensor(value(RANK, (4, 3), np.float32))
    transposed = base.T  # not contiguous: reduced in a scratch buffer, written back
    dist.all_reduce(transposed)
    np.testing.assert_allclose(base.numpy(), every_rank((4, 3), np.float32).sum(0), rtol=1e-6)
    base = torch.tensor(value(RANK, (4, 3), np.float64))
    row = base[1]  # a view: the write lands in its base, as an in-place op's does
    dist.all_reduce(row, op=dist.ReduceOp.MAX)
    want = value(RANK, (4, 3), np.float64)
    want[1] = every_rank((4, 3), np.float64)[:, 1].max(0)
    np.testing.assert_array_equal(base.numpy(), want)
    work = dist.all_reduce(torch.ones(2), async_op=True)
    assert work.wait() and work.is_completed()


@check
def broadcast_from_each_source():
    for src in range(WORLD):
        x = torch.tensor(value(RANK, (2, 5), np.int64))
        dist.broadcast(x, src=src)
        np.testing.assert_array_equal(x.numpy(), value(src, (2, 5), np.int64))


@check
def all_gather_both_forms():
    mine = torch.tensor(value(RANK, (2, 3), np.float32))
    out = [torch.zeros(2, 3) for _ in range(WORLD)]
    dist.all_gather(out, mine)
    for r in range(WORLD):
        np.testing.assert_array_equal(out[r].numpy(), value(r, (2, 3), np.float32))
    for shape in ((WORLD * 2, 3), (WORLD, 2, 3)):
        into = torch.zeros(*shape)
        dist.all_gather_into_tensor(into, mine)
        np.testing.assert_array_equal(into.numpy().reshape(WORLD, 2, 3),
                                      every_rank((2, 3), np.float32))


@check
def reduce_scatter_both_forms():
    parts = [torch.tensor(value(10 * RANK + k, (3,), np.float64)) for k in range(WORLD)]
    out = torch.zeros(3, dtype=torch.float64)
    dist.reduce_scatter(out, parts)
    want = sum(value(10 * r + RANK, (3,), np.float64) for r in range(WORLD))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    whole = torch.tensor(value(RANK, (WORLD * 2, 3), np.float32))
    out = torch.zeros(2, 3)
    dist.reduce_scatter_tensor(out, whole, op=dist.ReduceOp.AVG)
    want = every_rank((WORLD * 2, 3), np.float32).mean(0)[2 * RANK:2 * RANK + 2]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    out = torch.zeros(2, 3)
    dist.reduce_scatter_tensor(out, whole, op=dist.ReduceOp.MAX)
    np.testing.assert_array_equal(
        out.numpy(), every_rank((WORLD * 2, 3), np.float32).max(0)[2 * RANK:2 * RANK + 2])


@check
def barrier_returns():
    assert dist.barrier() is None
    assert dist.barrier(async_op=True).wait()


# --- bad input: every rank raises, naming the ranks ---------------------------------------

@check
def mismatched_shapes_name_both_ranks():
    x = torch.ones(4, 3) if RANK == 0 else torch.ones(4)
    said = raises(em.ShapeError, lambda: dist.all_reduce(x))
    assert "rank 0 has f32[4,3]" in said and "rank 1 has f32[4]" in said, said
    y = torch.ones(2, dtype=torch.float32 if RANK == 0 else torch.float64)
    said = raises(em.ShapeError, lambda: dist.broadcast(y, src=1))
    assert "rank 1 has f64[2]" in said and "rank 0 has f32[2]" in said and "source" in said
    z = torch.ones(3 + RANK)
    said = raises(em.ShapeError, lambda: dist.all_gather([torch.ones(3 + RANK)] * 2, z))
    assert "rank 0 has f32[3]" in said and "rank 1 has f32[4]" in said, said
    x = torch.ones(3)
    dist.all_reduce(x)  # the ranks are still in step
    np.testing.assert_array_equal(x.numpy(), np.full(3, float(WORLD)))


@check
def a_bad_argument_on_one_rank_fails_every_rank():
    out = [torch.zeros(2) for _ in range(WORLD if RANK == 0 else WORLD + 1)]
    if RANK == 1:
        said = raises(em.ArgumentError, lambda: dist.all_gather(out, torch.ones(2)))
        assert "list of 2 tensors" in said
    else:
        said = raises(dist.DistributedError, lambda: dist.all_gather(out, torch.ones(2)))
        assert "rank(s) [1]" in said
    said = raises(em.DTypeError, lambda: dist.all_reduce(torch.ones(2, dtype=torch.int64),
                                                         op=dist.ReduceOp.AVG))
    assert "AVG" in said
    x = torch.ones(1)
    dist.all_reduce(x)
    assert x.item() == WORLD


def lowered_ops(jitted) -> list[str]:
    """The ops of the (only) graph of ``jitted``'s newest signature, after the passes."""
    (segment,) = jitted.concrete_functions[-1].segments
    return [n.op for n in segment.compiled.lowered.nodes]


def reduced_node(segment) -> int:
    (node,) = [n for n in segment.graph.nodes if n.op == "all_reduce"]
    return node.id


@check
def collectives_under_jit_are_graph_nodes():
    def step(x):
        y = x * (RANK + 1)
        dist.all_reduce(y)  # a node; its write into y is an assign, as any in-place op
        return y * 2

    for tier in ("general", "generated", "native"):
        with paths.pinned(replay=tier):
            jitted = em.jit(step)
            for _ in range(3):  # the first call traces, the others replay the plan
                got = jitted(torch.ones(3))
                assert got.numpy().tolist() == [2.0 * sum(range(1, WORLD + 1))] * 3
            assert jitted.trace_count == 1 and not jitted.concrete_functions[-1].breaks
            assert jitted._fast is None, tier  # no generated replay: it retries failures
    (segment,) = jitted.concrete_functions[-1].segments
    assert "all_reduce[reduce_op='sum']" in format_graph(segment.graph)
    plan = segment.compiled.plan
    assert [s.kind for s in plan.steps if s.node.op == "all_reduce"] == ["collective"]
    assert plan.program is None and "all_reduce: collectives run from Python" in \
        plan.program_reason

    class Seen:  # a recorder's view: the step's kernel event and the collective's op event
        ops, kernels = [], []

        def on_op(self, event, output=None):
            self.ops.append(event)

        def on_kernel(self, event):
            self.kernels.append(event)

    with instrument.listening(Seen()) as seen:
        jitted(torch.ones(3))
    (reduced,) = [e for e in seen.ops if e.op == "all_reduce"]
    assert reduced.attrs["moved_bytes"] == 12 and reduced.attrs["waited_us"] >= 0
    assert [e.data["step_kind"] for e in seen.kernels
            if e.data["kernel"] == "all_reduce"] == ["collective"]
    said = format_report([jitted])  # execmode explain's text
    assert f"collectives in {segment.graph.name}, in the order every rank runs them" in said
    assert f"%{reduced_node(segment)} all_reduce" in said, said
    for op in dist.ReduceOp:
        x = torch.tensor(value(RANK, (4, 3), np.float32))
        eager = x.clone()
        dist.all_reduce(eager, op=op)
        f = em.jit(lambda t, op=op: (dist.all_reduce(t, op=op), t)[1])
        same = f(x)
        assert same is x and np.array_equal(x.numpy(), eager.numpy()), op  # bit for bit
        assert lowered_ops(f).count("all_reduce") == 1


@check
def collectives_under_jit_equal_eager_and_write_captures():
    def many(x):
        b = x * 1.0
        dist.broadcast(b, src=1)
        parts = [torch.zeros_like(x) for _ in range(WORLD)]
        dist.all_gather(parts, x)
        into = torch.zeros(WORLD * x.shape[0], x.shape[1])
        dist.all_gather_into_tensor(into, x)
        scattered = torch.zeros(1, x.shape[1])
        dist.reduce_scatter(scattered, [x[r:r + 1] * 1.0 for r in range(WORLD)],
                            op=dist.ReduceOp.MAX)
        half = torch.zeros(x.shape[0] // WORLD, x.shape[1])
        dist.reduce_scatter_tensor(half, x * 1.0, op=dist.ReduceOp.AVG)
        dist.barrier()
        return b, *parts, into, scattered, half

    x = torch.tensor(value(RANK, (WORLD, 3), np.float32))
    want = many(x)
    jitted = em.jit(many)
    for _ in range(2):
        got = jitted(x)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert np.array_equal(g.numpy(), w.numpy())
    assert np.array_equal(want[0].numpy(), value(1, (WORLD, 3), np.float32))
    ops = lowered_ops(jitted)
    collectives = [o for o in ops if o in ("broadcast", "all_gather", "all_gather_into_tensor",
                                           "reduce_scatter", "reduce_scatter_tensor",
                                           "barrier")]
    assert collectives == ["broadcast", "all_gather", "all_gather_into_tensor",
                           "reduce_scatter", "reduce_scatter_tensor", "barrier"], ops
    # a captured tensor written by the collective gets its values back at every call
    w = torch.ones(3)

    @em.jit
    def accumulate(x):
        dist.all_reduce(w)
        return x + w

    for call in range(1, 4):
        assert accumulate(torch.zeros(3)).numpy().tolist() == [float(WORLD ** call)] * 3
        assert w.numpy().tolist() == [float(WORLD ** call)] * 3
    # an unused collective and two identical ones survive DCE and CSE
    def unused_and_twice(x):
        lost = x * 1.0
        dist.all_reduce(lost)
        a, b = x * 1.0, x * 1.0
        dist.all_reduce(a)
        dist.all_reduce(b)
        return a + b

    f = em.jit(unused_and_twice)
    assert f(torch.ones(2)).numpy().tolist() == [2.0 * WORLD] * 2
    assert lowered_ops(f).count("all_reduce") == 3


@check
def collectives_under_jit_that_cannot_be_nodes_break_the_graph():
    def step(x):
        y = x * (RANK + 1)
        dist.all_reduce(y, async_op=True).wait()  # a Work handle: the graph breaks here
        return y * 2

    jitted = em.jit(step)
    for _ in range(2):
        assert jitted(torch.ones(3)).numpy().tolist() == [2.0 * sum(range(1, WORLD + 1))] * 3
    (brk,) = jitted.concrete_functions[-1].breaks
    assert "dist.all_reduce with async_op=True" in brk.reason, brk.reason
    w = torch.ones(3)  # a capture (no traced value): the graph breaks all the same
    captured = em.jit(lambda x: (dist.all_reduce(w, async_op=True), x + w)[1])
    for call in range(1, 4):
        assert captured(torch.zeros(3)).numpy().tolist() == [float(WORLD ** call)] * 3
    # wrong arguments on one rank under jit: every rank raises, as eagerly, and all stay
    # in step (rank 1 breaks the graph and raises after the exchange; rank 0's node hears
    # of it in the same exchange)
    bad = em.jit(lambda t: (dist.all_reduce(
        t, op=dist.ReduceOp.AVG if RANK == 1 else dist.ReduceOp.SUM), t)[1])
    if RANK == 1:
        said = raises(em.DTypeError, lambda: bad(torch.ones(2, dtype=torch.int64)))
        assert "AVG" in said
    else:
        said = raises(dist.DistributedError, lambda: bad(torch.ones(2, dtype=torch.int64)))
        assert "rank(s) [1] gave wrong arguments" in said, said
    x = torch.ones(1)
    dist.all_reduce(x)
    assert x.item() == WORLD


@check
def a_jitted_step_averaging_gradients_is_one_graph():
    def make():
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 2)
        return model, torch.optim.SGD(model.parameters(), lr=0.1)

    def step(model, opt, x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        for p in model.parameters():  # DDP's averaging, by hand
            dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)
        opt.step()
        return loss

    x = torch.tensor(value(RANK, (8, 4), np.float32))
    y = torch.tensor(value(RANK + 10, (8, 2), np.float32))
    (m1, o1), (m2, o2) = make(), make()
    jitted = em.jit(lambda x, y: step(m2, o2, x, y))
    for _ in range(4):
        np.testing.assert_allclose(step(m1, o1, x, y).item(), jitted(x, y).item(), rtol=1e-5)
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5)
    assert jitted.trace_count == 1 and not jitted.concrete_functions[-1].breaks
    assert lowered_ops(jitted).count("all_reduce") == 2
    everyone = [torch.zeros(2, 4) for _ in range(WORLD)]
    dist.all_gather(everyone, m2.weight.detach())  # the ranks' replicas stayed equal
    assert all(np.array_equal(e.numpy(), everyone[0].numpy()) for e in everyone)


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


@check
def ddp_refuses_models_that_differ_and_a_backward_outside_jit():
    model = torch.nn.Linear(3, 2 + RANK)
    said = raises(dist.DistributedError, lambda: DDP(model))
    assert "rank 0 has weight: f32[2,3]" in said and "rank 1 has weight: f32[3,3]" in said, said
    ddp = DDP(torch.nn.Linear(3, 2))
    out = em.jit(ddp)(torch.ones(1, 3))  # the forward alone is a graph
    said = raises(em.BackwardError, lambda: out.sum().backward())
    assert "backward() outside the em.jit / torch.compile function that ran the DDP module" \
        in said and "Jit the whole step" in said, said
    assert ddp.module.weight.grad is None


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
    # the gradients, bit for bit: a jitted backward through DDP averages in the buckets
    # eager DDP uses, as eager DDP's own averaging does on the same local gradients
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
            assert np.array_equal(p.grad.numpy(), q.grad.numpy()), step
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


def in_step(comm, seconds: float) -> bool:
    """Whether every rank reached the end of the check within ``seconds``: a rank that
    failed halfway may have skipped a collective that another rank now waits in, and
    this rank must not wait for it forever (a non-blocking barrier, polled)."""
    request = comm.Ibarrier()
    deadline = time.monotonic() + seconds
    while not request.Test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def main(out_dir: str) -> None:
    path = os.path.join(out_dir, f"rank{RANK}.json")
    results = {}
    comm = dist.group.WORLD.comm
    for fn in CHECKS:
        results[fn.__name__] = "running (it never finished: a rank waits in a collective)"
        with open(path, "w") as f:
            json.dump(results, f, indent=1)
        try:
            fn()
            results[fn.__name__] = "ok"
        except Exception:
            results[fn.__name__] = traceback.format_exc()
        with open(path, "w") as f:  # after every check: a hang leaves what ran readable
            json.dump(results, f, indent=1)
        if not in_step(comm, 20.0):
            results[fn.__name__] += "\n(the other rank did not finish this check: ended)"
            with open(path, "w") as f:
                json.dump(results, f, indent=1)
            comm.Abort(3)
    dist.destroy_process_group()
    assert not dist.is_initialized()


if __name__ == "__main__":
    main(sys.argv[1])
