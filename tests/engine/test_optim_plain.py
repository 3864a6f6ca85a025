"""The optimizers' plain path (execmode/optim/plain.py): with nobody watching, Adam,
AdamW, RMSprop and SGD update the parameters' arrays in place. Over several steps it gives
the bits and the state of the ops (run under a listener, which makes them dispatch), with
weight decay, amsgrad, maximize, momentum, dampening, Nesterov, RMSprop's centering and
parameter groups; it writes in the ops' order; and a listener, a tracer or an argument it
does not take gets the ops."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from helpers import through_the_ops
from hypothesis import given, settings
from hypothesis import strategies as st

import execmode as em
from execmode import instrument, optim
from execmode.optim import plain

FLOATS = st.sampled_from([np.float32, np.float64])
SIZES = st.sampled_from([(), (1,), (3,), (4, 5), (2, 3, 7), (40,), (9, 3)])


def _grads(rng, params, missing=()):
    """Random gradients; every other one in Fortran order (as ``x @ w.T``'s gradient)."""
    for k, p in enumerate(params):
        g = (rng.standard_normal(p.shape) * 3).astype(p.numpy().dtype)
        if k % 2 and g.ndim >= 2:
            g = np.asfortranarray(g)
        p.grad = None if k in missing else em.tensor(g)


def _train(make, shapes, dtype, seed, steps, through_ops, missing=()):
    """Params after ``steps`` steps, the optimizer, and the order in which the step's
    tensors were last written (F.assign's ticks)."""
    rng = np.random.default_rng(seed)
    params = [em.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True)
              for s in shapes]
    opt = make(params)
    for step in range(steps):
        _grads(rng, params, missing if step % 2 else ())
        if through_ops:
            through_the_ops(opt.step)
        else:
            opt.step()
    tensors = list(params) + [t for s in opt.state.values() for t in s.values()]
    ticks = [getattr(t, "_written_at", 0) for t in tensors]
    return params, opt, np.argsort(ticks, kind="stable").tolist()


def _same_bits(a, b):
    a, b = np.ascontiguousarray(a.numpy()), np.ascontiguousarray(b.numpy())
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


def _check(make, shapes, dtype, seed, steps=3, missing=()):
    fast, opt_f, order_f = _train(make, shapes, dtype, seed, steps, False, missing)
    slow, opt_s, order_s = _train(make, shapes, dtype, seed, steps, True, missing)
    for a, b in zip(fast, slow):
        _same_bits(a, b)
    sd_f, sd_s = opt_f.state_dict(), opt_s.state_dict()
    assert sd_f["param_groups"] == sd_s["param_groups"]
    assert sd_f["state"].keys() == sd_s["state"].keys()
    for i in sd_f["state"]:
        assert sd_f["state"][i].keys() == sd_s["state"][i].keys()
        for key in sd_f["state"][i]:
            _same_bits(sd_f["state"][i][key], sd_s["state"][i][key])
    assert order_f == order_s


@contextlib.contextmanager
def _chunk(size):
    """Parameters go by chunks of ``size`` elements (7: the small ones here too)."""
    before, plain.CHUNK = plain.CHUNK, size
    try:
        yield
    finally:
        plain.CHUNK = before


def _adam_kwargs():
    return st.fixed_dictionaries({
        "lr": st.sampled_from([1e-3, 0.1, 1, 0.5]),
        "betas": st.sampled_from([(0.9, 0.999), (0.5, 0.9), (0, 0.99)]),
        "eps": st.sampled_from([1e-8, 1e-3, 0.0]),
        "weight_decay": st.sampled_from([0.0, 0.1, 1e-2]),
        "amsgrad": st.booleans(),
        "maximize": st.booleans(),
    })


@contextlib.contextmanager
def _adam_in_c(on):
    """Adam's update in C (codegen/eager_adam.py), or the NumPy passes only."""
    if not on:
        with plain.ADAM.withheld():
            yield
        return
    import execmode.codegen.eager_operators  # noqa: F401 - hands plain.ADAM its loader

    for _ in range(plain.ADAM.after_calls):  # asked for after a few steps: asked now
        if plain.ADAM.get() is not None:
            break
    if plain.ADAM.get() is None:
        pytest.skip("Adam's C update could not be built here (no C compiler?)")
    yield


