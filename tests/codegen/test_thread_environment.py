"""The thread count's environment, read by fresh processes as a user's script reads it:
EXECMODE_NUM_THREADS, OMP_NUM_THREADS and OpenBLAS's own variables (OpenBLAS reads them
when NumPy loads it, so only a new process shows what they do), and kernel libraries
loaded before and after a set_num_threads (threads.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from execmode.codegen import blas, blas_workers, threads
from execmode.codegen.toolchain import NoCompiler, get_toolchain

# Slow tier: fresh processes reading the thread variables (OpenBLAS reads its own when it loads).
pytestmark = pytest.mark.slow

THREAD_VARIABLES = (threads.ENV, threads.OPENMP_ENV, *threads.BLAS_ENVS, blas_workers.ENV,
                    "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
TEAM_ON = {blas_workers.ENV: "1"}

# Prints thread_settings() after each action named on the command line: "settings",
# "set:N", "set:none" (set_num_threads), "kernel" (a jitted kernel's library loads).
_SETTINGS_SCRIPT = textwrap.dedent("""
    import json, sys
    from execmode.codegen import threads
    for action in sys.argv[1:]:
        if action.startswith("set:"):
            value = action[4:]
            threads.set_num_threads(None if value == "none" else int(value))
        elif action == "kernel":
            import execmode as em
            em.jit(lambda x: x * 2.0 + 1.0)(em.ones(8))
        print(json.dumps(threads.thread_settings()))
""")


def _child(script: str, args=(), tmp_path=None, **variables) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env.update(variables)
    if tmp_path is not None:
        env["EXECMODE_CACHE_DIR"] = str(tmp_path)
    return subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True,
                          text=True, timeout=180)


def _settings(*actions, **variables) -> list[dict]:
    done = _child(_SETTINGS_SCRIPT, actions or ("settings",), **variables)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def openblas():
    if blas.thread_control() is None:
        pytest.skip(f"NumPy's BLAS has no thread control here: {blas.thread_control_reason()}")


def _cpus() -> int:
    return threads.usable_cpus()


def test_nothing_set_gives_the_default_to_kernels_and_blas(openblas):
    read, synced = _settings("settings", "set:none")
    default = min(_cpus(), threads.physical_cores())
    # Before the engine needs threads the BLAS keeps the count OpenBLAS chose itself.
    assert read["threads"] == default and read["blas_source"] == threads.BLAS_NOT_YET
    assert (synced["threads"], synced["blas_threads"]) == (default, default)
    assert synced["source"] == f"default: {_cpus()} usable CPUs, " \
                               f"{threads.physical_cores()} physical cores"
    assert synced["blas_source"] == "execmode's count"


def test_execmode_num_threads_sets_kernels_and_blas(openblas):
    (s,) = _settings("set:none", EXECMODE_NUM_THREADS="1")
    assert (s["threads"], s["source"], s["blas_threads"]) == (1, "EXECMODE_NUM_THREADS", 1)


def test_the_first_kernel_library_gives_the_blas_its_count(openblas):
    """The engine's own action, not a reading: OpenBLAS's count stands until then."""
    try:
        if not get_toolchain().openmp:
            pytest.skip("the compiler has no OpenMP: kernel libraries do not set counts")
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")
    read, kernel = _settings("settings", "kernel", EXECMODE_NUM_THREADS="1")
    assert read["blas_source"] == threads.BLAS_NOT_YET
    assert (kernel["blas_threads"], kernel["blas_source"]) == (1, "execmode's count")


def test_omp_num_threads_sets_kernels_and_openblas_reads_it_itself(openblas):
    (s,) = _settings(OMP_NUM_THREADS="1")
    assert (s["threads"], s["source"], s["blas_threads"]) == (1, "OMP_NUM_THREADS", 1)
    assert s["blas_source"].startswith("from OMP_NUM_THREADS=1 as OpenBLAS read it")
    # A nested list: the first number (OpenBLAS takes it too, at most its CPU count).
    (s,) = _settings(OMP_NUM_THREADS="3,2")
    assert (s["threads"], s["source"]) == (3, "OMP_NUM_THREADS")
    assert 1 <= s["blas_threads"] <= 3
    assert s["blas_source"].startswith("from OMP_NUM_THREADS=3,2 as OpenBLAS read it")


def test_execmode_num_threads_wins_over_omp_num_threads(openblas):
    (s,) = _settings(EXECMODE_NUM_THREADS="2", OMP_NUM_THREADS="1")
    assert (s["threads"], s["source"]) == (2, "EXECMODE_NUM_THREADS")
    assert s["blas_threads"] == 1  # the user's OMP_NUM_THREADS, as OpenBLAS read it
    (s,) = _settings(EXECMODE_NUM_THREADS="1", OMP_NUM_THREADS="not a number")
    assert s["threads"] == 1  # a source below the one that answers is not read


def test_openblas_num_threads_is_left_as_the_user_set_it(openblas):
    settings = _settings("settings", "set:2", "set:none", OPENBLAS_NUM_THREADS="1")
    first, called, back = settings
    assert first["blas_threads"] == 1
    assert first["threads"] == min(_cpus(), threads.physical_cores())
    assert first["blas_source"] == ("from OPENBLAS_NUM_THREADS=1 as OpenBLAS read it; "
                                    "execmode leaves it")
    assert threads.thread_settings_text(first).endswith(f", BLAS 1 ({first['blas_source']})")
    # An explicit call sets both; None gives the BLAS back its user's count.
    assert (called["threads"], called["blas_threads"], called["blas_source"]) == \
        (2, 2, "set_num_threads()")
    assert (back["blas_threads"], back["blas_source"]) == (1, first["blas_source"])


@pytest.mark.parametrize("variable, value", [("EXECMODE_NUM_THREADS", "2 threads"),
                                             ("OMP_NUM_THREADS", "0"),
                                             ("OMP_NUM_THREADS", "x,2")])
def test_an_invalid_variable_stops_with_its_name(variable, value):
    done = _child(_SETTINGS_SCRIPT, ("settings",), **{variable: value})
    assert done.returncode != 0
    assert f"ValueError: {variable}={value!r}: expected a positive integer" in done.stderr


_LIBRARIES_SCRIPT = textwrap.dedent("""
    import numpy as np
    import execmode as em
    from execmode.codegen import threads

    def used(libraries):
        return [lib.em_threads_used() for lib in libraries]

    x = em.tensor(np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32))
    em.set_num_threads(1)
    f = em.jit(lambda x: em.tanh(x * 2.0 + 1.0))
    f(x)
    old = list(threads._State.libraries)
    print("compiled at 1", used(old))
    em.set_num_threads(2)
    f(x)
    print("loaded, then 2", used(old))
    g = em.jit(lambda x: em.sum(em.exp(x * 0.5)))
    g(x)
    print("compiled at 2", used(threads._State.libraries[len(old):]))
