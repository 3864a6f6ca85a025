"""The path matrix (execmode/jit_driver/paths.py): a switch forces each path of an op, the
suite pins them per test (tests/conftest.py), and every path answers alike, under
``np.seterr(all="raise")`` too."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import execmode as em
from execmode import dispatch
from execmode._tensor import Tensor
from execmode.codegen import eager_operators
from execmode.jit_driver import paths

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPLAY_KINDS = {"general": "NoneType", "generated": "function", "native": "FastEntry"}


def _needs_c():
    if not paths.eager_c_available():
        pytest.skip("the C extensions cannot be built here")


def test_pinned_forces_each_eager_path_and_puts_it_back():
    before = paths.current()
    x = em.tensor([1.0, 2.0])
    with paths.pinned(eager="python") as now:
        assert now["eager"] == "python" and now["eager_pinned"]
        for _ in range(dispatch.HOT_CALLS + 10):  # pinned: the hot count does not switch
            x + x
        assert paths.current()["eager"] == "python"
    assert paths.current() == before
    _needs_c()
    with paths.pinned(eager="c") as now:
        assert now["eager"] == "c"
        assert type(Tensor.__add__).__name__ == "Operator"
        assert dispatch.UNARY_FUNCTIONS["exp"][0] is not None
        assert (x * x).tolist() == [1.0, 4.0]
    assert paths.current() == before


def test_auto_counts_from_zero_again():
    with paths.pinned(eager="auto") as now:
        assert now["eager"] == "python" and not now["eager_pinned"]
        assert dispatch._until_hot == dispatch.HOT_CALLS


def test_a_test_that_makes_the_operators_hot_leaves_no_trace():
    # The next test still starts on the default paths (tests/conftest.py).
    _needs_c()
    paths.set_eager("c")
    paths.set_replay("general")


def test_each_test_starts_on_the_default_paths():
    # tests/conftest.py: what an earlier test pinned or counted is gone.
    defaults = paths.defaults()
    now = paths.current()
    assert now["replay"] == defaults["replay"]
    if defaults["eager"] == "auto":
        assert now["eager"] == "python" and dispatch._until_hot == dispatch.HOT_CALLS
    else:
        assert now["eager"] == defaults["eager"] or not paths.eager_c_available()


@pytest.mark.parametrize("tier", sorted(REPLAY_KINDS))
def test_pinned_forces_each_replay_tier(tier):
    _needs_c()
    f = em.jit(lambda a, b: a * b + 1.0)
    x = em.tensor([1.0, 2.0, 3.0])
    expected = f(x, x).tolist()
    with paths.pinned(replay=tier):
        assert f(x, x).tolist() == expected  # (a call rebuilds the replay for the tier)
        assert type(f._fast).__name__ == REPLAY_KINDS[tier]
        assert f(x, x).tolist() == expected
        g = em.jit(lambda a, b: a * b + 1.0)
        g(x, x)
        assert type(g._fast).__name__ == REPLAY_KINDS[tier]   # new functions too
        assert g(x, x).tolist() == expected
    f(x, x)  # back on the default tier (auto: the C entry)
    assert type(f._fast).__name__ == REPLAY_KINDS.get(paths.defaults()["replay"], "FastEntry")


def test_the_recorder_path_is_pinned_through_its_variable(monkeypatch):
    monkeypatch.delenv("EXECMODE_NATIVE_RECORDER", raising=False)
    with paths.pinned(recorder="python") as now:
        assert now["recorder"] == "python"
        assert os.environ["EXECMODE_NATIVE_RECORDER"] == "0"
        with paths.pinned(recorder="c"):
            assert os.environ["EXECMODE_NATIVE_RECORDER"] == "1"
        assert os.environ["EXECMODE_NATIVE_RECORDER"] == "0"
    assert "EXECMODE_NATIVE_RECORDER" not in os.environ


@pytest.mark.parametrize("what", [dict(eager="fast"), dict(replay="c"), dict(recorder="x")])
def test_an_unknown_path_is_refused_by_name(what):
    before = paths.current()
    with pytest.raises(ValueError, match="must be one of"):
        with paths.pinned(**what):
            pass
    assert paths.current() == before


@pytest.mark.slow  # child processes
def test_the_environment_forces_the_paths_from_import():
    script = (
        "import execmode as em\n"
        "from execmode.jit_driver import paths\n"
        "x = em.tensor([1.0, 2.0])\n"
        "for _ in range(5000): x + x\n"
        "f = em.jit(lambda a: a * 2.0)\n"
        "f(x); f(x)\n"
        "print(paths.current()['eager'], type(f._fast).__name__)\n")
    cases = {("c", "generated"): "c function", ("python", "general"): "python NoneType",
             ("fast", "auto"): "python FastEntry"}   # a bad value warns and means auto
    for (eager, replay), expected in cases.items():
        if not paths.eager_c_available() and "python" not in expected.split()[0]:
            continue
        env = dict(os.environ, EXECMODE_EAGER_PATH=eager, EXECMODE_JIT_REPLAY=replay)
        if eager == "fast":
            expected = f"{'c' if paths.eager_c_available() else 'python'} FastEntry"
        done = subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split("\n")[0] == expected, (eager, replay, done.stdout)
        if eager == "fast":
            assert "EXECMODE_EAGER_PATH='fast' is not one of" in done.stderr


# --- np.seterr: every path alike -----------------------------------------------------------

@pytest.mark.parametrize("tier", sorted(REPLAY_KINDS))
def test_seterr_raise_gives_inf_and_nan_on_every_path(eager_path, tier):
    # The engine returns Inf/NaN quietly (as PyTorch does): the C operators and kernels
    # never raise, so the Python ones and NumPy plan steps do not either.
    x, z = em.tensor([1.0, 0.0, -1.0]), em.tensor([0.0, 0.0, 0.0])
    expected = [np.inf, np.nan, -np.inf]
    with paths.pinned(replay=tier), np.errstate(all="raise"):
        assert np.array_equal((x / z).numpy(), expected, equal_nan=True)
        assert np.array_equal((1.0 / z).numpy(), [np.inf] * 3)
        assert np.array_equal(em.log(z).numpy(), [-np.inf] * 3)
        assert np.array_equal(em.divide(x, z).numpy(), expected, equal_nan=True)
        single = em.jit(lambda a, b: a / b)
        fused = em.jit(lambda a, b: em.log(em.abs(a / b)) * 2.0)
        for _ in range(3):  # the trace, then the replay tier's calls
            assert np.array_equal(single(x, z).numpy(), expected, equal_nan=True)
            assert np.array_equal(fused(x, z).numpy(), [np.inf, np.nan, np.inf],
                                  equal_nan=True)
    if eager_path == "c" or tier == "general":
        assert eager_operators.current_path(Tensor) == eager_path


def test_seterr_raise_still_lets_real_errors_through(eager_path):
    with np.errstate(all="raise"), pytest.raises(em.ShapeError, match="divide"):
        em.tensor([1.0, 2.0]) / em.tensor([1.0, 2.0, 3.0])


# --- the recorder's op path ----------------------------------------------------------------

def test_both_recorder_paths_record_the_same_rows(tmp_path, eager_path):
    rows = {}
    for recorder in ("python", "c"):
        x = em.tensor([1.0, 2.0])
        with paths.pinned(recorder=recorder), \
                em.profile(tmp_path / f"{recorder}.emsession", calibrate=False) as prof:
            y = x * 2.0 + x
            em.exp(y)
        path = prof.recorder.op_path
        if path.startswith("python (no op ring"):
            pytest.skip(f"the op ring cannot be built here: {path}")
        assert path.startswith("python") == (recorder == "python"), path
        rows[recorder] = [(o.op, o.line, o.file) for o in prof.session.ops()]
    assert rows["python"] == rows["c"] and [r[0] for r in rows["c"]] == ["multiply", "add", "exp"]
