"""py-spy: parsing its output, sorting samples into categories, and running it for real
(skipped with the reason where it cannot attach), including where it is refused."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

import pytest
from execmode.profilers.pyspy import (
    Sampler,
    diagnose,
    find_pyspy,
    parse_raw,
    parse_speedscope,
)
from execmode.profilers.session import open_session
from execmode.profilers.stacks import Classifier, parse_frame
from profiler_fixtures import SCRIPTS, run_python

import execmode

PKG = os.path.dirname(os.path.abspath(execmode.__file__))
REPO = os.path.dirname(PKG)
USER = "/home/me/train.py"

RAW = f"""\
thread (101): MainThread;<module> ({USER}:10);step ({USER}:4) 7
thread (101): MainThread;<module> ({USER}:10);step ({USER}:4);run_eager ({PKG}/dispatch.py:90) 3
thread (101): MainThread;<module> ({USER}:10);step ({USER}:4);run_eager ({PKG}/dispatch.py:90) 2
thread (102): execmode-session-writer;run ({REPO}/profilers/writer.py:170) 1
"""


def test_parse_raw_folds_identical_stacks():
    stacks = parse_raw(RAW)
    assert [s.count for s in stacks] == [7, 5, 1]
    assert stacks[1].thread == "thread (101): MainThread"
    assert stacks[1].frames[-1] == f"run_eager ({PKG}/dispatch.py:90)"
    with pytest.raises(ValueError, match="line 1"):
        parse_raw("no count here\n")


def test_parse_speedscope():
    doc = {"$schema": "https://www.speedscope.app/file-format-schema.json",
           "shared": {"frames": [{"name": "<module>", "file": USER, "line": 10},
                                 {"name": "exec_blas", "file": "/lib/libblas.so", "line": None}]},
           "profiles": [{"type": "sampled", "name": "Thread 1", "unit": "seconds",
                         "startValue": 0, "endValue": 0.03, "samples": [[0], [0, 1], [0, 1]],
                         "weights": [0.01, 0.01, 0.01]}]}
    stacks = parse_speedscope(json.dumps(doc))
    assert sorted((s.frames, s.count) for s in stacks) == [
        ((f"<module> ({USER}:10)",), 1),
        ((f"<module> ({USER}:10)", "exec_blas (/lib/libblas.so)"), 2)]


def test_parse_frame():
    assert parse_frame(f"step ({USER}:4)") == ("step", USER, 4)
    assert parse_frame("exec_blas (/lib/libblas.so)") == ("exec_blas", "/lib/libblas.so", None)
    assert parse_frame("weird") == ("weird", "", None)


@pytest.mark.parametrize("leaf, category", [
    ([], "user"),
    ([f"run_eager ({PKG}/dispatch.py:90)"], "execmode"),
    ([f"run_eager ({PKG}/dispatch.py:90)", f"<lambda> ({PKG}/ops/elementwise.py:12)",
      "dgemm (/usr/lib/libopenblas.so)"], "kernels"),
    ([f"__call__ ({PKG}/jit_driver/jit.py:300)", f"trace ({PKG}/graph/trace.py:50)"], "tracing"),
    ([f"run ({PKG}/jit_driver/jit.py:300)", f"fold_constants ({PKG}/passes/fold.py:5)"], "tracing"),
    ([f"__call__ ({PKG}/jit_driver/jit.py:300)", f"compile_graph ({PKG}/codegen/c_runtime.py:80)"],
     "compiling"),
    ([f"render ({PKG}/codegen/render_c.py:80)"], "compiling"),
    ([f"__call__ ({PKG}/codegen/c_runtime.py:200)"], "kernels"),
    ([f"run ({PKG}/plan.py:120)"], "kernels"),
    ([f"__call__ ({PKG}/jit_driver/fastcall.py:90)"], "kernels"),
    (["replay (<execmode replay step#0>:3)"], "kernels"),
    (["_find_and_load (<frozen importlib._bootstrap>:1176)", f"<module> ({PKG}/ops/x.py:1)"],
     "other"),
])
def test_categories(leaf, category):
    frames = [f"<module> ({USER}:10)", f"step ({USER}:4)", *leaf]
    assert Classifier().category(frames) == category


def test_samples_outside_user_and_execmode_are_other():
    c = Classifier()
    assert c.category([f"run ({REPO}/profilers/writer.py:170)"]) == "execmode"
    assert c.category(["poll (/lib/libc.so)"]) == "other"
    idle = f"Event.wait ({os.path.dirname(os.__file__)}/threading.py:629)"
    assert c.category([f"run ({REPO}/profilers/writer.py:170)", idle]) == "other"


def test_permission_denied_is_explained():
    reason, advice = diagnose(["Permission Denied: Try running again with elevated "
                               "permissions by going 'sudo env \"PATH=$PATH\" !!'"])
    assert "permission denied" in reason
    assert advice  # what to do: root, CAP_SYS_PTRACE or ptrace_scope, whichever applies


def test_a_refusal_after_sampling_began_is_explained(tmp_path, monkeypatch):
    # What py-spy 0.4 printed on CI when ptrace was refused: it announces sampling, then
    # fails to attach and writes no file. The cause is the refusal, not the missing file.
    fake, said = tmp_path / "py-spy", tmp_path / "said"
    fake.write_text("#!/bin/sh\necho 'Sampling process 100 times a second. Press Control-C'\n"
                    "echo 'Permission Denied: Try running again with elevated permissions'\n"
                    f"touch {said}\n"
                    "exec sleep 30\n")  # until stop()'s Ctrl-C
    fake.chmod(0o755)
    monkeypatch.setenv("EXECMODE_PYSPY", str(fake))
    sampler = Sampler()
    assert sampler.start().status == "sampling"
    # As on CI, the refusal is printed before the stop; under load the stand-in could be
    # interrupted before its second line (a flake seen once): wait until it said both.
    deadline = time.monotonic() + 30
    while not said.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    status, stacks = sampler.stop()
    assert stacks == []
    assert status.status == "unavailable" and "permission denied" in status.reason
    assert status.advice


def test_a_missing_binary_is_reported(monkeypatch):
    monkeypatch.setenv("EXECMODE_PYSPY", "/nonexistent/py-spy")
    status = Sampler().start()
    assert status.status == "unavailable"
    assert "not found" in status.reason and "pip install py-spy" in status.advice


def _pyspy_can_attach() -> str | None:
    """None when py-spy works here, else why not (the skip reason)."""
    if find_pyspy() is None:
        return "py-spy is not installed"
    sampler = Sampler(rate=50)
    status = sampler.start()
    why_not = None if status.status == "sampling" else status.message
    sampler.stop()
    return why_not


# Slow tier: py-spy samples a real run.
@pytest.mark.slow
def test_real_samples_are_folded_into_the_session(tmp_path):
    why_not = _pyspy_can_attach()
    if why_not:
        pytest.skip(f"py-spy cannot attach here: {why_not}")
    path = tmp_path / "sampled.emsession"
    result = run_python("-m", "execmode.profilers.runner", "--session", path, "--pyspy",
                        "--rate", "200", "--", SCRIPTS / "busy.py")
    assert result.returncode == 0, result.stderr
    with open_session(path) as s:
        pyspy = s.meta["pyspy"]
        assert pyspy["status"] == "ok", pyspy
        totals = s.category_totals()
        assert sum(totals.values()) == pyspy["samples"] > 20
        # busy.py spends its time in execmode's dispatch and in NumPy under execmode/ops.
        assert totals.get("execmode", 0) + totals.get("kernels", 0) > 0, totals
        assert all(k in ("user", "execmode", "tracing", "compiling", "kernels", "other")
                   for k in totals)


# Slow tier: py-spy refused on a real run.
@pytest.mark.slow
def test_refused_py_spy_leaves_the_run_going(tmp_path):
    # A real refusal: py-spy run as user "nobody" against a process owned by root.
    setpriv = shutil.which("setpriv")
    real = find_pyspy()
    if os.geteuid() != 0 or setpriv is None or real is None:
        pytest.skip("needs root, setpriv and py-spy to run py-spy as an unprivileged user")
    folder = Path(tempfile.mkdtemp(prefix="execmode-pyspy-test-"))
    try:
        folder.chmod(0o755)
        binary = folder / "py-spy"
        shutil.copy(real, binary)
        binary.chmod(0o755)
        wrapper = folder / "py-spy-as-nobody"
        wrapper.write_text(f"#!/bin/sh\nexec {setpriv} --reuid=65534 --regid=65534 "
                           f"--clear-groups {binary} \"$@\"\n")
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC | stat.S_IXOTH | stat.S_IXGRP)
        path = tmp_path / "refused.emsession"
        result = run_python("-m", "execmode.profilers.runner", "--session", path, "--pyspy",
                            "--no-calibrate", "--", SCRIPTS / "tiny_mlp.py", "1",
                            env={"EXECMODE_PYSPY": str(wrapper)})
    finally:
        shutil.rmtree(folder)
    assert result.returncode == 0, result.stderr
    assert "step 0 loss" in result.stdout  # the script ran to its end
    assert "permission denied" in result.stderr.lower()
    with open_session(path) as s:
        pyspy = s.meta["pyspy"]
        assert pyspy["status"] == "unavailable" and "permission denied" in pyspy["reason"]
        assert pyspy["advice"]
        assert s.count("op_events") > 0