""")


def test_set_num_threads_reaches_loaded_and_future_libraries(tmp_path):
    """Each library says whether it ever ran a team of more than one thread."""
    try:
        if not get_toolchain().openmp:
            pytest.skip("the compiler has no OpenMP: kernels are single-threaded")
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")
    done = _child(_LIBRARIES_SCRIPT, tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" [", 1) for line in done.stdout.splitlines())
    at_one, then_two, new = (json.loads("[" + lines[k]) for k in
                             ("compiled at 1", "loaded, then 2", "compiled at 2"))
    assert at_one and not any(at_one)
    assert any(then_two)
    assert new and any(new)


# --- OpenBLAS's jobs on the kernels' team (blas_workers.py) ----------------------------------

# Prints one JSON line: the workers' status, a digest of products OpenBLAS splits into
# jobs at 2 threads, and how many job sets ran on the team.
_PRODUCTS_SCRIPT = textwrap.dedent("""
    import hashlib, json
    import numpy as np
    import execmode as em
    from execmode.codegen import blas_workers, threads

    em.set_num_threads(2)
    rng = np.random.default_rng(42)
    a = rng.standard_normal((64, 512), dtype=np.float32)
    b = rng.standard_normal((512, 256), dtype=np.float32)
    c = rng.standard_normal((600, 700))
    d = rng.standard_normal((700, 500))
    digest = hashlib.sha256()
    for product in (a @ b, b.T @ a.T, c @ d, a @ a.T):
        digest.update(product.tobytes())
    print(json.dumps({"workers": threads.thread_settings()["blas_workers"],
                      "digest": digest.hexdigest(), "calls": blas_workers.calls()}))
