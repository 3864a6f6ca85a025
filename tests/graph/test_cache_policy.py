"""Shapes that keep changing, the retrace limit, and graph breaks slower than eager
(execmode/jit_driver/cache_policy.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import execmode as em
from execmode import instrument
from execmode.jit_driver import cache_policy


def _encode(seq, w):
    return em.tanh(seq @ w).mean(axis=0) * 2.0 + 1.0


def _encode_per_size(seq, w):
    # len() is a plain int the tracer cannot follow: its graph differs at every size
    # (a literal 2 / n), so no one graph serves every size (symbolic_dims.py).
    return em.tanh(seq @ w).sum(axis=0) * (2.0 / len(seq)) + 1.0


def _same(got, expected):
    # C's tanhf and NumPy's may differ by an ulp (docs/kernels.md): compiled sizes too;
    # an ulp of the terms, since * 2 + 1 may cancel to a small result.
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


def _calls(f, lengths, w):
    return [f(em.ones(n, 4) * (n / 10), w).numpy() for n in lengths]


def _kernel_backends(jitted) -> list[set]:
    """The backends of each signature's plan steps that replaced fused nodes."""
    out = []
    for cf in jitted.concrete_functions:
        plan = cf.segments[0].compiled.plan
        out.append({s.backend for s in plan.steps if s.kind == "fused"})
    return out


def test_a_growing_dimension_is_served_by_one_graph():
    # A sampling loop: one more token per step. Size 1, then sizes 2 and 3 traced with
    # the dimension symbolic; their graphs agree, and every later size replays it.
    em.random.seed(0)
    w = em.randn(4, 3)
    f = em.jit(_encode)
    lengths = list(range(1, 13))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _calls(f, lengths, w)
    _same(got, _calls(_encode, lengths, w))
    assert f.trace_count == 3 and f.eager_fallbacks == 0, [r.reason for r in f.retraces]
    assert not [w for w in caught if issubclass(w.category, em.JitWarning)]


def test_a_growing_dimension_stops_tracing_at_the_limit_and_runs_eagerly():
    # A graph that differs per size: eight signatures are traced, the rest run eagerly,
    # one warning names the argument and the dimension; numbers as eager.
    em.random.seed(0)
    w = em.randn(4, 3)
    f = em.jit(_encode_per_size)
    lengths = list(range(1, 13))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _calls(f, lengths, w)
    _same(got, _calls(_encode_per_size, lengths, w))
    assert f.trace_count == 8 and f.eager_fallbacks == 4
    jit_warnings = [w for w in caught if issubclass(w.category, em.JitWarning)]
    assert len(jit_warnings) == 1, [str(w.message) for w in jit_warnings]
    text = str(jit_warnings[0].message)
    assert "cache_size_limit" in text and "seq dim 0 took 9 sizes" in text, text
    assert jit_warnings[0].filename == __file__  # points at the user's call
    # A size traced before still replays its graph; no new trace, no fallback.
    f(em.ones(3, 4), w)
    assert f.trace_count == 8 and f.eager_fallbacks == 4


def test_the_second_size_of_a_dimension_makes_it_dynamic():
    em.random.seed(0)
    w = em.randn(4, 3)
    f = em.jit(_encode)
    _calls(f, [5, 7, 9], w)
    assert "dynamic: seq dim 0" in f.retraces[0].reason, f.retraces[0].reason
    backends = _kernel_backends(f)
    # Sizes after the first run their fused nodes through NumPy: no compile per size.
    assert backends[1] == {"numpy"} and backends[2] == {"numpy"}, backends
    assert "numpy" not in backends[0], backends


@pytest.mark.parametrize("dynamic, expect_numpy", [(False, [False, False, False]),
                                                   (True, [True, True, True])])
def test_dynamic_can_be_turned_off_or_on_from_the_start(dynamic, expect_numpy):
    em.random.seed(0)
    w = em.randn(4, 3)
    f = em.jit(_encode, dynamic=dynamic)
    _same(_calls(f, [5, 7, 9], w), _calls(_encode, [5, 7, 9], w))
    assert [b == {"numpy"} for b in _kernel_backends(f)] == expect_numpy


