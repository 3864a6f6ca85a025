"""The plain path of the optimizer steps: the ops' NumPy calls, made in place.

An eager Adam step through the ops dispatches ~18 ops per parameter, each a fresh array,
and ends with copies into the parameter and the moments (``F.assign``). When nobody
watches (``dispatch.plain_arrays``: no tracer, no listener; the step runs under no_grad),
:func:`adam_group`, :func:`rmsprop_group` and :func:`sgd_group` make the same ufunc calls, with the same
operands, in the same order, but with ``out=``: into the parameter and the state arrays
themselves, or into scratch buffers. Elementwise ufuncs compute each element alone, so
the bits are the ops' (tests/engine/test_optim_plain.py compares them with the ops run
under a listener, over several steps). Large parameters go by chunks of ``CHUNK``
elements, so that the ~14 passes of a chunk stay in the cache. Adam's and AdamW's update
(without amsgrad) makes the same operations per element in C, in one pass, once a few
steps have run (``ADAM``: codegen/eager_adam.py; an MLP 784-256-256-10's step 0.37 ->
0.14 ms here).

A recorder (a listener with ``records_fused_steps``, after ops only) does not turn this
path off: it records each parameter's update as one op (``adam_step``, ``sgd_step`` ...,
with the parameter, its gradient and state as inputs, allocating nothing), so a profile
measures the step that runs without it, not ~18 ops per parameter in its place.

Each returns False before writing anything when it does not take the group: a tracer or
another listener (then the debugger sees each op and the jit traces them), a GPU array, a
hyperparameter that is not a Python number, dtypes or shapes that differ, a gradient
that shares memory with the parameter or its state, a non-contiguous array whose rows
exceed ``CHUNK``. The
optimizer then runs its ops. ``F.assign``'s bookkeeping (``tape.mark_modified``) is kept,
in the ops' order. ``EXECMODE_PLAIN_OPTIM=0`` (or ``ENABLED = False``) keeps the ops.
"""

from __future__ import annotations

import os
import threading

import numpy as np

from .. import dispatch
from ..ops.native_kernels import NativeKernels
from ..tape import mark_modified
from ..watched_composites import count as count_declined

ENABLED = os.environ.get("EXECMODE_PLAIN_OPTIM", "1") != "0"
CHUNK = 65536  # elements a chunk: a 4M-element Adam step 8.1 -> 6.5 ms against one pass each

# Adam's update in C (codegen/eager_adam.py hands the loader over at import), asked for
# after a few steps: a script of one step compiles nothing.
ADAM = NativeKernels(after_calls=4)

_NUMBER = (int, float)
_ndarray = np.ndarray
_scratch = threading.local()  # per thread: two flat buffers of CHUNK elements per dtype


def _buffers(dtype):
    cache = _scratch.__dict__.setdefault("by_dtype", {})
    pair = cache.get(dtype)
    if pair is None or pair[0].size != CHUNK:
        pair = cache[dtype] = (np.empty(CHUNK, dtype), np.empty(CHUNK, dtype))
    return pair


def _numbers(*values) -> bool:
    return all(v.__class__ in _NUMBER for v in values)


def _disjoint(a, b) -> bool:
    """Whether ``a`` and ``b`` certainly share no memory: two arrays that own their data
    (the state zeros_like made, a fresh gradient) at once, else NumPy's bounds check."""
    if a.base is None and b.base is None:
        return a is not b
    return not np.may_share_memory(a, b)


_NO_ATTRS: dict = {}


def _record_step(name: str, p, inputs: tuple, t0: int) -> None:
    """Give a recorder the update of ``p`` as one op, when one listens. Its output is a
    view of the parameter: written in place, it allocated nothing."""
    if not dispatch._plain:
        dispatch.emit_after(name, inputs, _NO_ATTRS, p, p._data[...], t0)


def _group_work(opt, group, indices, names, dtype):
    """[(param, its state, its arrays)] for the group's params with a gradient, the state
    tensors named ``names``; None when one of them cannot take the plain path."""
    work = []
    for i, p in zip(indices, group["params"]):
        if p.grad is None:
            continue
        state = opt.state[i]
        arrays = _param_arrays(p, p.grad, [state[k] for k in names], dtype)
        if arrays is None:
            return None
        work.append((p, state, arrays, (p, p.grad, *(state[k] for k in names))))
    return work