""")


def _team_or_skip():
    (s,) = _settings("set:none", **TEAM_ON)
    if s["blas_workers"] != blas_workers.TEAM:
        pytest.skip(f"OpenBLAS's jobs do not run on execmode's team here: {s['blas_workers']}")


def _json_child(script, *args, **variables) -> dict:
    done = _child(script, args, **variables)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_team_is_opt_in_and_gives_the_same_bits(openblas):
    """Unset, OpenBLAS's own threads run its jobs (docs/kernels.md says so:
    test_the_docs_state_the_default); EXECMODE_BLAS_CALLBACK=1 hands them to the team."""
    _team_or_skip()
    default = _json_child(_PRODUCTS_SCRIPT)
    on = _json_child(_PRODUCTS_SCRIPT, **TEAM_ON)
    off = _json_child(_PRODUCTS_SCRIPT, EXECMODE_BLAS_CALLBACK="0")
    assert default["workers"] == blas_workers.own_threads(blas_workers.OFF_BY_DEFAULT)
    # The team ran OpenBLAS's jobs: at least c @ d's (600x700x500, threaded everywhere);
    # which of the smaller products OpenBLAS splits depends on its kernel (on a Xeon with
    # its SkylakeX kernel, 3 of the 4 were).
    assert on["workers"] == blas_workers.TEAM and on["calls"][0] >= 1
    assert off["workers"] == "OpenBLAS's own threads (EXECMODE_BLAS_CALLBACK=0)"
    assert default["calls"] == off["calls"] == [0, 0]
    assert on["digest"] == off["digest"] == default["digest"]


def test_an_invalid_callback_switch_stops_with_its_name(openblas):
    done = _child(_SETTINGS_SCRIPT, ("set:none",), EXECMODE_BLAS_CALLBACK="maybe")
    assert done.returncode != 0
    assert "ValueError: EXECMODE_BLAS_CALLBACK='maybe': expected 1" in done.stderr


def test_the_docs_state_the_default():
    """docs/kernels.md's table of variables says which workers run OpenBLAS's jobs when
    EXECMODE_BLAS_CALLBACK is unset."""
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "kernels.md")
    with open(docs, encoding="utf-8") as f:
        (row,) = [line for line in f if line.startswith(f"| `{blas_workers.ENV}` |")]
    assert blas_workers.DEFAULT is False
    assert "unset: OpenBLAS's own threads (the default)" in row


# Reads the settings every way execmode's measurements do, in a process where nothing
# gave the BLAS a count yet, with the team asked for and a kernel count (1) that differs
# from OpenBLAS's own (the usable CPUs): a sync would show. Then a kernel library loads.
_READING_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    import execmode as em
    from execmode.codegen import blas, blas_workers, threads
    from execmode.profilers.machine import machine_info
    from execmode.profilers.measure import context, context_line
    from execmode.profilers.recorder import Recorder

    control = blas.thread_control()

    def state():
        return [blas_workers.status(), control.get(), threads._State.blas_synced,
                blas_workers._State.tried]

    report = {"before": state()}
    threads.thread_settings(), threads.thread_settings_text()
    context(), context_line(), machine_info(threads=True)
    with Recorder(os.path.join(sys.argv[1], "r.emsession"), calibrate=False) as rec:
        np.ones(3) + 1
    with em.profile(os.path.join(sys.argv[1], "p.emsession"), calibrate=False):
        pass
    with em.profile(os.path.join(sys.argv[1], "e.emsession"), calibrate=False):
        np.ones((64, 512), np.float32) @ np.ones((512, 256), np.float32)
    report["after reading"] = state()
    if sys.argv[2] == "kernel":
        with threads.blas_left_alone():
            em.jit(lambda x: x * 2.0 + 1.0)(em.ones(8))
        report["after a kernel left it alone"] = state()
        em.jit(lambda x: x * 3.0 - 1.0)(em.ones(8))
        report["after a kernel"] = state()
    print(json.dumps(report))
""")


