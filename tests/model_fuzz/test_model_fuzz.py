"""The model-level differential fuzzer: random models trained eagerly and under em.jit.

* ``test_fast_tier``: a few dozen models from a fixed seed, in the default run (CI; the
  test tiers' slow mark, as it trains each model twice).
* ``test_slow_tier``: >= 2,000 models, only with ``pytest -m model_fuzz``; the seed is
  ``EXECMODE_FUZZ_SEED`` or a fresh one, printed with any failure.
* The rest tests the fuzzer itself: generation is deterministic and reaches every feature,
  every model runs eagerly, planted bugs (the mismatch classes of issue 38, and a lost
  update) are caught, the minimizer shrinks.

A failure prints the seed, the mismatches and a minimized model: its script runs as it is
with ``JIT = em.jit`` against ``JIT = lambda f: f``; make the class a named regression
test in tests/graph/test_model_fuzz_found.py.
"""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest
from fuzz.campaign import seed_from_env

import execmode as em
from model_fuzz.campaign import Campaign
from model_fuzz.check import check
from model_fuzz.compare import _compare_tensor
from model_fuzz.generator import MORE_ACTIVATIONS, generate
from model_fuzz.minimize import minimize
from model_fuzz.observe import TensorValue
from model_fuzz.runner import run
from model_fuzz.spec import Step

FAST_SEED = 20261127
FAST_MODELS = int(os.environ.get("EXECMODE_MODEL_FUZZ_FAST", "24"))
FAST_KERNEL_MODELS = 4       # of those, checked against the C kernels too (compiles)
SLOW_MODELS = int(os.environ.get("EXECMODE_MODEL_FUZZ_MODELS", "2000"))
SLOW_CHUNKS = 20
SLOW_SEED = seed_from_env()


def _fail(camp: Campaign, how_to_rerun: str) -> None:
    lines = [camp.summary(), "", f"reproduce: {how_to_rerun}",
             f"one model: python -m tests.model_fuzz --model {camp.failures[0].seed}", ""]
    for key, fail in camp.minimize_groups(budget_s=45, max_groups=3).items():
        lines += [f"--- {key[0]} / {key[1]} ---", fail.report(), ""]
    pytest.fail("\n".join(lines), pytrace=False)


@pytest.mark.slow  # 24 models trained eagerly and under jit, 4 of them compiled: ~10 s
def test_fast_tier():
    seed = seed_from_env(FAST_SEED)
    both = Campaign(seed, FAST_KERNEL_MODELS).run(stop_after=3)
    numpy_only = Campaign(seed, FAST_MODELS - FAST_KERNEL_MODELS, start=FAST_KERNEL_MODELS,
                          backends=("numpy",)).run(stop_after=3)
    for camp in (both, numpy_only):
        if camp.failures:
            _fail(camp, f"EXECMODE_FUZZ_SEED={seed} python -m pytest tests/model_fuzz "
                        "-k fast_tier")


