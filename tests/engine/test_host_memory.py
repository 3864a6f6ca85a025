"""host_memory.py: glibc's allocator keeps eager ops' arrays on warm heap pages."""

import os
import subprocess
import sys

import numpy as np
import pytest

import execmode as em
from execmode import host_memory


def _state_in_child(env_value):
    env = dict(os.environ)
    env.pop("EXECMODE_HOST_MALLOC", None)
    if env_value is not None:
        env["EXECMODE_HOST_MALLOC"] = env_value
    code = "import execmode.dispatch, execmode.host_memory as h; print(h.state)"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_the_engine_tunes_the_allocator_once_at_import():
    em.zeros(1)  # the engine loads (dispatch configures)
    if os.environ.get("EXECMODE_HOST_MALLOC") == "system":
        assert host_memory.state == "system"
    else:  # musl has no gnu_get_libc_version
        assert host_memory.state in ("tuned", "not glibc")
    assert host_memory.configure() == host_memory.state  # once per process


def test_system_leaves_the_allocator_alone():
    assert _state_in_child("system") == "system"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_minflt is Linux's")
def test_a_repeated_step_faults_in_no_fresh_pages():
    resource = pytest.importorskip("resource")
    em.zeros(1)
    if host_memory.state != "tuned":
        pytest.skip(host_memory.state)
    x = em.tensor(np.ones((256, 1024), np.float32), requires_grad=True)

    def step():
        y = em.exp(x * 2.0) + x  # 1 MiB arrays, above glibc's default 128 KiB threshold
        y.sum().backward()
        x.grad = None

    for _ in range(3):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        step()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before < 100