def test_the_limit_can_be_raised_or_removed():
    em.random.seed(0)
    w = em.randn(4, 3)
    f = em.jit(_encode_per_size, cache_size_limit=None)
    _calls(f, range(1, 12), w)
    assert f.trace_count == 11 and f.eager_fallbacks == 0
    assert "traced per size: the graph at sizes" in f.retraces[-1].reason
    g = em.jit(cache_size_limit=2)(_encode_per_size)
    with pytest.warns(em.JitWarning, match="2 signatures traced"):
        _calls(g, [1, 2, 3], w)
    assert g.trace_count == 2 and g.eager_fallbacks == 1


@pytest.mark.parametrize("kwargs", [{"cache_size_limit": 0}, {"cache_size_limit": "8"},
                                    {"dynamic": "auto"}])
def test_bad_options_are_refused(kwargs):
    with pytest.raises(em.ArgumentError, match="em.jit"):
        em.jit(_encode, **kwargs)


def test_explain_cli_reports_the_fallbacks():
    from execmode.jit_driver.explain_cli import format_report

    em.random.seed(0)
    w = em.randn(4, 3)
    f = em.jit(cache_size_limit=1)(_encode)
    with pytest.warns(em.JitWarning):
        _calls(f, [1, 2], w)
    assert "1 call(s) ran eagerly: cache_size_limit=1" in format_report([f])


def _many_breaks(x):
    # Every .item() is a graph break: thirty tiny segments per call.
    total = 0.0
    for _ in range(30):
        x = x + 1.0
        total += x.sum().item()
    return x * total


def test_breaks_that_make_graph_mode_slower_than_eager_are_reported_once():
    # Thirty breaks per call cost far more than thirty tiny eager ops (the ratio is
    # tens, the threshold 1.5: not a close call on any machine).
    f = em.jit(_many_breaks)
    x = em.ones(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [f(x).numpy() for _ in range(8)]
    for r in results:
        np.testing.assert_array_equal(r, _many_breaks(x).numpy())
    slow = [w for w in caught if issubclass(w.category, em.JitWarning)]
    assert len(slow) == 1, [str(w.message) for w in slow]
    text = str(slow[0].message)
    assert "slower than eager" in text and "ms eagerly" in text, text
    assert f"test_cache_policy.py:{_many_breaks.__code__.co_firstlineno + 5}" in text, text


def test_no_eager_sample_while_someone_listens():
    class Listener:
        def on_event(self, event):
            pass

    f = em.jit(_many_breaks)
    x = em.ones(3)
    with instrument.listening(Listener()), warnings.catch_warnings():
        warnings.simplefilter("error", em.JitWarning)
        for _ in range(5):
            f(x)


def test_a_recorder_alone_lets_the_eager_samples_run_as_they_run_unrecorded(tmp_path):
    """A profile records the calls the program makes without it: the eager samples
    too (tracing them instead cost a recorded script more than the recorder stated), and
    the person hears that the breaks make graph mode slower."""
    from execmode.profilers.recorder import Recorder
    from execmode.profilers.session import open_session

    f = em.jit(_many_breaks)
    x = em.ones(3)
    rec = Recorder(tmp_path / "s.emsession", calibrate=False).start()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(8):
                f(x)
    finally:
        rec.close()
    slow = [w for w in caught if issubclass(w.category, em.JitWarning)]
    assert len(slow) == 1, [str(w.message) for w in slow]
    assert "slower than eager" in str(slow[0].message)
    with open_session(tmp_path / "s.emsession") as s:
        samples = [e for e in s.events("retrace") if "eager sample" in e.data["reason"]]
    assert len(samples) == cache_policy.EAGER_SAMPLES


@pytest.mark.parametrize("jit_ns, eager_ns, slower", [
    (3_000_000, 1_000_000, True),
    (1_400_000, 1_000_000, False),   # within the factor: noise on a loaded machine
    (60_000, 20_000, False),         # 3x, but 40 us apart: too small to be worth a word
    (200_000, 100_000, True),
])
def test_the_slower_decision(jit_ns, eager_ns, slower):
    assert cache_policy.slower_than_eager(jit_ns, eager_ns) is slower