def test_reading_the_settings_changes_nothing(openblas, tmp_path):
    """Reports, em.compare's context, machine info and every recording read the thread
    settings; none of them may give the BLAS a count or its jobs to the team: the
    measured program must run as it runs unmeasured. Only the engine's own actions do (a
    kernel library, set_num_threads), and not inside blas_left_alone()."""
    try:
        kernel = "kernel" if get_toolchain().openmp else "none"
    except NoCompiler:
        kernel = "none"
    report = _json_child(_READING_SCRIPT, str(tmp_path), kernel, EXECMODE_NUM_THREADS="1",
                         **TEAM_ON)
    before = report["before"]
    assert before[0] == blas_workers.own_threads(blas_workers.NOT_YET)
    assert before[2:] == [False, False]
    assert report["after reading"] == before
    if kernel == "kernel":
        assert report["after a kernel left it alone"] == before
        workers, count, synced, tried = report["after a kernel"]
        assert (count, synced, tried) == (1, True, True)
        assert workers != before[0]  # the team, or the rule that rules it out here


@pytest.mark.parametrize("variable, value, reason", [
    ("OMP_THREAD_LIMIT", "1", "OMP_THREAD_LIMIT=1: fewer threads than OpenBLAS's 2 jobs"),
    ("OMP_DYNAMIC", "true", "OMP_DYNAMIC is on: OpenMP may give fewer threads"),
])
def test_where_openmp_may_not_give_the_whole_team_openblas_keeps_its_threads(
        openblas, variable, value, reason):
    """OpenBLAS's jobs wait for each other, so they need all their threads at once: where
    OpenMP may give fewer, every call would start threads of its own; OpenBLAS's own
    threads run them instead, with the same bits."""
    _team_or_skip()
    on = _json_child(_PRODUCTS_SCRIPT, **TEAM_ON)
    limited = _json_child(_PRODUCTS_SCRIPT, **TEAM_ON, **{variable: value})
    assert limited["workers"].startswith(f"OpenBLAS's own threads ({reason}")
    assert limited["calls"] == [0, 0]
    assert limited["digest"] == on["digest"]


# Python threads call NumPy at once: matmuls (their job sets take turns on the slots at
# the top) beside LU solves (getrf_parallel queues jobs to OpenBLAS's own workers,
# whatever the callback, in the bottom slots). Every result must be the bits it has alone.
_CONCURRENT_SCRIPT = textwrap.dedent("""
    import json, sys, threading
    import numpy as np
    import execmode as em
    from execmode.codegen import blas_workers, threads

    em.set_num_threads(2)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 512), dtype=np.float32)
    b = rng.standard_normal((512, 384), dtype=np.float32)
    c = rng.standard_normal((300, 400))
    d = rng.standard_normal((400, 350))
    m = rng.standard_normal((500, 500)) + 500 * np.eye(500)
    r = rng.standard_normal((500, 8))
    work = {"sgemm": lambda: a @ b, "dgemm": lambda: c @ d,
            "solve": lambda: np.linalg.solve(m, r)}
    alone = {name: fn().tobytes() for name, fn in work.items()}
    wrong = []

    def worker(name):
        for _ in range(40):
            if work[name]().tobytes() != alone[name]:
                wrong.append(name)

    names = ["sgemm", "dgemm", "solve", "sgemm", "solve"]
    pool = [threading.Thread(target=worker, args=(n,)) for n in names]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    print(json.dumps({"workers": threads.thread_settings()["blas_workers"],
                      "wrong": sorted(set(wrong)), "calls": blas_workers.calls()}))
""")


def test_python_threads_calling_numpy_at_once_get_the_bits_they_get_alone(openblas):
    _team_or_skip()
    result = _json_child(_CONCURRENT_SCRIPT, **TEAM_ON)  # a hang is a TimeoutExpired
    assert result["workers"] == blas_workers.TEAM
    assert result["calls"][0] > 0
    assert result["wrong"] == []