@settings(max_examples=60, deadline=None)
@given(kw=_adam_kwargs(), cls=st.sampled_from([optim.Adam, optim.AdamW]), dtype=FLOATS,
       shapes=st.lists(SIZES, min_size=1, max_size=3), seed=st.integers(0, 2**16),
       chunk=st.sampled_from([plain.CHUNK, 7]), in_c=st.booleans())
def test_adam_gives_the_ops_bits(kw, cls, dtype, shapes, seed, chunk, in_c):
    with _chunk(chunk), _adam_in_c(in_c):
        _check(lambda ps: cls(ps, **kw), shapes, dtype, seed, missing=(0,))


def test_adams_c_update_gives_the_numpy_passes_bits_on_extreme_values():
    # Large and tiny gradients, zeros, infinities and NaN: each op rounds (or overflows)
    # where the NumPy passes do.
    values = np.array([0.0, -0.0, 1e-30, -1e30, 3e38, np.inf, -np.inf, np.nan, 1.5, -2.25],
                      np.float32)
    results, calls = [], []
    for in_c in (True, False):
        with _adam_in_c(in_c):
            if in_c:
                kernels = plain.ADAM.get()
                update, many = kernels.update, kernels.update_many
                kernels.update = lambda *a, update=update: (calls.append(1), update(*a))
                kernels.update_many = lambda flats, *a, many=many: (
                    calls.extend([1] * len(flats)), many(flats, *a))
            p = em.tensor(np.linspace(-3, 3, 10).astype(np.float32), requires_grad=True)
            opt = optim.AdamW([p], lr=0.1, weight_decay=0.01, eps=1e-8)
            for k in range(3):
                p.grad = em.tensor(values * (k + 1))
                with np.errstate(all="ignore"):
                    opt.step()
            results.append(p.numpy().copy())
            if in_c:
                kernels.update, kernels.update_many = update, many
    assert len(calls) == 3  # the C update ran
    assert results[0].tobytes() == results[1].tobytes()


@settings(max_examples=40, deadline=None)
@given(lr=st.sampled_from([0.01, 1, 0.3]), momentum=st.sampled_from([0.0, 0.9, 0.5]),
       dampening=st.sampled_from([0.0, 0.1]), nesterov=st.booleans(),
       weight_decay=st.sampled_from([0.0, 1e-2]), maximize=st.booleans(), dtype=FLOATS,
       shapes=st.lists(SIZES, min_size=1, max_size=3), seed=st.integers(0, 2**16),
       chunk=st.sampled_from([plain.CHUNK, 7]))
def test_sgd_gives_the_ops_bits(lr, momentum, dampening, nesterov, weight_decay, maximize,
                                dtype, shapes, seed, chunk):
    if nesterov and (not momentum or dampening):
        nesterov = False
    with _chunk(chunk):
        _check(lambda ps: optim.SGD(ps, lr=lr, momentum=momentum, dampening=dampening,
                                    nesterov=nesterov, weight_decay=weight_decay,
                                    maximize=maximize),
               shapes, dtype, seed, missing=(0,))


@settings(max_examples=40, deadline=None)
@given(lr=st.sampled_from([0.01, 1]), alpha=st.sampled_from([0.99, 0.5, 0]),
       eps=st.sampled_from([1e-8, 0.0, 0.1]), momentum=st.sampled_from([0.0, 0.9]),
       centered=st.booleans(), weight_decay=st.sampled_from([0.0, 1e-2]),
       maximize=st.booleans(), dtype=FLOATS, shapes=st.lists(SIZES, min_size=1, max_size=3),
       seed=st.integers(0, 2**16), chunk=st.sampled_from([plain.CHUNK, 7]))
def test_rmsprop_gives_the_ops_bits(lr, alpha, eps, momentum, centered, weight_decay,
                                    maximize, dtype, shapes, seed, chunk):
    with _chunk(chunk):
        _check(lambda ps: optim.RMSprop(ps, lr=lr, alpha=alpha, eps=eps, momentum=momentum,
                                        centered=centered, weight_decay=weight_decay,
                                        maximize=maximize),
               shapes, dtype, seed, missing=(0,))


