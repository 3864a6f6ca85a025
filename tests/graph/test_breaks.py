"""Graph breaks: each trigger breaks once, with the right reason and the user's line."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import execmode as em
from execmode.jit_driver import cache_policy


def _line_of(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if marker in line:
            return start + k
    raise AssertionError(marker)


def _if_bool(x):
    y = x.sum()
    if y > 0:  # BREAK
        return x * 2
    return x - 1


def _item(x):
    s = (x * 2).sum().item()  # BREAK
    return x + s


def _float(x):
    return x * float(x.max())  # BREAK


def _int(x):
    n = int(x.sum())  # BREAK
    return x + n


def _iterate(x):
    total = em.zeros(x.shape[1:])
    for row in x * 2:  # BREAK
        total = total + row
    return total


def _numpy(x):
    a = (x + 1).numpy()  # BREAK
    return x * float(a.sum())


def _print(x):
    print(x * 3)  # BREAK
    return x + 1


def _mask(x):
    pos = x[x > 0]  # BREAK
    return pos.sum() + x.sum()


CASES = [
    (_if_bool, "bool()", "greater"),
    (_item, "item()", "sum"),
    (_float, "float()", "max"),
    (_int, "int()", "sum"),
    (_iterate, "iteration", "multiply"),
    (_numpy, "numpy()", "add"),
    (_print, "repr()", "multiply"),
    (_mask, "data-dependent output shape", "boolean_mask"),
]


@pytest.mark.parametrize("fn,reason,op", CASES, ids=[c[0].__name__ for c in CASES])
def test_each_trigger_breaks_once_with_reason_and_line(fn, reason, op, capsys):
    x = em.tensor([[1.0, -2.0, 3.0], [0.5, 0.25, -1.0]])
    expected = fn(x)
    report = em.explain(fn, x)
    assert report.break_count == 1, str(report)
    (brk,) = report.breaks
    assert reason in brk.reason
    assert brk.op == op
    assert brk.filename == __file__
    assert brk.lineno == _line_of(fn, "# BREAK")
    assert brk.function == fn.__name__
    assert report.graph_count == 2
    got = em.jit(fn)(x)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


def _two_ifs(x):
    if x.sum() > 0:
        x = x * 2
    else:
        x = x - 1
    if x.max() > 3:
        x = x / 2
    return x + 1


def test_two_data_dependent_ifs_give_three_segments():
    report = em.explain(_two_ifs, em.tensor([1.0, 2.0]))
    assert report.break_count == 2
    assert report.graph_count == 3


def test_segments_are_compiled_once_and_reused():
    f = em.jit(_two_ifs)
    inputs = [[1.0, 2.0], [3.0, 4.0], [0.5, 0.5], [-1.0, -2.0]]
    # Twice: calls 3 to 5 are the ones timed eagerly (cache_policy.EAGER_SAMPLES).
    for _ in range(2):
        for values in inputs:
            x = em.tensor(values)
            np.testing.assert_allclose(f(x).numpy(), _two_ifs(x).numpy())
    compiles = f.compile_count
    # Every path has now been seen: more calls on the same paths compile nothing new.
    for values in inputs:
        f(em.tensor(values))
    assert f.compile_count == compiles
    # Python re-runs under the tracer on every call of a broken fn but the eager samples.
    assert f.trace_count == 3 * len(inputs) - cache_policy.EAGER_SAMPLES


def test_fullgraph_raises_at_a_break_with_the_line():
    f = em.jit(_if_bool, fullgraph=True)
    with pytest.raises(em.GraphBreakError) as info:
        f(em.tensor([1.0, 2.0]))
    assert f"{__file__}:{_line_of(_if_bool, '# BREAK')}" in str(info.value)


def test_debug_print_prints_every_call_without_a_break(capsys):
    @em.jit
    def f(x):
        em.debug_print(x.sum(), "sum={}")
        return x + 1

    f(em.tensor([1.0, 2.0]))
    f(em.tensor([3.0, 4.0]))
    assert capsys.readouterr().out.split() == ["sum=3.0", "sum=7.0"]
    assert em.explain(f, em.tensor([1.0])).break_count == 0


def test_a_tensor_leaked_from_a_trace_says_so():
    leaked = []

    @em.jit
    def f(x):
        y = x * 2
        leaked.append(y)
        return x + 1

    f(em.tensor([1.0]))
    with pytest.raises(em.GraphBreakError, match="escaped the trace"):
        leaked[0].numpy()


def test_bake_mode_freezes_the_traced_branch_like_a_plain_tracer():
    plain = em.jit(_if_bool, on_break="bake")
    positive, negative = em.tensor([1.0, 2.0]), em.tensor([-1.0, -2.0])
    np.testing.assert_allclose(plain(positive).numpy(), [2.0, 4.0])
    # The graph holds only the branch the trace took: wrong, silently, for this input.
    np.testing.assert_allclose(plain(negative).numpy(), [-2.0, -4.0])
    np.testing.assert_allclose(_if_bool(negative).numpy(), [-2.0, -3.0])
    report = em.explain(plain, positive)
    assert report.break_count == 0 and report.graph_count == 1
    (baked,) = report.baked
    assert baked.lineno == _line_of(_if_bool, "# BREAK") and "baked" in baked.reason


def test_on_break_must_be_known():
    with pytest.raises(em.ArgumentError, match="on_break"):
        em.jit(_if_bool, on_break="ignore")


# Slow tier: execmode explain in a subprocess.
@pytest.mark.slow
def test_explain_command_reports_breaks_and_retraces(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "s.py"
    script.write_text(
        "import sys\n"
        "import execmode as em\n"
        "@em.jit\n"
        "def f(x):\n"
        "    if x.sum() > 0:\n"
        "        return x * 2\n"
        "    return x\n"
        "f(em.ones(2))\n"
        "f(em.ones(3))\n"
        "sys.exit(int(sys.argv[1]))\n")
    done = subprocess.run([sys.executable, "-m", "execmode", "explain", str(script), "5"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 5  # the script's own exit status
    assert "break: bool() needs a concrete value (op greater)" in done.stdout
    assert f"at {script}:5 in f" in done.stdout
    assert "retrace (x: f32[3]): x: shape (2,) -> (3,)" in done.stdout