# A fork after OpenBLAS's jobs ran on the team (and no threaded kernel): the team's pool
# is unusable in the child, so kernels run on one thread and OpenBLAS's jobs on its own
# threads; a fork before any team ran keeps both on the team. "os" forks through Python
# (os.register_at_fork hooks run), "libc" through C (only blas_workers.c's handler does).
_FORK_SCRIPT = textwrap.dedent("""
    import ctypes, json, os, sys
    import numpy as np
    import execmode as em
    from execmode.codegen import blas_workers, threads

    when, how = sys.argv[1], sys.argv[2]
    em.set_num_threads(2)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 512), dtype=np.float32)
    b = rng.standard_normal((512, 256), dtype=np.float32)
    x = em.tensor(rng.standard_normal(1 << 21).astype(np.float32))
    f = em.jit(lambda x: em.tanh(x * 2.0 + 1.0))
    f_bits = None
    if when == "team-ran":
        product = (a @ b).tobytes()
        assert blas_workers.team_ran()
    else:
        em.set_num_threads(1)
        f_bits = f(x).numpy().tobytes()  # compiled, but no team started
        em.set_num_threads(2)
        blas_workers.use_team(False)  # the bits at 2 threads, without starting the team
        product = (a @ b).tobytes()
        blas_workers.use_team(True)
        assert not blas_workers.team_ran()
    before = blas_workers.calls()[0]
    pid = ctypes.CDLL(None).fork() if how == "libc" else os.fork()
    if pid == 0:
        try:
            report = {"workers": blas_workers.status(),
                      "product": (a @ b).tobytes() == product,
                      "team_calls": blas_workers.calls()[0] - before}
            if how == "os":
                out = f(x).numpy().tobytes()
                report.update(kernel=f_bits is None or out == f_bits,
                              threads=threads.num_threads())
            print(json.dumps(report), flush=True)
            os._exit(0)
        except BaseException as exc:
            print(json.dumps({"failed": repr(exc)}), flush=True)
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    assert (a @ b).tobytes() == product and blas_workers.status() == blas_workers.TEAM
    f(x)  # the parent keeps its threads
    sys.exit(os.waitstatus_to_exitcode(status))
""")

_FORKED = f"OpenBLAS's own threads ({blas_workers.FORKED})"


def _child_group(script, args, tmp_path, timeout=120) -> subprocess.CompletedProcess:
    """_child in a session of its own: on a timeout the whole group is killed, a hung
    forked grandchild included (it holds the pipes open), then TimeoutExpired raised."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    env.update(TEAM_ON, EXECMODE_CACHE_DIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", script, *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.parametrize("when, how, workers, kernel_threads", [
    ("team-ran", "os", _FORKED, 1),
    ("team-ran", "libc", _FORKED, None),
    ("nothing-ran", "os", blas_workers.TEAM, 2),
])
def test_a_forked_child_never_waits_for_the_team(tmp_path, openblas, when, how, workers,
                                                 kernel_threads):
    _team_or_skip()
    try:
        if not get_toolchain().openmp:
            pytest.skip("the compiler has no OpenMP: kernels are single-threaded")
    except NoCompiler as exc:
        pytest.skip(f"no C compiler: {exc}")
    done = _child_group(_FORK_SCRIPT, (when, how), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    child = json.loads(done.stdout.splitlines()[-1])
    assert child["workers"] == workers
    assert child["product"] is True
    assert (child["team_calls"] > 0) == (workers == blas_workers.TEAM)
    if kernel_threads is not None:
        assert child["kernel"] is True and child["threads"] == kernel_threads


_SLOTS_SCRIPT = textwrap.dedent("""
    import json
    import numpy as np
    import execmode as em
    from execmode.codegen import blas_workers

    a = np.random.default_rng(0).standard_normal((64, 512), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((512, 256), dtype=np.float32)
    em.set_num_threads(2)
    two = (a @ b).tobytes()
    report = {"first": blas_workers.status()}
    many = blas_workers.slots() // 2 + 1  # many jobs + (many - 1) workers > slots
    em.set_num_threads(many)
    report["too many"] = blas_workers.status()
    report["many"] = many
    before = blas_workers.calls()
    a @ b
    report["calls"] = [n - m for n, m in zip(blas_workers.calls(), before)]
    em.set_num_threads(2)
    report["back at 2"] = blas_workers.status()
    report["same bits"] = (a @ b).tobytes() == two
    print(json.dumps(report))
""")


def test_a_count_too_large_for_openblas_slots_gives_it_its_own_threads(openblas):
    """blas_workers.c, rule 2: the jobs' slots (from the top) and OpenBLAS's own workers'
    (from 0) must not meet; half its slots + 1 threads (33 of 64 here) do not fit."""
    _team_or_skip()
    report = _json_child(_SLOTS_SCRIPT, **TEAM_ON)
    assert report["first"] == report["back at 2"] == blas_workers.TEAM
    assert report["too many"].startswith(
        f"OpenBLAS's own threads ({report['many']} threads: the jobs and OpenBLAS's own "
        "threads would need more than its")
    assert report["calls"] == [0, 0]
    assert report["same bits"] is True