@pytest.mark.parametrize("cls", [optim.Adam, optim.AdamW, optim.SGD, optim.RMSprop])
def test_parameter_groups_each_take_their_hyperparameters(cls):
    extra = {"momentum": 0.9} if cls in (optim.SGD, optim.RMSprop) else {"amsgrad": True}

    def make(ps):
        return cls([{"params": ps[:2], "lr": 0.05, "weight_decay": 0.1},
                    {"params": ps[2:], "lr": 0.2, **extra}], lr=0.01)

    _check(make, [(3, 4), (4,), (2, 2), (5,)], np.float32, seed=3, steps=4, missing=(1,))


def _count_steps(monkeypatch):
    calls = []
    for name in ("adam_group", "rmsprop_group", "sgd_group"):
        real = getattr(plain, name)

        def counted(*args, _real=real):
            taken = _real(*args)
            calls.append(taken)
            return taken

        monkeypatch.setattr(plain, name, counted)
    return calls


def test_the_plain_path_runs_when_nobody_watches(monkeypatch):
    calls = _count_steps(monkeypatch)
    p = em.tensor(np.ones((3, 2), np.float32), requires_grad=True)
    p.grad = em.ones((3, 2))
    optim.Adam([p]).step()
    assert calls == [True]


def test_a_listener_sees_every_op_of_the_step():
    p = em.tensor(np.ones((3, 2), np.float32), requires_grad=True)
    opt = optim.Adam([p], weight_decay=0.1)
    p.grad = em.ones((3, 2))
    names = []

    class Names:
        def on_op(self, event, output):
            names.append(event.op)

    with instrument.listening(Names()):
        opt.step()
    assert names.count("assign") == 4  # step, exp_avg, exp_avg_sq, the parameter
    assert "sqrt" in names and "power" in names


@pytest.mark.parametrize("cls", [optim.Adam, optim.SGD])
def test_a_jitted_step_traces_the_ops(cls):
    p = em.tensor(np.linspace(-1, 1, 6, dtype=np.float32), requires_grad=True)
    opt = cls([p], lr=0.1, **({"momentum": 0.9} if cls is optim.SGD else {}))

    def step(x):
        opt.zero_grad()
        ((p * x) ** 2).sum().backward()
        opt.step()

    x = em.tensor(np.arange(6, dtype=np.float32))
    f = em.jit(step)
    f(x)
    f(x)
    graph = f.trace(x)
    assert "assign" in str(graph)


def test_layouts_other_than_c_go_by_rows(monkeypatch):
    """A transposed gradient (``x @ w.T``'s) and a strided parameter: the plain path, by
    chunks of rows, with the ops' bits."""
    calls = _count_steps(monkeypatch)
    results = []
    for through_ops in (False, True):
        base = em.tensor(np.linspace(-2, 2, 9 * 8, dtype=np.float32).reshape(9, 8))
        p = base[:, ::2]
        opt = optim.Adam([p], lr=0.1, weight_decay=0.1)
        for k in range(3):
            p.grad = em.tensor(np.asfortranarray(np.full((9, 4), k - 0.7, np.float32)))
            with _chunk(8):  # two rows a chunk
                through_the_ops(opt.step) if through_ops else opt.step()
        results.append((p, opt.state[0]["exp_avg_sq"]))
    assert calls[:3] == [True] * 3
    for fast, slow in zip(*results):
        _same_bits(fast, slow)


def test_what_the_plain_path_does_not_take_goes_to_the_ops(monkeypatch):
    calls = _count_steps(monkeypatch)
    p = em.tensor(np.ones((2, 5), np.float32), requires_grad=True)
    p.grad = em.tensor(np.asfortranarray(np.ones((2, 5), np.float32)))
    opt = optim.Adam([p])
    with _chunk(4):  # a row longer than the scratch buffers, not contiguous
        opt.step()
    q = em.tensor(np.ones(3, np.float32), requires_grad=True)
    q.grad = q.detach()  # the gradient shares the parameter's memory
    optim.SGD([q], lr=0.5, momentum=0.9).step()
    r = em.tensor(np.ones(3, np.float32), requires_grad=True)
    r.grad = em.ones(3, dtype=em.float64)  # another dtype
    optim.Adam([r]).step()
    assert calls == [False, False, False]
    np.testing.assert_allclose(q.numpy(), 0.5)