@pytest.mark.model_fuzz
@pytest.mark.timeout(7200)
@pytest.mark.parametrize("chunk", range(SLOW_CHUNKS))
def test_slow_tier(chunk):
    per_chunk = -(-SLOW_MODELS // SLOW_CHUNKS)
    camp = Campaign(SLOW_SEED, per_chunk, start=chunk * per_chunk).run(stop_after=10)
    if camp.failures:
        _fail(camp, f"EXECMODE_FUZZ_SEED={SLOW_SEED} python -m pytest -m model_fuzz "
                    f"tests/model_fuzz -k 'slow_tier and {chunk}'")


# --- the fuzzer itself ------------------------------------------------------------------

def test_generation_is_deterministic():
    for i in range(20):
        assert generate(f"4-{i}").render() == generate(f"4-{i}").render()
    assert generate("4-1").render() != generate("4-2").render()


FEATURES = {
    "family:vector", "family:tokens", "family:conv1d", "family:conv2d",
    "container:sequential", "container:modulelist", "container:moduledict",
    "container:attrs", "optimizer:SGD", "optimizer:Adam", "optimizer:AdamW",
    "optimizer:RMSprop", "hyper:momentum", "hyper:nesterov", "hyper:weight_decay",
    "hyper:amsgrad", "hyper:centered", "param_groups", "clip:norm", "clip:value",
    "clip:scale", "zero:none_start", "zero:inplace_start", "zero:model_end", "zero:never",
    "jitted:step", "jitted:clip_step", "jitted:forward", "step:helper", "accumulation", "batch_sizes", "counter:instance",
    "counter:class", "counter:class_direct", "counter:dict", "counter:list",
    "event:train", "event:eval", "event:freeze", "event:unfreeze", "event:sched",
    "event:save", "event:load", "event:lr_edit", "event:counter_edit", "event:extreme",
    "layer:Linear", "layer:MLP", "layer:ReLU", "layer:GELU", "layer:Tanh", "layer:Sigmoid",
    "layer:LayerNorm", "layer:BatchNorm1d", "layer:BatchNorm2d", "layer:Dropout",
    "layer:Identity", "layer:Flatten", "layer:Embedding", "layer:MultiheadAttention",
    "layer:Conv1d", "layer:Conv2d", "layer:MaxPool1d", "layer:MaxPool2d",
    "layer:AvgPool1d", "layer:AvgPool2d", "layer:ConvTranspose1d", "layer:ConvTranspose2d",
    "layer:AdaptiveAvgPool1d", "layer:AdaptiveMaxPool1d", "layer:AdaptiveAvgPool2d",
    "layer:AdaptiveMaxPool2d", "layer:GroupNorm", "layer:RMSNorm", "layer:Dropout1d",
    "layer:Dropout2d", "layer:GLU", "layer:RNN", "layer:LSTM", "layer:GRU",
    "layer:TransformerEncoderLayer", "optimizer:Adagrad", "optimizer:Adadelta",
    *(f"layer:{a.split('(')[0].split('.')[-1]}" for a in MORE_ACTIVATIONS),
}


def test_every_feature_appears():
    seen = set()
    for i in range(2000):
        seen |= generate(f"5-{i}").tags
    assert FEATURES <= seen, FEATURES - seen


def test_every_generated_model_runs_eagerly():
    for i in range(30):
        spec = generate(f"6-{i}")
        observations, setup_error = run(spec)
        assert setup_error is None, spec.render()
        raised = [o["exception"] for o in observations if "exception" in o]
        # A step may fail only where eager must: every parameter frozen (backward of a
        # loss that requires no grad), or inputs pushed to the float32 limits.
        assert all(e.type == "BackwardError" and "freeze" in str(spec.steps) or
                   any("extreme" in x for s in spec.steps for x in s.events)
                   for e in raised), (raised, spec.render())
        assert len(observations) == len(spec.steps) or raised  # (a raise ends the run)


# Planted bugs: stand-ins for em.jit that each get one thing wrong the way graph mode once
# did; the checker must catch every one (run against the C-free backend, as the fast tier).

def stale_grads(f):
    """Issue 38, class 1: after each call every .grad holds the values it had after the
    first call (a replay that kept the first call's gradients). The .grad object staying
    the same is right (PyTorch accumulates into it in place): the values are the bug."""
    jitted, first = em.jit(f, backend="numpy"), {}

    def call(*args):
        out = jitted(*args)
        for p in f.__globals__["model"].parameters():
            if p._grad is not None:
                values = first.setdefault(id(p), np.array(p._grad._data, copy=True))
                if values.shape == p._grad._data.shape:
                    np.copyto(p._grad._data, values)
        return out
    return call


def python_once(f):
    """Issue 38, class 2: the Python counters the function writes change at the first
    call only (a replay skipped the writes)."""
    jitted, calls = em.jit(f, backend="numpy"), [0]

    def call(*args):
        g = f.__globals__
        saved = (dict(vars(g["counters"])), g["Counters"].total, copy.deepcopy(g["stats"]))
        out = jitted(*args)
        calls[0] += 1
        if calls[0] > 1:
            vars(g["counters"]).clear()
            vars(g["counters"]).update(saved[0])
            g["Counters"].total = saved[1]
            g["stats"].clear()
            g["stats"].update(saved[2])
        return out
    return call


def lost_update(f):
    """An assign dropped: the parameters keep their values through the call."""
    jitted = em.jit(f, backend="numpy")

    def call(*args):
        params = list(f.__globals__["model"].parameters())
        before = [np.array(p._data, copy=True) for p in params]
        out = jitted(*args)
        for p, b in zip(params, before):
            np.copyto(p._data, b)
        return out
    return call


def _accumulating_clip_model():
    spec = generate("9-3").replace(jitted="clip_step", zero="never", clip="norm",
                                   clip_arg=0.5, counters=("class", "class_direct", "dict",
                                                           "list"), scheduler=None)
    spec.steps = [Step(3, 2, ()) for _ in range(4)]
    return spec


@pytest.mark.parametrize("planted, check_name", [
    (stale_grads, "values"), (python_once, "python"), (lost_update, "values")])
def test_planted_bugs_are_caught(planted, check_name):
    found = check(_accumulating_clip_model(), backends=(planted,))
    assert any(m.check == check_name for m in found), found


def test_rounding_amplified_inside_a_step_is_not_a_mismatch():
    # Model 20261264-31: softplus's kernel is one ulp off NumPy's at one element, and a
    # batch norm of two nearly equal rows (their difference 0.004, near sqrt(eps)) makes
    # that 9e-5 of a weight's gradient. Perturbing the step's starting state alone moved
    # it less; the perturbed run's nudged transcendentals reproduce it.
    assert check(generate("20261264-31")) == []


def test_the_real_jit_agrees_on_the_planted_bugs_model():
    assert check(_accumulating_clip_model(), backends=("numpy",)) == []


@pytest.mark.slow  # the minimizer trains each candidate model eagerly and under jit
def test_the_minimizer_keeps_the_mismatch_and_shrinks():
    spec = _accumulating_clip_model()
    small = minimize(spec, {("python", "counters")}, budget_s=60, backends=(python_once,))
    assert any(m.key == ("python", "counters") for m in check(small, (python_once,)))
    assert len(small.render()) < len(spec.render())


def test_complex_values_with_nan_in_the_same_place_compare_equal():
    def misses(a, b):
        return _compare_tensor("x", TensorValue(a, False), TensorValue(b, False), None,
                               lambda check, text: [(check, text)])

    z = np.array([1 + 2j, complex(np.nan, 0.0)], np.complex64)
    assert misses(z, z.copy()) == []
    assert misses(z, np.array([1 + 3j, complex(np.nan, 0.0)], np.complex64))[0][0] == "values"
