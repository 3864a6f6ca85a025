"""Composites that run op by op because a recorder watches are counted by site and their
cost stated (execmode/watched_composites.py, profilers/calibration_declined.py,
profilers/profiler_cost.py): invariants of counting and stating, no timings."""

from __future__ import annotations

from execmode.profilers import calibration_declined
from execmode.profilers.profiler_cost import profiler_cost
from execmode.profilers.recorder import Recorder
from execmode.profilers.session import open_session

import execmode as em
from execmode import watched_composites

F = em.nn.functional
NOTHING_CALIBRATED = {"overhead_ns": 0, "kernel_step_ns": 0, "kernel_run_ns": 0,
                      "kernel_loop_step_ns": 0, "settled": True}


def _linear_calls(n: int, x, w, b) -> None:
    for _ in range(n):
        F.linear(x, w, b)


def test_nobody_watching_counts_nothing():
    x, w, b = em.ones((2, 3)), em.ones((4, 3)), em.ones(4)
    before = watched_composites.counts()
    _linear_calls(5, x, w, b)
    assert watched_composites.since(before) == {}


def _recorded_linear_calls(tmp_path, n: int):
    """(meta, summary) of a session that recorded ``n`` calls of linear."""
    x, w, b = em.ones((2, 3)), em.ones((4, 3)), em.ones(4)
    rec = Recorder(tmp_path / "s.emsession", calibrate=False).start()
    _linear_calls(n, x, w, b)
    rec.close()
    with open_session(tmp_path / "s.emsession") as s:
        return s.meta, s.summary()


def test_a_recorded_composite_is_counted_at_its_site_and_stated(tmp_path):
    meta, summary = _recorded_linear_calls(tmp_path, 7)
    declined = meta["recorded"]["declined"]
    assert declined["nn/functional:linear"] == 7
    calibration = dict(NOTHING_CALIBRATED, declined_ns={"nn/functional:linear": 1000})
    cost = profiler_cost(calibration, summary["profiler_cost"].counts, meta)
    # linear's inner matmul declines too: a site not calibrated costs the median site's
    assert cost.declined_ns == 1000 * sum(declined.values())
    assert cost.declined_calls == sum(declined.values())
    assert cost.total_ns >= cost.declined_ns
    assert "composite calls and backward steps run op by op" in cost.text(summary["wall_ns"])


def test_a_composite_that_would_run_op_by_op_anyway_is_not_counted(tmp_path):
    """With a gradient to record, the composite runs its ops whoever watches: the
    recorder costs it nothing beyond its ops."""
    x, w, b = em.ones((2, 3), requires_grad=True), em.ones((4, 3)), em.ones(4)
    rec = Recorder(tmp_path / "s.emsession", calibrate=False).start()
    before = watched_composites.counts()
    _linear_calls(3, x, w, b)
    after = watched_composites.since(before)
    rec.close()
    assert "nn/functional:linear" not in after


def test_without_a_calibration_of_composites_nothing_is_stated_for_them(tmp_path):
    meta, summary = _recorded_linear_calls(tmp_path, 2)
    cost = profiler_cost(NOTHING_CALIBRATED, summary["profiler_cost"].counts, meta)
    assert cost.declined_ns is None


def test_each_sites_cost_is_solved_from_workloads_that_reach_several():
    """linear reaches matmul's site as well as its own: matmul's cost comes from the
    matmul workload, linear's is what is left of its own."""
    probes = {"matmul": {"declined": {"mm": 1}}, "linear": {"declined": {"mm": 1, "lin": 1}},
              "backward": {"declined": {"mm": 2, "acc": 1}}}
    left = {"matmul": 300.0, "linear": 1300.0, "backward": 1100.0}
    assert calibration_declined.per_site_ns(left, probes) == {"mm": 300, "lin": 1000,
                                                               "acc": 500}