def _param_arrays(p, grad, state_tensors, dtype):
    """The arrays ``(param, grad, *state)`` of one parameter, flat when all are
    C-contiguous (a gradient of ``x @ w.T`` is not), or None when the plain path does not
    take it."""
    arrays = dispatch.plain_arrays(p, grad, *state_tensors, fused=True)
    if arrays is None:
        return None
    pd, gd = arrays[0], arrays[1]
    contiguous = True
    for a in arrays:
        if a.dtype != dtype or a.shape != pd.shape:
            return None
        contiguous = contiguous and a.flags.c_contiguous
    if not pd.flags.writeable:
        return None
    for a in arrays[2:]:
        if not a.flags.writeable or not _disjoint(a, pd) or not _disjoint(a, gd):
            return None
    if not _disjoint(gd, pd):
        return None
    if contiguous:
        return [a.reshape(-1) for a in arrays]
    if pd.size > CHUNK and pd.size // pd.shape[0] > CHUNK:
        return None  # a row does not fit the scratch buffers
    return arrays


def _const(x, dtype):
    """``x`` as a 0-d array of ``dtype``: the value the ufunc would convert the Python
    number to (NEP 50: a Python float or small int takes the array's dtype), and ~0.25 us
    cheaper a call. A large int stays as it is, converted by the ufunc itself."""
    if x.__class__ is int and not -(2**24) <= x <= 2**24:
        return x
    return np.asarray(x, dtype=dtype)


