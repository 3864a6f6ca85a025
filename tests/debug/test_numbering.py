"""One numbering of ops and kernel runs: the session's, in the store, the agent, `execmode
run`'s stop message and every export (docs/session-store.md, "How ops and kernels are
numbered"). The TUI's side is tests/tui/test_numbering.py.

The numbers went wrong where dispatch's process-wide op counter leaked through: the
profiler's calibration runs thousands of ops before the script, so the Tensor view called
op 11 "#8422". EXECMODE_RECALIBRATE=1 makes the agent calibrate again here, so these tests
run with the counter far from 0, as a first run on a machine does.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from execmode.profilers import open_session
from execmode.profilers.recorder import Recorder
from exported_numbers import numbers_in_exports, numbers_in_store

import execmode as em
from execmode import instrument
from execmode.debug.numbering import RunNumbers
from execmode.debug.value_ring import ValueRing


class _Watching:
    """A listener: while one listens, every op takes a number from dispatch's counter."""

    def on_op(self, event, output):
        pass


def _ops_recorded(path, ops) -> list[tuple[int, str]]:
    a = em.ones(4)
    with Recorder(path, calibrate=False):
        for name in ops:
            _ = em.exp(a) if name == "exp" else a + a
    return sorted(numbers_in_store(path)["ops"].items())


@pytest.mark.parametrize("ring", ["1", "0"])  # the op ring (C) and the Python rows
def test_every_session_numbers_its_ops_from_one_whatever_ran_before(tmp_path, monkeypatch,
                                                                    ring):
    monkeypatch.setenv("EXECMODE_NATIVE_RECORDER", ring)
    a = em.ones(4)
    with instrument.listening(_Watching()):
        for _ in range(500):  # ops seen before the recording (calibration's are thousands)
            _ = a + a
    assert instrument.upcoming_seq() >= 500
    first = _ops_recorded(tmp_path / "first.emsession", ["add", "exp", "add"])
    again = _ops_recorded(tmp_path / "again.emsession", ["exp", "add"])
    assert first == [(1, "add"), (2, "exp"), (3, "add")]
    assert again == [(1, "exp"), (2, "add")]


def test_a_session_inside_another_numbers_its_own_ops(tmp_path):
    a = em.ones(4)
    with Recorder(tmp_path / "outer.emsession", calibrate=False):
        _ = a + a
        with Recorder(tmp_path / "inner.emsession", calibrate=False):
            _ = em.exp(a), a * a
        _ = a - a
    assert numbers_in_store(tmp_path / "outer.emsession")["ops"] == \
        {1: "add", 2: "exp", 3: "multiply", 4: "subtract"}
    assert numbers_in_store(tmp_path / "inner.emsession")["ops"] == {1: "exp", 2: "multiply"}


def test_the_agent_numbers_ops_and_kernel_runs_as_the_store_does():
    numbers = RunNumbers(seq_base=8411)   # the recorder started with the counter at 8411
    assert (numbers.op_paused_at("before"), numbers.op_paused_at("break")) == (1, 0)
    assert numbers.op_ran(8412) == 1 and numbers.op_ran(8422) == 11
    assert numbers.op_paused_at("before") == 12 and numbers.op_paused_at("after") == 11
    assert numbers.op_paused_at("exception") == 12  # the op that raised never got a row
    assert (numbers.kernel_begins(), numbers.kernel_begins()) == (1, 2)
    alone = RunNumbers()                  # no recorder (execmode run --no-session)
    assert alone.op_ran(5000) == 1 and alone.op_ran(5001) == 2


def test_a_number_the_ring_has_not_seen_yet_says_so():
    ring = ValueRing(ops=4)
    ring.keep(11, em.ones(2), ())
    with pytest.raises(ValueError, match=r"op 12 has not run yet \(the newest op kept is op 11"):
        ring.value(12)


def _run(folder, *args) -> tuple[str, object]:
    folder.mkdir()
    session = folder / "run.emsession"
    env = dict(os.environ, EXECMODE_RECALIBRATE="1")
    result = subprocess.run(
        [sys.executable, "-m", "execmode", "run", "--session", str(session), *args],
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL, env=env,
        cwd=folder)
    assert "[execmode] breakpoint" in result.stderr, result.stderr
    with open_session(session) as s:  # it calibrated: dispatch's counter was far from 0
        assert s.meta["calibration"].get("ops", 0) > 100, s.meta["calibration"]
    return result.stderr, session


@pytest.mark.slow  # two `execmode run` child processes, each calibrating first
def test_execmode_run_names_the_op_it_stopped_at_by_its_number_everywhere(scripts, tmp_path):
    # steps.py: tensor (op "constant"), multiply, exp, sum. op:exp stops before exp: op 3.
    stderr, session = _run(tmp_path / "before", "--break", "op:exp", scripts("steps.py"))
    said = re.search(r"op #(\d+): exp", stderr)
    assert said, stderr
    number = int(said.group(1))
    stored = numbers_in_store(session)
    assert number == 3 and stored["ops"] == {1: "constant", 2: "multiply"}  # exp not yet
    # After the op: `--break "op:exp if max > 0"` stops once exp ran, with its own number.
    stderr, session = _run(tmp_path / "after", "--break", "op:exp if max > 0",
                           scripts("steps.py"))
    number = int(re.search(r"op #(\d+): exp", stderr).group(1))
    stored = numbers_in_store(session)
    assert number == 3 and stored["ops"][3] == "exp"
    for name, found in numbers_in_exports(session, tmp_path / "after").items():
        assert found["ops"] == stored["ops"], name


@pytest.mark.slow  # an `execmode run` child process that calibrates and compiles
def test_execmode_run_names_the_kernel_run_it_stopped_after_by_its_number(scripts, tmp_path):
    # nan_jit.py: the fused kernel making log(0) = -inf in the first call of step.
    stderr, session = _run(tmp_path / "run", "--break", "inf", scripts("nan_jit.py"))
    said = re.search(r"kernel run #(\d+): (\w+) of graph (\S+) ", stderr)
    assert said, stderr
    number, kernel = int(said.group(1)), said.group(2)
    stored = numbers_in_store(session)
    assert stored["kernels"].get(number) == kernel, (number, kernel, stored["kernels"])
    for name, found in numbers_in_exports(session, tmp_path / "run").items():
        assert found["kernels"] == stored["kernels"], name
        assert found["ops"] == stored["ops"], name