@pytest.mark.parametrize(("cls", "name", "kwargs"), [
    (optim.Adam, "adam_step", {}), (optim.AdamW, "adamw_step", {}),
    (optim.SGD, "sgd_step", {"momentum": 0.9}), (optim.RMSprop, "rmsprop_step", {})])
def test_a_recorder_records_the_fused_step_as_one_op_per_parameter(tmp_path, cls, name,
                                                                    kwargs):
    """Recording does not change what runs: the recorded step is the fused one (the same
    bits as an unrecorded step), one op per parameter, allocating nothing, at the user's
    line; a debugger or any other listener still sees every op (the test above)."""
    rng = np.random.default_rng(5)
    shapes = [(4, 3), (3,)]
    values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def two_steps(recorded: bool):
        params = [em.tensor(v.copy(), requires_grad=True) for v in values]
        opt = cls(params, lr=0.1, **kwargs)
        for p, g in zip(params, grads):
            p.grad = em.tensor(g.copy())
        opt.step()
        if not recorded:
            opt.step()
            return params, None
        with em.profile(tmp_path / f"{name}.emsession", calibrate=False) as prof:
            opt.step()  # the user's line
        return params, prof

    plain, _ = two_steps(False)
    params, prof = two_steps(True)
    for a, b in zip(plain, params):
        _same_bits(a, b)
    ops = list(prof.session.ops())
    assert [o.op for o in ops] == [name, name]
    assert all(o.bytes == 0 and o.line > 0 and o.file.endswith("test_optim_plain.py")
               for o in ops)
    assert ops[0].inputs.startswith("f32[4,3], f32[4,3]") and ops[0].output == "f32[4,3]"


def test_a_groups_c_updates_in_one_call_give_each_ones_bits():
    # Every parameter with C-contiguous arrays in one call, a transposed gradient's (copied
    # into C order in the one scratch buffer) alone: the same bits as one call each.
    shapes = [(6, 5), (5,), (7, 3), (4, 4)]
    results = []
    for one_call in (True, False):
        rng = np.random.default_rng(4)
        with _adam_in_c(True):
            kernels = plain.ADAM.get()
            update, many = kernels.update, kernels.update_many
            sizes = []
            kernels.update = lambda *a, sizes=sizes, update=update: (sizes.append(1),
                                                                      update(*a))
            if one_call:
                kernels.update_many = lambda flats, *a, sizes=sizes, many=many: (
                    sizes.append(len(flats)), many(flats, *a))
            else:
                kernels.update_many = lambda flats, constants, flags, kernels=kernels: [
                    kernels.update(*f, constants, flags) for f in flats]
            params = [em.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
                      for s in shapes]
            opt = optim.Adam(params, lr=0.05, weight_decay=0.1)
            for _ in range(3):
                for k, q in enumerate(params):
                    g = rng.standard_normal(q.shape[::-1] if k == 2 else q.shape)
                    g = g.astype(np.float32)
                    q.grad = em.tensor(g).T if k == 2 else em.tensor(g)
                opt.step()
            kernels.update, kernels.update_many = update, many
            results.append([q.numpy().copy() for q in params])
        assert sizes == ([3, 1] * 3 if one_call else [1] * 12)
    for a, b in zip(*results):
        assert a.tobytes() == b.tobytes()


def test_a_strided_gradient_of_a_vector_is_read_with_its_strides():
    # A 1-D parameter's gradient that is a strided view (set through ._data here; a vjp could
    # hand one out): the C update must not read it as contiguous.
    results = []
    for in_c in (True, False):
        with _adam_in_c(in_c):
            p = em.tensor(np.linspace(-1, 1, 10).astype(np.float32), requires_grad=True)
            opt = optim.Adam([p], lr=0.1)
            rng = np.random.default_rng(6)
            for _ in range(3):
                g = em.tensor(rng.standard_normal(20).astype(np.float32))
                g._data = g._data[::2]
                p.grad = g
                opt.step()
            results.append(p.numpy().copy())
    assert results[0].tobytes() == results[1].tobytes()
