"""What a composite costs a recorded script beyond the recorder's work on its ops.

Nobody watching, a composite computes on NumPy at once; with a recorder it runs its ops one
by one, each through dispatch (execmode/watched_composites.py counts those calls by site).
The recorder's work on the ops is stated by path (calibration.OP_PATHS); what is left of
the difference (dispatch's general path, the function API's argument checks, a Tensor per
intermediate value) is measured here per call of each site, on small arrays (the work a
composite adds is Python's, whatever the sizes):

    left(workload) = (recorded - plain) / calls - the recorder's stated work on its ops

A workload reaches several sites (linear reaches matmul's; a backward reaches the vjps'
views, matmuls and the gradient accumulation), so the cost per site solves
``declines @ per_site = left`` in the least-squares sense, over every workload at once.
"""

from __future__ import annotations

import numpy as np

from execmode import instrument, watched_composites

CALLS = 50


def workloads(calls: int = CALLS) -> dict:
    """{name: a callable making ``calls`` calls of one composite}: the composites scripts
    reach most, each on arrays of a few hundred bytes."""
    import execmode as em
    from execmode.functional.primitives import apply_op
    from execmode.grad_accumulation import add_into

    F = em.nn.functional
    x, w, b = em.randn(8, 16), em.randn(16, 16), em.randn(16)
    ones, zeros = em.ones(16), em.zeros(16)
    ids, table = em.tensor([1, 3, 5, 7]), em.randn(10, 16)
    logits, target = em.randn(8, 10), em.tensor([0, 1, 2, 3, 4, 5, 6, 7])
    q = em.randn(1, 2, 4, 8)
    xg, wg = em.randn(8, 16, requires_grad=True), em.randn(16, 4, requires_grad=True)
    logits_g = em.randn(8, 10, requires_grad=True)
    ones_g, zeros_g = em.ones(16, requires_grad=True), em.zeros(16, requires_grad=True)
    w_g = em.randn(16, 16, requires_grad=True)
    acc = em.zeros(16)
    # Adam over four small parameters: one C call for all unwatched, one each recorded
    params = [em.randn(16, requires_grad=True) for _ in range(4)]
    for p in params:
        p.grad = em.randn(16)
    adam = em.optim.Adam(params, lr=1e-3)
    one_call = {
        "relu": lambda: F.relu(x),
        "gelu": lambda: F.gelu(x),
        "matmul": lambda: em.matmul(x, w),
        "linear": lambda: F.linear(x, w, b),
        "layer_norm": lambda: F.layer_norm(x, (16,), ones, zeros),
        "embedding": lambda: F.embedding(ids, table),
        "softmax": lambda: F.softmax(x, dim=-1),
        "log_softmax": lambda: F.log_softmax(x, dim=-1),
        "cross_entropy": lambda: F.cross_entropy(logits, target),
        # in training: one node unwatched (nn/one_node.py, nn/one_node_layers.py), the ops
        # watched; the forward alone and with the backward (the node's backward, or the
        # ops' vjps, counted at a site of its own: a script may run the forward alone)
        "cross_entropy_training": lambda: F.cross_entropy(logits_g, target),
        "cross_entropy_backward": lambda: F.cross_entropy(logits_g, target).backward(),
        "layer_norm_training": lambda: F.layer_norm(xg, (16,), ones_g, zeros_g),
        "layer_norm_backward": lambda: F.layer_norm(xg, (16,), ones_g, zeros_g).sum()
        .backward(),
        "softmax_training": lambda: F.softmax(xg, dim=-1),
        "softmax_backward": lambda: F.softmax(xg, dim=-1).sum().backward(),
        "linear_training": lambda: F.linear(xg, w_g, zeros_g),
        "linear_backward": lambda: F.linear(xg, w_g, zeros_g).sum().backward(),
        "gelu_training": lambda: F.gelu(xg),
        "gelu_backward": lambda: F.gelu(xg).sum().backward(),
        "dropout": lambda: F.dropout(x, 0.1, training=True),
        "attention": lambda: F.scaled_dot_product_attention(q, q, q),
        "reshape": lambda: em.reshape(x, (16, 8)),
        "sum": lambda: em.sum(x, axis=0),
        # the vjps' views and products, a leaf's first gradient and the ones added into it
        "backward": lambda: em.matmul(xg, wg).sum().backward(),
        # a walk of many nodes: the walk's cost per node apart from its cost per walk
        # (both sites of their own: autograd.py counts them)
        "backward_chain": lambda: _chain(xg, CHAIN).sum().backward(),
        # and alone: a vjp's view (apply_op), a gradient added into a .grad
        "view": lambda: apply_op("permute_dims", x, axes=(1, 0)),
        "accumulate": lambda: add_into(acc, b),
        "adam_step": adam.step,
    }

    def repeat(fn):
        def run():
            for _ in range(calls):
                fn()
        return run
    return {name: repeat(fn) for name, fn in one_call.items()}


CHAIN = 16


def _chain(x, length: int):
    for _ in range(length):
        x = x * 1.0001
    return x


def probe(run, recorder) -> dict:
    """What one run of a workload does under ``recorder`` (attached by the caller, its
    sites already seen): {"declined": {site: calls}, "ops": n, "ring_ops": by path}."""
    ring = recorder._ring
    before_ring = ring.stats()["recorded"] if ring is not None else None
    before_sites = watched_composites.counts()
    before_seq = instrument.upcoming_seq()
    run()
    ring_ops = None
    if before_ring is not None:
        after = ring.stats()["recorded"]
        ring_ops = {entry: [n - m for n, m in zip(after[entry], before_ring.get(entry, ()))]
                    for entry in after}
    return {"declined": watched_composites.since(before_sites),
            "ops": instrument.upcoming_seq() - before_seq, "ring_ops": ring_ops}


def per_site_ns(left_ns: dict, probes: dict) -> dict:
    """{site: ns per call} from each workload's cost left per run (``left_ns``) and the
    calls it made at each site (``probes``): least squares, negative costs as 0. A site
    no workload reaches alone shares its workload's cost with the sites it reaches."""
    names = [n for n in left_ns if probes.get(n, {}).get("declined")]
    sites = sorted({s for n in names for s in probes[n]["declined"]})
    if not sites:
        return {}
    calls = np.array([[probes[n]["declined"].get(s, 0) for s in sites] for n in names], float)
    left = np.array([left_ns[n] for n in names], float)
    solved = np.linalg.lstsq(calls, left, rcond=None)[0]
    return {site: max(0, round(float(ns))) for site, ns in zip(sites, solved)}
