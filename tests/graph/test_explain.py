"""em.explain traces without taking a training step, and says when a graph break made it
run; `execmode explain --on-break` gives every em.jit of a script the API's on_break."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import execmode as em


def _model():
    w = em.nn.Parameter(em.ones(3))
    return w, em.optim.SGD([w], lr=0.1)


def test_explaining_a_training_step_takes_no_step():
    w, opt = _model()

    def step(x):
        loss = (w * x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    report = em.explain(step, em.ones(3))
    assert report.graph_count == 1 and not report.ran
    np.testing.assert_array_equal(w.numpy(), [1.0, 1.0, 1.0])
    assert w.grad is None
    assert "ran: no" in str(report) and report.to_json()["ran"] is False


def test_a_graph_break_runs_the_step_once_and_leaves_eagers_state():
    def make_step(w, opt):
        def step(x):
            loss = (w * x).sum()
            if loss.item() > 0:  # a break: from here the function runs
                loss = loss * 2
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        return step

    w, opt = _model()
    report = em.explain(make_step(w, opt), em.ones(3))
    w_eager, opt_eager = _model()
    make_step(w_eager, opt_eager)(em.ones(3))
    assert report.break_count == 1 and report.ran
    assert "ran: yes" in str(report)
    np.testing.assert_allclose(w.numpy(), w_eager.numpy())
    np.testing.assert_allclose(w.grad.numpy(), w_eager.grad.numpy())


SCRIPT = """\
import execmode as em

@em.jit
def f(x):
    if x.sum() > 0:
        return x * 2
    return x - 1

print(f(em.ones(2)).numpy())
"""


def _explain(tmp_path, *options):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    return subprocess.run([sys.executable, "-m", "execmode", "explain", *options, str(script)],
                          capture_output=True, text=True, timeout=120)


# Slow tier: execmode explain in a subprocess.
@pytest.mark.slow
def test_the_command_bakes_like_the_api(tmp_path):
    done = _explain(tmp_path, "--on-break", "bake")
    assert done.returncode == 0, done.stderr
    assert "1 graph(s), 0 break(s)" in done.stdout
    assert "baked (no break, value frozen): bool() needs a concrete value" in done.stdout
    split = _explain(tmp_path)
    assert "1 break(s)" in split.stdout and "baked" not in split.stdout


# Slow tier: execmode explain in a subprocess.
@pytest.mark.slow
def test_an_unknown_on_break_is_a_usage_error(tmp_path):
    done = _explain(tmp_path, "--on-break", "ignore")
    assert done.returncode == 2
    assert "argument --on-break: invalid choice: 'ignore'" in done.stderr