def test_every_composite_workload_reaches_its_site_under_a_recorder(tmp_path):
    """The calibration's workloads run, and each reaches at least one site (a workload
    that reached none would calibrate nothing)."""
    runs = calibration_declined.workloads(calls=2)
    rec = Recorder(tmp_path / "s.emsession", calibrate=False).start()
    try:
        for run in runs.values():
            run()
        probes = {name: calibration_declined.probe(run, rec) for name, run in runs.items()}
    finally:
        rec.close()
    for name, probe in probes.items():
        assert probe["declined"], name
        assert probe["ops"] > 0, name


def test_a_recorded_one_node_composite_counts_its_backward_apart(tmp_path):
    """Unwatched, linear in training is one node (nn/one_node_layers.py); recorded, its
    ops run: the forward counts at the composite's site, and backward through its result
    at the node's backward site, only when a backward runs (a forward alone, as a batch
    sweep without no_grad makes, states no backward's cost)."""
    x = em.randn(4, 8, requires_grad=True)
    w = em.randn(3, 8, requires_grad=True)
    rec = Recorder(tmp_path / "s.emsession", calibrate=False).start()
    try:
        before = watched_composites.counts()
        y = em.nn.functional.linear(x, w)
        forward = watched_composites.since(before)
        before = watched_composites.counts()
        y.sum().backward()
        backward = watched_composites.since(before)
    finally:
        rec.close()
    assert forward == {"nn/one_node_layers:linear": 1}
    assert backward.get("nn/one_node_layers:linear_grads") == 1
    assert "nn/one_node_layers:linear" not in backward
    assert not watched_composites.marked  # the recorder gone: backward stops looking


def test_a_recorded_adam_step_counts_each_parameter_that_went_alone(tmp_path):
    """Unwatched, Adam updates a group in one C call; recorded, one call per parameter
    (each an op for the recorder): counted per parameter at adam_group's site, so that the
    calibration's cost per call is stated for it. Where the C update is not loaded, every
    parameter goes alone whoever watches: nothing counted."""
    from execmode.optim import plain

    params = [em.randn(8, requires_grad=True) for _ in range(3)]
    for p in params:
        p.grad = em.ones(8)
    opt = em.optim.Adam(params, lr=1e-3)
    for _ in range(plain.ADAM.after_calls + 1):  # past the calls before the C is loaded
        opt.step()
    before = watched_composites.counts()
    opt.step()
    assert watched_composites.since(before) == {}
    rec = Recorder(tmp_path / "s.emsession", calibrate=False).start()
    try:
        before = watched_composites.counts()
        opt.step()
        counted = watched_composites.since(before)
    finally:
        rec.close()
    expected = {"optim/plain:adam_group": 3} if plain.ADAM.get() is not None else {}
    assert counted == expected


def test_a_recorded_backward_counts_its_walk_and_nodes_apart(tmp_path):
    """Watched, backward's vjps run their ops one by one: the walk costs more than those
    ops' recording, once per walk and per node. Each counts at a site of its own (the
    calibration's backward workloads of 2 and 17 nodes separate the two); nothing is
    counted unwatched or inside a trace."""
    x = em.randn(4, 8, requires_grad=True)

    def loss():
        return (em.tanh(x * 2.0) + 1.0).sum()  # 4 nodes

    before = watched_composites.counts()
    loss().backward()
    assert watched_composites.since(before) == {}
    rec = Recorder(tmp_path / "s.emsession", calibrate=False).start()
    try:
        before = watched_composites.counts()
        loss().backward()
        watched = watched_composites.since(before)
        before = watched_composites.counts()
        em.jit(_step_with_backward)(em.ones(4))
        traced = watched_composites.since(before)
    finally:
        rec.close()
    assert watched["autograd:_walk"] == 1 and watched["autograd:_Walk.run"] == 4
    assert "autograd:_walk" not in traced


_w = em.randn(4, requires_grad=True)


def _step_with_backward(x):
    loss = (x * _w).sum()
    loss.backward()
    return loss
