"""A cold first call's compiles on a bounded pool (codegen/compiler_slots.py, units.py,
program_draft.py's draft): never more compiler processes at once than the thread count, the
same libraries and bits whatever the count, and every compiler failure reported as a
sequential build reports it, in the thread that asked."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import execmode as em
from execmode.codegen import fast_entry, threads, toolchain, units

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
pytestmark = pytest.mark.skipif(REAL_CC is None, reason="no C compiler on PATH")
KERNELS = 3


def _many(x):
    return [em.tanh(x * (1.0 + k / 100.0)) * 0.5 + float(k) for k in range(KERNELS)]


def _wrapper(tmp_path, refuse: str = "") -> str:
    """A CC that logs, to $COUNTING_CC_LOG, how many compiles run at the moment it starts
    one (the folder $COUNTING_CC_RUNNING holds one entry per compile in flight), and
    refuses any source holding ``refuse`` with a fixed message. One path for every
    script that refuses nothing: the compiler's path is part of each library's name."""
    check = (f'for a in "$@"; do case "$a" in *.c) if grep -q "{refuse}" "$a"; then '
             'echo "test: this unit is refused" >&2; exit 1; fi;; esac; done\n'
             if refuse else "")
    script = tmp_path / (f"refusing-cc-{abs(hash(refuse))}" if refuse else "counting-cc")
    script.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" --version "*) exec {REAL_CC} "$@";; esac\n'
        f"{check}"
        'mkdir "$COUNTING_CC_RUNNING/$$"\n'
        'ls "$COUNTING_CC_RUNNING" | wc -l >> "$COUNTING_CC_LOG"\n'
        f'{REAL_CC} "$@"; rc=$?\n'
        'rmdir "$COUNTING_CC_RUNNING/$$"\n'
        "exit $rc\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.fixture
def cold(tmp_path, monkeypatch):
    """A cold first call: an empty kernel cache, a CC of its own (so a new probe), the
    fast entry not yet built in this process; ``cold(n, ...)`` jits _many with ``n``
    threads (``one_unit_each``: each kernel a translation unit of its own) and returns
    (the jitted function, its outputs, its folder)."""
    previous, unit_weight = threads._State.override, units.UNIT_WEIGHT
    x = em.tensor(np.linspace(-2, 2, 64, dtype=np.float32))

    def run(count: int, name: str, refuse: str = "", fast_entry_on: bool = True,
            one_unit_each: bool = False):
        folder = tmp_path / name
        (folder / "running").mkdir(parents=True)
        monkeypatch.setenv("EXECMODE_CACHE_DIR", str(folder / "cache"))
        monkeypatch.setenv("COUNTING_CC_RUNNING", str(folder / "running"))
        monkeypatch.setenv("COUNTING_CC_LOG", str(folder / "at-once.log"))
        monkeypatch.setenv("CC", _wrapper(tmp_path, refuse))
        for cached in (toolchain._probe, toolchain._compiler, toolchain._takes):
            cached.cache_clear()  # a new cache folder: probed anew, as in a new process
        monkeypatch.setattr(fast_entry, "_loaded", {})
        monkeypatch.setenv("EXECMODE_FAST_ENTRY", "1" if fast_entry_on else "0")
        monkeypatch.setattr(units, "UNIT_WEIGHT", 1 if one_unit_each else unit_weight)
        em.set_num_threads(count)
        try:
            f = em.jit(_many)
            return f, f(x), folder
        finally:
            em.set_num_threads(previous)

    yield run
    for cached in (toolchain._probe, toolchain._compiler, toolchain._takes):
        cached.cache_clear()


def _most_at_once(folder) -> int:
    counts = (folder / "at-once.log").read_text().split()
    assert counts, "no compiler ran"
    return max(int(c) for c in counts)


# Slow tier: two cold first calls, each with its own probe; the second builds the fast
# entry's extension beside the kernels.
@pytest.mark.slow
def test_one_or_two_threads_compile_the_same_libraries_never_more_at_once(cold):
    one_f, one, one_dir = cold(1, "one", fast_entry_on=False, one_unit_each=True)
    two_f, two, two_dir = cold(2, "two", one_unit_each=True)
    assert _most_at_once(one_dir) == 1
    assert _most_at_once(two_dir) <= 2
    for a, b in zip(one, two):
        assert np.array_equal(a.numpy().view(np.int32), b.numpy().view(np.int32))

    def libraries(folder):
        return sorted(name for name in os.listdir(folder / "cache" / "kernels")
                      if name.endswith(".so"))

    # KERNELS units and the program, one library each, named by their sources alone.
    assert libraries(one_dir) == libraries(two_dir)
    assert len(libraries(one_dir)) == KERNELS + 1
    for f in (one_f, two_f):
        plan = f.concrete_functions[0].segments[0].compiled.plan
        assert plan.program is not None, plan.program_reason


def test_a_refused_program_unit_is_reported_as_a_sequential_build_reports_it(cold):
    reasons = []
    for count in (1, 2):
        f, out, _ = cold(count, f"refuse-program-{count}", refuse="void program_",
                         fast_entry_on=False)
        plan = f.concrete_functions[0].segments[0].compiled.plan
        assert plan.program is None
        reasons.append(plan.program_reason)
        x = np.linspace(-2, 2, 64, dtype=np.float32)
        for k, got in enumerate(out):  # the plan's own kernels still ran
            want = np.tanh(x * np.float32(1.0 + k / 100.0)) * np.float32(0.5) + k
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
    assert reasons[0] == reasons[1]
    assert reasons[0].startswith("the C compiler failed:"), reasons[0]
    assert "test: this unit is refused" in reasons[0]


def test_a_refused_kernel_unit_falls_back_with_the_compilers_message(cold):
    with pytest.warns(RuntimeWarning, match="(?s)the C compiler failed.*this unit is refused"):
        f, out, _ = cold(2, "refuse-kernels", refuse="em_tanh_f32(", fast_entry_on=False)
    plan = f.concrete_functions[0].segments[0].compiled.plan
    assert {s.backend for s in plan.steps} == {"interpreter"}
    assert plan.program is None and "this unit is refused" in plan.program_reason
    x = np.linspace(-2, 2, 64, dtype=np.float32)
    np.testing.assert_allclose(out[2].numpy(), np.tanh(x * np.float32(1.02)) * 0.5 + 2,
                               rtol=1e-5, atol=1e-5)


def test_a_refused_extension_built_early_is_reported_as_when_built_on_demand(cold):
    reasons = []
    for count in (1, 2):  # on demand after the kernels; early, beside them
        f, out, _ = cold(count, f"refuse-extension-{count}", refuse="PyInit__em_fast_entry")
        assert type(f._fast).__name__ != "FastEntry"  # the Python replay
        reasons.append(fast_entry.extension_status()["reason"])
    assert reasons[0] == reasons[1]
    assert "this unit is refused" in reasons[0], reasons[0]


def test_a_build_started_early_raises_in_the_thread_that_asks(monkeypatch):
    monkeypatch.setattr(fast_entry, "_loaded", {})
    attempts = []

    def failing_build():
        attempts.append(1)
        raise RuntimeError("the extension's build broke")

    monkeypatch.setattr(fast_entry, "_build", failing_build)
    fast_entry.start_build()
    with pytest.raises(RuntimeError, match="the extension's build broke"):
        fast_entry.load_extension()
    with pytest.raises(RuntimeError, match="the extension's build broke"):
        fast_entry.load_extension()  # asked again: built again, as after a failed call
    assert len(attempts) == 2


_FORK_SCRIPT = textwrap.dedent("""
    import os, sys, threading
    from concurrent.futures import Future
    from execmode.codegen import compiler_slots, fast_entry, threads

    threads.set_num_threads(1)
    held, release = threading.Event(), threading.Event()

    def compile_in_flight():
        with compiler_slots.compiler_slot():
            held.set()
            release.wait()

    worker = threading.Thread(target=compile_in_flight)
    worker.start()
    held.wait()
    fast_entry._loaded["cc"] = Future()  # a build started early, not finished
    pid = os.fork()
    if pid == 0:
        took = threading.Event()

        def compile_in_child():
            with compiler_slots.compiler_slot():
                took.set()

        threading.Thread(target=compile_in_child, daemon=True).start()
        pending = any(isinstance(v, Future) for v in fast_entry._loaded.values())
        os._exit(0 if took.wait(30) and not pending else 3)
    release.set()
    worker.join()
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))
""")


# Slow tier: a child process that forks.
@pytest.mark.slow
def test_a_child_forked_during_a_compile_can_compile():
    """The parent's slot and its early build have no thread in a forked child: the child
    takes its one slot and asks for the build anew instead of waiting forever."""
    proc = subprocess.run([sys.executable, "-c", _FORK_SCRIPT], capture_output=True,
                          text=True, timeout=120, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stdout + proc.stderr
