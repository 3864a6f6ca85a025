"""The kernel clock's two sources (codegen/clock_mode.py): the time-stamp counter's ticks,
turned into ns, where it runs at a constant rate, and clock_gettime's ns elsewhere (or
with EXECMODE_KERNEL_CLOCK=ns). Either way the compiled steps' sums are ns of wall time:
a run's sum is within the time around it, and its steps add up to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from execmode.codegen.toolchain import NoCompiler, get_toolchain

_SCRIPT = r"""
import json, time
import execmode as em
from execmode import kernel_clock
from execmode.codegen import clock_mode

def chain(x):
    for _ in range(6):
        x = em.exp(x - x.max())
    return x

f, x = em.jit(chain), em.ones(65536)
f(x); f(x)
plan = f.concrete_functions[-1].segments[0].compiled.plan
listener = object()
kernel_clock.want(listener)
before = plan.clock.run_totals()
t0 = time.perf_counter_ns()
for _ in range(50):
    f(x)
wall = time.perf_counter_ns() - t0
after = plan.clock.run_totals()
steps = sum(plan.clock.step_totals(i)[1] for i in range(plan.clock.n_steps))
kernel_clock.release(listener)
print(json.dumps({"ticks": clock_mode.uses_ticks(), "runs": after[0] - before[0],
                  "clock": after[1] - before[1], "wall": wall, "steps": steps,
                  "all_runs": after[1], "program": plan.program is not None}))
"""


@pytest.mark.parametrize("mode", ["", "ns"])
def test_compiled_steps_sum_ns_of_wall_time(mode):
    try:
        get_toolchain()
    except NoCompiler:
        pytest.skip("no C compiler here: no compiled steps to time")
    env = dict(os.environ, EXECMODE_KERNEL_CLOCK=mode)
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    if mode == "ns":
        assert not got["ticks"]
    assert got["program"] and got["runs"] == 50
    # The runs' sum lies within the time around them, and holds most of it (six steps
    # over 65,536 elements each, little Python between them).
    assert 0.5 * got["wall"] < got["clock"] <= got["wall"]
    # The steps add up to the runs (each step's read is the next one's start).
    assert abs(got["steps"] - got["all_runs"]) <= 0.01 * got["all_runs"]


def test_a_tick_is_measured_against_the_wall_clock():
    from execmode.codegen import clock_mode

    if not clock_mode.uses_ticks():
        pytest.skip("this machine's steps read clock_gettime (no constant-rate counter, "
                    "or no C compiler)")
    import time

    rate = clock_mode.ns_per_tick()
    read = clock_mode._reader()
    t0, c0 = time.perf_counter_ns(), read()
    time.sleep(0.05)
    c1, t1 = read(), time.perf_counter_ns()
    assert rate == pytest.approx((t1 - t0) / (c1 - c0), rel=0.01)
