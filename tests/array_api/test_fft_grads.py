"""Gradients of em.fft (ops/fft_grads.py, issue 36): every transform against PyTorch's
autograd (float32/complex64 and float64/complex128; each norm; odd and even lengths; n and
s that pad and that cut), against finite differences in float64/complex128, and a
jitted backward against eager."""

from __future__ import annotations

import numpy as np
import pytest
from complex_oracles import (
    assert_jitted_backward_is_eagers,
    em_gradients,
    finite_differences,
    torch_gradients,
    weights_for,
)
from pytorch_twins import torch_or_skip

import execmode as em

NORMS = ("backward", "ortho", "forward")
# name: (takes complex input, the input's shape, the keyword sets tried)
ONE_AXIS = {
    "fft": (True, (3, 8), [{}, {"n": 5}, {"n": 11}, {"axis": 0}]),
    "ifft": (True, (3, 7), [{}, {"n": 6}, {"n": 10}]),
    "rfft": (False, (3, 8), [{}, {"n": 7}, {"n": 5}, {"n": 12}, {"axis": 0}]),
    "irfft": (True, (3, 5), [{}, {"n": 7}, {"n": 8}, {"n": 3}, {"n": 14}]),
    "hfft": (True, (3, 5), [{}, {"n": 9}, {"n": 6}, {"n": 3}]),
    "ihfft": (False, (3, 7), [{}, {"n": 8}, {"n": 4}, {"n": 11}]),
}
N_AXES = {
    "fftn": (True, (3, 4, 6), [{}, {"s": (5, 3)}, {"axes": (0, 2)}]),
    "ifftn": (True, (3, 4, 5), [{}, {"s": (2, 6), "axes": (2, 0)}]),
    "rfftn": (False, (3, 4, 6), [{}, {"s": (4, 5)}, {"axes": (0, 1)}, {"s": (2, 7)}]),
    "irfftn": (True, (3, 4, 5), [{}, {"s": (4, 9)}, {"s": (3, 8)}, {"axes": (0, 1)}]),
}
SHIFTS = {"fftshift": (True, (5, 6), [{}, {"axes": 0}]),
          "ifftshift": (True, (5, 7), [{}, {"axes": (1,)}])}
CASES = {**ONE_AXIS, **N_AXES, **SHIFTS}


def _torch_kwargs(kwargs):
    renamed = {"axis": "dim", "axes": "dim"}
    return {renamed.get(k, k): v for k, v in kwargs.items()}


def _transform(name, kwargs):
    def fn(ns, x):
        if ns is em:
            return getattr(em.fft, name)(x, **kwargs)
        return getattr(ns.fft, name)(x, **_torch_kwargs(kwargs))
    return fn


def _input(takes_complex, shape, seed, single):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if takes_complex:
        a = a + 1j * rng.standard_normal(shape)
    if single:
        a = a.astype(np.complex64 if takes_complex else np.float32)
    return a


def _settings(name):
    takes_complex, shape, kwargs_list = CASES[name]
    for kwargs in kwargs_list:
        for norm in ((None,) if name in SHIFTS else NORMS):
            yield takes_complex, shape, kwargs if norm is None else {**kwargs, "norm": norm}


def _weights(fn, a, seed=2):
    with em.no_grad():
        out = fn(em, em.tensor(a))
    return weights_for(out.shape, out.dtype.kind == "c", seed).astype(out.dtype.name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_pytorchs(name):
    torch = torch_or_skip()
    for takes_complex, shape, kwargs in _settings(name):
        fn = _transform(name, kwargs)
        for single, tol in ((False, 1e-11), (True, 1e-4)):
            a = _input(takes_complex, shape, 0, single)
            weights = _weights(fn, a)
            got = em_gradients(fn, [a], weights)[0]
            want = torch_gradients(torch, fn, [a], weights)[0]
            assert got.dtype == a.dtype, f"{name} {kwargs}"
            np.testing.assert_allclose(got.numpy(), want, rtol=tol,
                                       atol=tol * np.abs(want).max(),
                                       err_msg=f"{name} {kwargs} {a.dtype}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name):
    # one padding and one cutting size where the transform takes one, the default norm
    # and one other
    takes_complex, shape, kwargs_list = CASES[name]
    small = shape[:-1] + (min(shape[-1], 5),)
    for kwargs in kwargs_list[:3]:
        for norm in ((None,) if name in SHIFTS else ("backward", "ortho")):
            kw = kwargs if norm is None else {**kwargs, "norm": norm}
            fn = _transform(name, kw)
            try:
                a = _input(takes_complex, small, 1, False)
                weights = _weights(fn, a)
            except em.errors.ExecmodeError:  # a size of s beyond the small input's rank
                continue
            got = em_gradients(fn, [a], weights)[0].numpy()
            want = finite_differences(fn, [a], weights)[0]
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7,
                                       err_msg=f"{name} {kw}")


def test_a_real_signal_gets_a_real_gradient_and_irfft_ignores_what_it_ignores():
    x = em.tensor(np.arange(6.0), requires_grad=True)
    em.sum(em.abs(em.fft.rfft(x))).backward()
    assert x.grad.dtype == em.float64
    # irfft of an even n reads only the real parts of the first and the last input:
    # their imaginary parts get no gradient
    z = em.tensor(np.ones(4) + 1j, requires_grad=True)
    em.sum(em.fft.irfft(z) * em.tensor(np.arange(6.0))).backward()
    assert z.grad.numpy()[0].imag == 0 and z.grad.numpy()[3].imag == 0
    assert z.grad.numpy()[1].imag != 0


def _spectral_program(x, z):
    """A real signal filtered through its spectrum, and a complex one through fftn and
    back, with the shifts and the parts in between."""
    spectrum = em.fft.rfft(x, n=9, norm="ortho")
    filtered = em.fft.irfft(spectrum * em.conj(spectrum) + 1j * spectrum, n=9)
    k = em.fft.fftshift(em.fft.fftn(z * x[:, :4], s=(3, 5), norm="forward"))
    back = em.fft.ifftn(em.fft.ifftshift(k) * 2.0, axes=(0,))
    half = em.fft.hfft(em.fft.ihfft(x, n=6), n=6)
    return (em.sum(filtered ** 2) + em.sum(em.abs(back)) + em.sum(em.imag(k))
            + em.sum(half * x[:, :6]))


@pytest.mark.parametrize("single", [False, True])
def test_a_jitted_backward_through_the_transforms_is_eagers(single):
    x0 = _input(False, (3, 8), 5, single)
    z0 = _input(True, (3, 4), 6, single)
    assert_jitted_backward_is_eagers(_spectral_program, [x0, z0], 1e-5 if single else 1e-12)


def test_the_jitted_transforms_and_their_gradients_stay_in_one_graph():
    # the transforms and their adjoints are plan steps: nothing in them breaks the graph
    def step(x):
        loss = em.sum(em.abs(em.fft.fft(x, n=12, norm="ortho")))
        loss.backward()
        return x.grad

    report = em.explain(step, em.tensor(_input(False, (2, 8), 7, False), requires_grad=True))
    assert report.break_count == 0 and report.graph_count == 1, str(report)
