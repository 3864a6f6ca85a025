"""The checks of the collectives themselves, on every rank: the process group, each
collective against NumPy, bad input, and collectives under em.jit as graph nodes."""

from __future__ import annotations

import os

import numpy as np
from worker_common import (
    MPI_IMPORTED_EARLY,
    RANK,
    WORLD,
    check,
    every_rank,
    lowered_ops,
    raises,
    value,
)

import execmode as em
import execmode.torch as torch
import execmode.torch.distributed as dist
import execmode.torch.nn.functional as F
from execmode import instrument
from execmode.graph.ir import format_graph
from execmode.jit_driver import paths
from execmode.jit_driver.explain_cli import format_report

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
def a_repeated_all_reduce_checks_as_the_first():
    # A call like an earlier one takes the short path (exchange.repeated_all_reduce) on
    # one rank while the other rank's call is new to it: the same header exchange, so
    # both still name both shapes, a wrong argument or a barrier elsewhere.
    x = torch.ones(4, 3)
    dist.all_reduce(x)
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    np.testing.assert_array_equal(x.numpy(), np.full((4, 3), float(WORLD)))
    y = torch.ones(4, 3) if RANK == 0 else torch.ones(4, 5)
    said = raises(em.ShapeError, lambda: dist.all_reduce(y))
    assert "rank 0 has f32[4,3]" in said and "rank 1 has f32[4,5]" in said, said
    frozen = torch.ones(4, 3).expand(2, 4, 3)[0]  # read-only: rank 1 refuses it
    if RANK == 1:
        assert "read-only" in raises(em.ArgumentError, lambda: dist.all_reduce(frozen))
    else:
        said = raises(dist.DistributedError, lambda: dist.all_reduce(torch.ones(4, 3)))
        assert "rank(s) [1]" in said, said
    if RANK == 0:
        assert "barrier" in raises(dist.DistributedError, lambda: dist.all_reduce(x))
    else:
        assert "barrier" in raises(dist.DistributedError, dist.barrier)
    strided = torch.ones(4, 6)[:, ::2]  # not contiguous: the full path, the same values
    dist.all_reduce(strided)
    np.testing.assert_array_equal(strided.numpy(), np.full((4, 3), float(WORLD)))
    dist.all_reduce(x)  # the ranks are still in step
    np.testing.assert_array_equal(x.numpy(), np.full((4, 3), float(WORLD * WORLD)))


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


@check
def a_rank_in_a_barrier_while_another_reduces_fails_both():
    # The header exchange is one small collective on every rank: a barrier's mark meets
    # an all_reduce's header there, and both ranks say which rank is where.
    if RANK == 0:
        said = raises(dist.DistributedError, dist.barrier)
    else:
        said = raises(dist.DistributedError, lambda: dist.all_reduce(torch.ones(2)))
    assert "rank(s) [0] are in a barrier while rank(s) [1] are in another collective" \
        in said, said
    dist.barrier()  # both ranks go on in step
    x = torch.ones(3)
    dist.all_reduce(x)
    assert x.tolist() == [WORLD] * 3


@check
def a_rank_late_within_the_timeout_is_waited_for():
    # The rank that waits long polls slowly, answering questions, and goes on when the
    # late rank arrives (well within the timeout: nobody asks).
    import time

    for i in range(4):
        if RANK == i % 2:
            time.sleep(0.05)
        x = torch.full((2,), float(RANK + i))
        dist.all_reduce(x)
        assert x.tolist() == [float(sum(r + i for r in range(WORLD)))] * 2


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