def _grad_in_c_order(g):
    """A C-ordered copy of the gradient ``g`` in a per-thread buffer, flat. A Fortran-ordered
    matrix (``x @ w.T``'s gradient) is copied by blocks of columns of ~8K elements (at
    least 32 columns), so that the strided reads stay in L1 (whole-matrix copies against
    blocks: 256x784 ~180 -> ~70 us, 64x1568 47 -> 33 us)."""
    n = g.size
    buf = _scratch.__dict__.get("grad")
    if buf is None or buf.dtype != g.dtype or buf.size < n:
        buf = _scratch.grad = np.empty(n, g.dtype)
    flat = buf[:n]
    out = flat.reshape(g.shape)
    if g.ndim == 2 and g.flags.f_contiguous:
        width = max(32, 8192 // g.shape[0])
        for j in range(0, g.shape[1], width):
            np.copyto(out[:, j:j + width], g[:, j:j + width])
    else:
        np.copyto(out, g)
    return flat


def _run_chunked(kernel, arrays, scratch, *args) -> None:
    """``kernel(*arrays, s0, s1, *args)`` by chunks of at most CHUNK elements along the
    arrays' first axis (one call when they are smaller); None entries stay None.

    Flat arrays (all C-contiguous) go as they are. When only the gradient is not
    C-contiguous, it is copied into C order first (one transposing copy instead of a
    transposing iteration in every ufunc that reads it) and the rest goes flat. Otherwise
    the rows of a chunk are views whatever the layout."""
    s0, s1 = scratch
    first = arrays[0]
    if first.ndim > 1 and all(x is None or x.flags.c_contiguous
                              for k, x in enumerate(arrays) if k != 1):
        arrays = [None if x is None else _grad_in_c_order(x) if k == 1 else x.reshape(-1)
                  for k, x in enumerate(arrays)]
        first = arrays[0]
    n = first.size
    if first.ndim == 1 and n <= CHUNK:
        kernel(*arrays, s0[:n], s1[:n], *args)
        return
    if first.ndim == 0 or n == 0:
        kernel(*arrays, s0[:n].reshape(first.shape), s1[:n].reshape(first.shape), *args)
        return
    rows = first.shape[0]
    row = n // rows
    step = max(1, CHUNK // row)  # row <= CHUNK unless the arrays are flat
    for a in range(0, rows, step):
        b = min(a + step, rows)
        k = (b - a) * row
        part = [None if x is None else x[a:b] for x in arrays]
        shape = part[0].shape
        kernel(*part, s0[:k].reshape(shape), s1[:k].reshape(shape), *args)


# --- Adam / AdamW ---------------------------------------------------------------------

def adam_group(opt, group: dict, indices: list[int]) -> bool:
    """Adam's ``_step_group`` in place (see adam.py for the ops it mirrors)."""
    if not ENABLED or not dispatch.fused_path_open():
        return False
    lr, betas, eps, decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
    if not (isinstance(betas, tuple) and len(betas) == 2 and _numbers(lr, eps, decay, *betas)):
        return False
    beta1, beta2 = betas
    amsgrad, maximize, decoupled = bool(group["amsgrad"]), bool(group.get("maximize")), \
        opt.decoupled
    step = opt.state[indices[0]]["step"]
    ts = dispatch.plain_arrays(step, fused=True)
    if ts is None:
        return False
    td = ts[0]
    if td.shape != () or td.dtype.kind != "f" or not td.flags.writeable:
        return False
    names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad \
        else ("exp_avg", "exp_avg_sq")
    work = _group_work(opt, group, indices, names, td.dtype)
    if work is None:
        return False
    # Every check passed: now write. t = t + 1; bias_k = 1 - beta_k ** t (0-d, as the ops).
    td[...] = np.add(td, 1)
    mark_modified(step)
    bias1 = np.subtract(1, np.power(beta1, td))
    bias2 = np.subtract(1, np.power(beta2, td))
    dt = td.dtype
    shrink = _const(1 - lr * decay, dt) if decay and decoupled else None
    add_decay = _const(decay, dt) if decay and not decoupled else None
    consts = (_const(beta1, dt), _const(beta2, dt), _const(1 - beta1, dt),
              _const(1 - beta2, dt), np.asarray(bias1), np.asarray(bias2), _const(lr, dt),
              _const(eps, dt))
    scratch = _buffers(dt)
    name = "adamw_step" if decoupled else "adam_step"
    # The C update (one pass) where it makes the same operations: every constant a value
    # of the dtype, as the ufuncs take them; amsgrad and others by the NumPy passes.
    table = [*consts, _const(1, dt) if shrink is None else shrink,
             _const(0, dt) if add_decay is None else add_decay]
    native = ADAM.get() if not amsgrad and dt in _NATIVE_DTYPES and all(
        c.__class__ is _ndarray for c in table) else None
    if native is not None:
        table = np.array(table, dtype=dt)  # (the 0-d values exactly)
        flags = (1 if maximize else 0) | (2 if shrink is not None else 0) | \
            (4 if add_decay is not None else 0)
    batched = native is not None and dispatch._plain
    if native is not None and not batched and dispatch._listening:
        # A recorder takes each update as an op, so they go one call each: part of what
        # recording costs (watched_composites.py), counted per parameter.
        count_declined(_ADAM_SITE, len(work))
    if batched:
        # Nobody records each update as an op: every parameter whose arrays are all
        # C-contiguous in one C call; the others (a gradient copied into C order uses the
        # one scratch buffer) one at a time below; the bookkeeping after all, in order.
        flats = [_contiguous_flats(arrays) for _, _, arrays, _ in work]
        native.update_many([f for f in flats if f is not None], table, flags)
    for k, (p, state, arrays, inputs) in enumerate(work):
        if batched and flats[k] is not None:
            continue
        t0 = dispatch._perf_ns()
        flat = _flat(arrays) if native is not None else None
        if flat is not None:
            native.update(*flat, table, flags)
        else:
            if not amsgrad:
                arrays.append(None)
            _run_chunked(_adam_chunk, arrays, scratch, maximize, shrink, add_decay,
                         *consts)
        if not batched:
            _record_step(name, p, inputs, t0)
            _mark_adam_updates([(p, state, arrays, inputs)], shrink, amsgrad)
    if batched:
        _mark_adam_updates(work, shrink, amsgrad)
    return True


_ADAM_SITE = adam_group.__code__  # where a recorded Adam step's parameters are counted


def _mark_adam_updates(work, shrink, amsgrad) -> None:
    """F.assign's bookkeeping of each update, in the ops' order."""
    for p, state, _, _ in work:
        if shrink is not None:
            mark_modified(p)
        mark_modified(state["exp_avg"])
        mark_modified(state["exp_avg_sq"])
        if amsgrad:
            mark_modified(state["max_exp_avg_sq"])
        mark_modified(p)


def _contiguous_flats(arrays):
    """``arrays`` (param, grad, moments) flat when every one is C-contiguous, else None."""
    if all(a.flags.c_contiguous for a in arrays):
        return arrays if arrays[0].ndim == 1 else [a.reshape(-1) for a in arrays]
    return None


_NATIVE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _flat(arrays):
    """``arrays`` (param, grad, moments) flat for the C update: as they are, or with the
    gradient copied into C order when only it is not C-contiguous; None otherwise."""
    flats = _contiguous_flats(arrays)
    if flats is not None:
        return flats
    if all(a.flags.c_contiguous for k, a in enumerate(arrays) if k != 1):
        return [_grad_in_c_order(a) if k == 1 else a.reshape(-1)
                for k, a in enumerate(arrays)]
    return None


def _adam_chunk(p, g, m, v, mx, s0, s1, maximize, shrink, add_decay, beta1, beta2, k1, k2,
                bias1, bias2, lr, eps):
    if maximize:  # g = -g
        g = np.negative(g, out=s0)
    if shrink is not None:  # p = p * (1 - lr * decay)
        np.multiply(p, shrink, out=p)
    elif add_decay is not None:  # g = g + decay * p
        g = np.add(g, np.multiply(add_decay, p, out=s1), out=s1)
    tmp = s1 if g is s0 else s0
    # m = beta1 * m + (1 - beta1) * g
    np.multiply(beta1, m, out=m)
    np.add(m, np.multiply(k1, g, out=tmp), out=m)
    # v = beta2 * v + (1 - beta2) * g * g
    np.multiply(beta2, v, out=v)
    np.multiply(k2, g, out=tmp)
    np.add(v, np.multiply(tmp, g, out=tmp), out=v)
    if mx is not None:  # max_v = maximum(max_v, v); v = max_v
        v = np.maximum(mx, v, out=mx)
    # p = p - lr * (m / bias1) / (sqrt(v / bias2) + eps)
    np.true_divide(m, bias1, out=s0)
    np.true_divide(v, bias2, out=s1)
    np.sqrt(s1, out=s1)
    np.add(s1, eps, out=s1)
    np.multiply(lr, s0, out=s0)
    np.true_divide(s0, s1, out=s0)
    np.subtract(p, s0, out=p)


# --- RMSprop --------------------------------------------------------------------------

def rmsprop_group(opt, group: dict, indices: list[int]) -> bool:
    """RMSprop's ``_step_group`` in place (see rmsprop.py for the ops it mirrors)."""
    if not ENABLED or not dispatch.fused_path_open():
        return False
    lr, alpha, eps, decay, momentum = group["lr"], group["alpha"], group["eps"], \
        group["weight_decay"], group["momentum"]
    if not _numbers(lr, alpha, eps, decay, momentum):
        return False
    centered, maximize = bool(group["centered"]), bool(group.get("maximize"))
    step = opt.state[indices[0]]["step"]
    ts = dispatch.plain_arrays(step, fused=True)
    if ts is None:
        return False
    td = ts[0]
    if td.shape != () or td.dtype.kind != "f" or not td.flags.writeable:
        return False
    names = ["square_avg"] + (["grad_avg"] if centered else []) \
        + (["momentum_buffer"] if momentum else [])
    work = _group_work(opt, group, indices, names, td.dtype)
    if work is None:
        return False
    td[...] = np.add(td, 1)  # t = t + 1 (counted, not used)
    mark_modified(step)
    dt = td.dtype
    consts = (_const(decay, dt) if decay else None, _const(alpha, dt),
              _const(1 - alpha, dt), _const(eps, dt),
              _const(momentum, dt) if momentum else None, _const(lr, dt))
    scratch = _buffers(dt)
    for p, state, arrays, inputs in work:
        t0 = dispatch._perf_ns()
        sq = arrays[2]
        ga = arrays[3] if centered else None
        buf = arrays[-1] if momentum else None
        _run_chunked(_rmsprop_chunk, [arrays[0], arrays[1], sq, ga, buf], scratch, maximize,
                     *consts)
        _record_step("rmsprop_step", p, inputs, t0)
        for k in names:
            mark_modified(state[k])
        mark_modified(p)
    return True


def _rmsprop_chunk(p, g, sq, ga, buf, s0, s1, maximize, decay, alpha, k, eps, momentum,
                   lr):
    if maximize:  # g = -g
        g = np.negative(g, out=s0)
    if decay is not None:  # g = g + decay * p
        g = np.add(g, np.multiply(decay, p, out=s1), out=s1)
    free = s1 if g is s0 else s0
    # sq = alpha * sq + (1 - alpha) * g * g
    np.multiply(alpha, sq, out=sq)
    np.multiply(k, g, out=free)
    np.add(sq, np.multiply(free, g, out=free), out=sq)
    if ga is not None:  # ga = alpha * ga + (1 - alpha) * g; avg = sqrt(sq - ga * ga) + eps
        np.multiply(alpha, ga, out=ga)
        np.add(ga, np.multiply(k, g, out=free), out=ga)
        avg = np.subtract(sq, np.multiply(ga, ga, out=free), out=free)
        np.sqrt(avg, out=avg)
    else:  # avg = sqrt(sq) + eps
        avg = np.sqrt(sq, out=free)
    np.add(avg, eps, out=avg)
    if buf is not None:  # buf = momentum * buf + g / avg; p = p - lr * buf
        np.multiply(momentum, buf, out=buf)
        np.add(buf, np.true_divide(g, avg, out=avg), out=buf)
        np.subtract(p, np.multiply(lr, buf, out=avg), out=p)
    else:  # p = p - lr * g / avg
        out = g if g is s0 or g is s1 else s1
        np.multiply(lr, g, out=out)
        np.subtract(p, np.true_divide(out, avg, out=out), out=p)


# --- SGD ------------------------------------------------------------------------------

def sgd_group(opt, group: dict, indices: list[int]) -> bool:
    """SGD's ``_step_group`` in place (see sgd.py for the ops it mirrors)."""
    if not ENABLED or not dispatch.fused_path_open():
        return False
    lr, momentum, decay, dampening = group["lr"], group["momentum"], \
        group["weight_decay"], group["dampening"]
    if not _numbers(lr, momentum, decay, dampening):
        return False
    maximize, nesterov = bool(group.get("maximize")), bool(group["nesterov"])
    first = group["params"][0]
    fd = dispatch.plain_arrays(first, fused=True)
    if fd is None or fd[0].dtype.kind != "f":
        return False
    dtype = fd[0].dtype
    started = None
    if momentum and dampening:
        started = opt.state[indices[0]]["momentum_started"]
        sd = dispatch.plain_arrays(started, fused=True)
        if sd is None or sd[0].dtype != dtype or sd[0].shape != () \
                or not sd[0].flags.writeable:
            return False
    work = []
    for i, p in zip(indices, group["params"]):
        g = p.grad
        if g is None:
            continue
        buf = [opt.state[i]["momentum_buffer"]] if momentum else []
        arrays = _param_arrays(p, g, buf, dtype)
        if arrays is None:
            return False
        work.append((p, buf, arrays, (p, g, *buf)))
    # Every check passed: now write.
    scale = None
    if started is not None:  # scale = 1 - dampening * started; started = 1
        st = started._data
        scale = np.subtract(1, np.multiply(dampening, st))
        st[...] = np.ones_like(st)
        mark_modified(started)
    scratch = _buffers(dtype)
    consts = (_const(decay, dtype) if decay else None,
              _const(momentum, dtype) if momentum else None,
              None if scale is None else np.asarray(scale), nesterov, _const(lr, dtype))
    for p, buf, arrays, inputs in work:
        t0 = dispatch._perf_ns()
        if not momentum:
            arrays.append(None)
        _run_chunked(_sgd_chunk, arrays, scratch, maximize, *consts)
        _record_step("sgd_step", p, inputs, t0)
        if momentum:
            mark_modified(buf[0])
        mark_modified(p)
    return True


def _sgd_chunk(p, g, buf, s0, s1, maximize, decay, momentum, scale, nesterov, lr):
    if maximize:  # g = -g
        g = np.negative(g, out=s0)
    if decay is not None:  # g = g + decay * p
        g = np.add(g, np.multiply(decay, p, out=s1), out=s1)
    if momentum is not None:
        tmp = s1 if g is s0 else s0
        # buf = momentum * buf + (g, or scale * g with dampening)
        np.multiply(momentum, buf, out=buf)
        np.add(buf, g if scale is None else np.multiply(scale, g, out=tmp), out=buf)
        if nesterov:  # g = g + momentum * buf
            g = np.add(g, np.multiply(momentum, buf, out=tmp), out=tmp)
        else:
            g = buf
    # p = p - lr * g
    out = g if g is s0 or g is s1 else s0
    np.subtract(p, np.multiply(lr, g, out=out), out=p)


__all__ = ["CHUNK", "ENABLED", "adam_group", "rmsprop_group", "sgd_group"]
