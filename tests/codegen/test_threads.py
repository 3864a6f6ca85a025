"""Threaded kernels: the thread count never changes a bit, the count's sources are read
in order and strictly, the BLAS follows it, and a fork after threaded kernels ran cannot
hang the child (threads.py). The environment read by child processes, and OpenBLAS's own
variables: test_thread_environment.py; OpenBLAS's jobs on the kernels' team:
test_blas_workers.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kernel_helpers import (
    BINARY,
    UNARY,
    blas_thread_control_or_skip,
    call_args,
    compile_cases,
    fused_case,
    openmp_toolchain_or_skip,
)

import execmode as em
from execmode.codegen import blas_workers, disk_cache, threads
from execmode.codegen.kernel_ir import point_cost
from execmode.codegen.render_c import CRenderer
from execmode.codegen.toolchain import Toolchain


@pytest.fixture
def restore_threads():
    yield
    threads.set_num_threads(None)


def _big_inputs():
    rng = np.random.default_rng(16)
    n = 3 * (1 << 20) + 7  # not a multiple of any vector length or of the 64 chunks
    # Magnitudes over many decades: a float32 sum's rounding depends on the order.
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    a = rng.standard_normal(n).astype(np.float32)
    m = rng.standard_normal((1100, 1000)).astype(np.float32)
    # Ties: +0.0 and -0.0 compare equal, and which one max returns depends on the order
    # values meet (NumPy keeps the newer one): a chunk order that moved would show.
    ties = np.where(rng.random(n) < 0.5, np.float32(-0.0), np.float32(0.0)).astype(np.float32)
    nans = x.copy()
    nans[2 * (1 << 20) + 1] = np.nan
    return x, a, m, ties, nans


CASES = {
    "sum_f32": (lambda x: em.sum(x), lambda x, a, m, t, nn: (x,)),
    "sum_f64": (lambda x: em.sum(x), lambda x, a, m, t, nn: (x.astype(np.float64),)),
    "sum_of_squares": (lambda x: em.sum(x * x), lambda x, a, m, t, nn: (x,)),
    "var_like": (lambda x, mu: em.sum((x - mu) * (x - mu)),
                 lambda x, a, m, t, nn: (x, np.float32(x.mean()))),
    "max_nan": (lambda x: em.max(x), lambda x, a, m, t, nn: (nn,)),
    "max_signed_zero_ties": (lambda t: em.max(t * 1.0), lambda x, a, m, t, nn: (t,)),
    "min_signed_zero_ties": (lambda t: em.min(t * 1.0), lambda x, a, m, t, nn: (t,)),
    "prod": (lambda a: em.prod(a * 0.001 + 1.0), lambda x, a, m, t, nn: (a,)),
    "chain": (lambda x, a: em.tanh(x * a + 0.5) * 0.5 + em.exp(-(a * a)) + em.log1p(em.abs(a))
              - em.erf(a) * em.expm1(a * 0.1), lambda x, a, m, t, nn: (x, a)),
    "chain_f64": (lambda a: em.tanh(a) + em.exp(a) * em.log(em.abs(a) + 1.0),
                  lambda x, a, m, t, nn: (a.astype(np.float64),)),
    "row_sum_exp": (lambda m: em.sum(em.exp(m - 1.0), axis=1), lambda x, a, m, t, nn: (m,)),
    "col_max": (lambda m: em.max(m * 2.0, axis=0), lambda x, a, m, t, nn: (m,)),
}


def _kernels_and_args():
    inputs = _big_inputs()
    cases, args = [], []
    for i, (fn, make) in enumerate(CASES.values()):
        arrays = make(*inputs)
        case = fused_case(fn, *arrays, label=f"k{i}")
        cases.append(case)
        args.append(call_args(case[1], case[0], list(arrays)))
    return compile_cases(cases), args


@pytest.mark.slow  # compiles big and small kernels and runs them at 1 and 2 threads
def test_big_kernels_are_parallel_and_small_ones_are_not():
    tc = openmp_toolchain_or_skip()
    kernels, _ = _kernels_and_args()
    for name, kernel in zip(CASES, kernels):
        if name == "prod":  # a float product multiplies in order, as NumPy (eager_sum.py)
            assert "omp parallel" not in kernel.source
            continue
        assert "#pragma omp parallel for" in kernel.source, name
        assert "num_threads(em_team())" in kernel.source, name
    small = compile_cases([fused_case(lambda x: em.sum(em.exp(x)), np.ones(1000, np.float32))])
    assert "omp parallel" not in small[0].source
    assert tc.openmp


def test_the_threshold_counts_work_not_points():
    """(x + a) * 0.5 costs 4 per point (two loads, two ops): parallel from
    parallel_min_work / 4 points; a tanh chain, far sooner."""
    openmp_toolchain_or_skip()
    edge = CRenderer.parallel_min_work // 4
    cheap = lambda x, a: (x + a) * 0.5  # noqa: E731
    below, at = (np.ones(n, np.float32) for n in (edge - 1, edge))
    kernels = compile_cases([fused_case(cheap, below, below, label="k0"),
                             fused_case(cheap, at, at, label="k1"),
                             fused_case(lambda x: em.tanh(x * 2.0 + 1.0), below, label="k2")])
    assert point_cost(kernels[0].kernel) == 4
    assert "omp parallel" not in kernels[0].source
    assert "omp parallel" in kernels[1].source
    assert "omp parallel" in kernels[2].source


@pytest.mark.slow  # compiles one program at several thread counts
def test_thread_count_does_not_change_a_bit(restore_threads):
    openmp_toolchain_or_skip()
    kernels, args = _kernels_and_args()
    results = {}
    for n in (1, 2, 4, 3, 1):
        threads.set_num_threads(n)
        results[n] = [np.array(k(*a), copy=True).tobytes() for k, a in zip(kernels, args)]
    for n in (2, 3, 4):
        for name, one, many in zip(CASES, results[1], results[n]):
            assert one == many, f"{name}: 1 thread and {n} threads differ"


def _op_cases():
    """One kernel per elementwise op and dtype, big enough to be threaded, on values with
    NaN, +-Inf, -0.0, subnormals and huge ones sprinkled in (vector and scalar paths of
    every helper must round alike: guided scheduling moves the piece boundaries)."""
    rng = np.random.default_rng(5)
    n = 300_007
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-40, 3e38, -3e38,
                         0.5, -0.5, 1.0, -1.0, 88.7, -103.9])
    cases = []
    for dtype in (np.float32, np.float64, np.int32):
        if dtype == np.int32:
            x = rng.integers(-1000, 1000, n).astype(np.int32)
            y = rng.integers(-5, 6, n).astype(np.int32)
        else:
            x = (rng.standard_normal(n) * 4).astype(dtype)
            y = (rng.standard_normal(n) * 4).astype(dtype)
            x[rng.integers(0, n, 3000)] = rng.choice(specials, 3000).astype(dtype)
            y[rng.integers(0, n, 3000)] = rng.choice(specials, 3000).astype(dtype)
        ops = BINARY if dtype == np.int32 else UNARY + BINARY
        for op in ops:
            fn = getattr(em, op)
            if op in BINARY:
                cases.append((f"{op}_{np.dtype(dtype).name}",
                              lambda x, y, fn=fn: fn(x, y) == fn(y, x), (x, y)))
            else:
                cases.append((f"{op}_{np.dtype(dtype).name}",
                              lambda x, fn=fn: fn(x * 1.5) + x, (x,)))
    return cases


@pytest.mark.slow  # compiles every elementwise op at several thread counts
def test_every_elementwise_op_gives_the_same_bits_at_any_thread_count(restore_threads):
    openmp_toolchain_or_skip()
    built, names, args = [], [], []
    with np.errstate(all="ignore"):
        for name, fn, arrays in _op_cases():
            try:
                case = fused_case(fn, *arrays, label=f"k{len(built)}")
            except Exception:  # an op this dtype does not support
                continue
            built.append(case)
            names.append(name)
            args.append(call_args(case[1], case[0], list(arrays)))
    kernels = compile_cases(built)
    assert all("omp parallel" in k.source for k in kernels)
    results = {}
    for n in (1, 2, 3):
        threads.set_num_threads(n)
        results[n] = [np.array(k(*a), copy=True).tobytes() for k, a in zip(kernels, args)]
    for n in (2, 3):
        bad = [name for name, one, many in zip(names, results[1], results[n]) if one != many]
        assert not bad, f"1 and {n} threads differ: {bad}"


def test_split_reduction_is_the_fixed_chunk_order():
    """The 64 chunks combined in order, whatever the thread count: recomputed in NumPy
    (float32 in float64 chunk by chunk; within a chunk the vector lanes reassociate, so
    compare to the last bits a float64 sum of 49K values can differ in)."""
    openmp_toolchain_or_skip()
    x = _big_inputs()[0]
    (kernel,) = compile_cases([fused_case(lambda x: em.sum(x), x)])
    assert "partial[64]" in kernel.source
    per = -(-x.size // 64)
    chunks = [x[c * per:(c + 1) * per].astype(np.float64).sum() for c in range(64)]
    expected = np.float32(sum(chunks))
    got = np.asarray(kernel(x))
    assert abs(float(got) - float(expected)) <= 2 * np.spacing(np.float32(abs(expected)))


# --- EXECMODE_NUM_THREADS -------------------------------------------------------------------

def _physical_cores_seen_by_the_kernel(cpus) -> int | None:
    """Distinct cores among ``cpus``, counted as sets of hyperthread siblings (another
    route than threads.py's core ids), None where /sys does not say."""
    siblings = set()
    for cpu in cpus:
        try:
            with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list") as f:
                siblings.add(f.read().strip())
        except OSError:
            return None
    return len(siblings)


@pytest.fixture
def no_thread_variables(monkeypatch):
    for name in (threads.ENV, threads.OPENMP_ENV, *threads.BLAS_ENVS):
        monkeypatch.delenv(name, raising=False)


def test_default_is_the_usable_cpus_at_most_the_physical_cores(no_thread_variables):
    usable = os.sched_getaffinity(0)
    cores = _physical_cores_seen_by_the_kernel(usable)
    default = threads.requested_threads()
    assert 1 <= default <= len(usable)
    assert threads.usable_cpus() == len(usable)
    if cores is not None:
        assert threads.physical_cores() == cores
        assert default == min(len(usable), cores)
    assert threads.thread_settings()["source"] == \
        f"default: {len(usable)} usable CPUs, {threads.physical_cores()} physical cores"


def test_default_follows_the_affinity_mask(no_thread_variables):
    everything = os.sched_getaffinity(0)
    one = min(everything)
    os.sched_setaffinity(0, {one})  # this thread only; restored below
    try:
        assert threads.usable_cpus() == 1
        assert threads.physical_cores() == 1
        assert threads.requested_threads() == 1
    finally:
        os.sched_setaffinity(0, everything)


@pytest.mark.parametrize("call, execmode_variable, openmp_variable, expected", [
    (None, None, None, None),               # the default
    (None, None, "3", (3, "OMP_NUM_THREADS")),
    (None, None, " 4,2 ", (4, "OMP_NUM_THREADS")),  # OpenMP's nested list: the first
    (None, "1", "3", (1, "EXECMODE_NUM_THREADS")),
    (None, "2", "not read", (2, "EXECMODE_NUM_THREADS")),
    (2, "1", "3", (2, "set_num_threads()")),
])
def test_the_count_comes_from_the_first_source_that_says(
        no_thread_variables, monkeypatch, restore_threads, call, execmode_variable,
        openmp_variable, expected):
    if execmode_variable is not None:
        monkeypatch.setenv("EXECMODE_NUM_THREADS", execmode_variable)
    if openmp_variable is not None:
        monkeypatch.setenv("OMP_NUM_THREADS", openmp_variable)
    threads.set_num_threads(call)
    if expected is None:
        expected = (threads.default_threads(), threads.thread_settings()["source"])
        assert expected[1].startswith("default: ")
    settings = threads.thread_settings()
    assert (settings["threads"], settings["source"]) == expected
    assert em.get_num_threads() == threads.num_threads() == expected[0]


@pytest.mark.parametrize("bad", ["0", "two", "-1", "x,2", "1.5", ",2", "4 threads"])
def test_an_invalid_omp_num_threads_names_the_variable(no_thread_variables, monkeypatch, bad):
    monkeypatch.setenv("OMP_NUM_THREADS", bad)
    with pytest.raises(ValueError, match="OMP_NUM_THREADS=.*positive integer or a comma"):
        threads.requested_threads()
    with pytest.raises(ValueError, match="OMP_NUM_THREADS="):
        threads.thread_settings()


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5", "2 threads"])
def test_invalid_values_name_the_variable(monkeypatch, bad):
    monkeypatch.setenv("EXECMODE_NUM_THREADS", bad)
    with pytest.raises(ValueError, match="EXECMODE_NUM_THREADS=.*positive integer"):
        threads.requested_threads()


def test_backend_status_reports_an_invalid_thread_count(monkeypatch):
    openmp_toolchain_or_skip()
    monkeypatch.setenv("EXECMODE_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="EXECMODE_NUM_THREADS"):
        em.codegen.backend_status(check_gpu=False)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2", [2]])
def test_set_num_threads_rejects_nonsense(restore_threads, bad):
    before = em.get_num_threads()
    with pytest.raises(ValueError, match="set_num_threads: expected a positive integer"):
        em.set_num_threads(bad)
    assert em.get_num_threads() == before


def test_set_num_threads_takes_any_integer_type(restore_threads):
    em.set_num_threads(np.int64(1))
    assert em.get_num_threads() == 1 and type(em.get_num_threads()) is int


def test_the_blas_follows_the_count(no_thread_variables, restore_threads):
    control = blas_thread_control_or_skip()
    for n in (1, 2, 1, 3):
        em.set_num_threads(n)
        assert control.get() == n  # OpenBLAS's own answer
        settings = threads.thread_settings()
        assert (settings["threads"], settings["blas_threads"]) == (n, n)
        assert settings["blas_source"] == "set_num_threads()"
    em.set_num_threads(None)
    assert control.get() == threads.default_threads()
    assert threads.thread_settings()["blas_source"] == "execmode's count"


def test_the_settings_line(no_thread_variables, restore_threads):
    blas_thread_control_or_skip()
    threads.set_num_threads(None)  # the BLAS has execmode's count (reading never gives it)
    settings = threads.thread_settings()
    assert set(settings) >= {"threads", "source", "blas_threads", "blas_source",
                             "blas_workers", "usable_cpus", "physical_cores"}
    n = threads.default_threads()
    where = "" if n == 1 else " on the kernels' threads" \
        if settings["blas_workers"] == blas_workers.TEAM else " on OpenBLAS's own threads"
    assert threads.thread_settings_text() == \
        f"threads: {n} ({settings['source']}), BLAS {n}{where}"
    em.set_num_threads(2)
    team = dict(threads.thread_settings(), blas_workers=blas_workers.TEAM)
    assert threads.thread_settings_text(team).endswith(", BLAS 2 on the kernels' threads")
    own = dict(team, blas_workers="OpenBLAS's own threads (EXECMODE_BLAS_CALLBACK=0)")
    assert threads.thread_settings_text(own).endswith(", BLAS 2 on OpenBLAS's own threads")
    stored = {k: v for k, v in team.items() if k != "blas_workers"}  # an older session
    assert threads.thread_settings_text(stored).endswith(", BLAS 2")
    em.set_num_threads(1)
    assert threads.thread_settings_text() == "threads: 1 (set_num_threads()), BLAS 1"
    theirs = dict(settings, blas_threads=1, blas_source="from OPENBLAS_NUM_THREADS=1 as "
                  "OpenBLAS read it; execmode leaves it")
    assert threads.thread_settings_text(theirs).endswith(
        ", BLAS 1 (from OPENBLAS_NUM_THREADS=1 as OpenBLAS read it; execmode leaves it)")
    before_kernels = dict(settings, blas_threads=2, blas_source=threads.BLAS_NOT_YET,
                          blas_workers="OpenBLAS's own threads (the default)")
    assert threads.thread_settings_text(before_kernels).endswith(
        ", BLAS 2 (OpenBLAS's own count until execmode's first compiled kernel) on "
        "OpenBLAS's own threads")
    unknown = dict(settings, blas_threads=None, blas_source="not set: no OpenBLAS")
    assert threads.thread_settings_text(unknown).endswith(
        ", BLAS threads unknown (not set: no OpenBLAS)")


def test_a_jitted_training_step_gives_the_same_bits_at_1_and_2_threads(restore_threads):
    """Batch 2048 makes the matmul epilogues and the loss's kernels big enough for OpenMP.
    The BLAS is held at one thread: OpenBLAS's own bits may depend on its count (its
    Haswell sgemm here rounded ~20% of a 64x512 @ 512x256 product's elements differently
    at 1 and 2 threads; its SkylakeX sgemm did not); execmode's kernels must not."""
    openmp_toolchain_or_skip()
    control = blas_thread_control_or_skip()
    from helpers import mse_train_step

    rng = np.random.default_rng(31)
    x = em.tensor(rng.standard_normal((2048, 256), dtype=np.float32))
    y = em.tensor(rng.standard_normal((2048, 8), dtype=np.float32))
    results = {}
    for n in (1, 2):
        em.set_num_threads(n)
        control.set(1)
        em.random.seed(0)
        model = em.nn.Sequential(em.nn.Linear(256, 128), em.nn.ReLU(), em.nn.Linear(128, 8))
        step = em.jit(mse_train_step(model, em.optim.SGD(model.parameters(), lr=0.01)))
        losses = [step(x, y).numpy().tobytes() for _ in range(3)]
        weights = [p.numpy().tobytes() for p in model.parameters()]
        results[n] = (losses, weights)
    assert results[1] == results[2]


def test_the_cache_key_has_the_flags_and_not_the_thread_count():
    tc = Toolchain(("/usr/bin/cc",), "cc 12", ("-O3", "-fopenmp"), True, False)
    no_omp = Toolchain(("/usr/bin/cc",), "cc 12", ("-O3", "-fopenmp-simd"), False, False)
    source = CRenderer().prelude()
    assert disk_cache.library_key(source, tc.identity) != \
        disk_cache.library_key(source, no_omp.identity)
    assert "em_num_threads = 1;" in source  # the count is set at load, not compiled in


# --- end to end, in fresh processes ---------------------------------------------------------

_JIT_SCRIPT = textwrap.dedent("""
    import hashlib, sys
    import numpy as np
    import execmode as em
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(2_500_003) * 100).astype(np.float32)
    a = rng.standard_normal(2_500_003).astype(np.float32)
    xt, at = em.tensor(x), em.tensor(a)
    fns = [lambda x: em.sum(x), lambda x: em.mean(x), lambda x: em.var(x),
           lambda x, a: em.tanh(x * a + 1.0) * 0.5 + em.relu(x) - em.exp(-a * a),
           lambda x: em.argmax(em.floor(x * 0.0) + 1.0)]
    digest = hashlib.sha256()
    for fn in fns:
        args = (xt, at)[:fn.__code__.co_argcount]
        out = em.jit(fn)(*args).numpy()
        digest.update(np.ascontiguousarray(out).tobytes())
    print(digest.hexdigest())
""")


def _run(script, env_extra, cache_dir, timeout=180):
    """Run ``script`` in a new session; on a timeout kill the whole group (a hung forked
    grandchild included), then raise ``TimeoutExpired``."""
    env = dict(os.environ, EXECMODE_CACHE_DIR=str(cache_dir), **env_extra)
    proc = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


# Slow tier: fresh processes, EXECMODE_NUM_THREADS end to end.
@pytest.mark.slow
def test_jitted_results_are_the_same_bytes_at_1_2_and_4_threads(tmp_path):
    openmp_toolchain_or_skip()
    digests = {}
    for n in ("1", "2", "4"):
        proc = _run(_JIT_SCRIPT, {"EXECMODE_NUM_THREADS": n}, tmp_path)
        assert proc.returncode == 0, proc.stderr
        digests[n] = proc.stdout.strip()
    assert digests["1"] == digests["2"] == digests["4"], digests


# Slow tier: a fresh process.
@pytest.mark.slow
def test_an_invalid_thread_count_stops_the_first_compiled_kernel(tmp_path):
    openmp_toolchain_or_skip()
    script = ("import numpy as np, execmode as em\n"
              "em.jit(lambda x: em.exp(x) + 1.0)(em.tensor(np.ones(4, np.float32)))\n")
    proc = _run(script, {"EXECMODE_NUM_THREADS": "lots"}, tmp_path)
    assert proc.returncode != 0
    assert "ValueError: EXECMODE_NUM_THREADS='lots': expected a positive integer" in proc.stderr


_FORK_SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import execmode as em
    from execmode.codegen import threads

    run_before_fork = sys.argv[1] == "threads-ran"
    x = em.tensor(np.random.default_rng(1).standard_normal(1 << 21).astype(np.float32))
    f = em.jit(lambda x: em.tanh(x * 2.0 + 1.0))
    expected = f(x).numpy().copy() if run_before_fork else None
    pid = os.fork()
    if pid == 0:
        try:
            again = f(x).numpy()  # a library loaded before the fork (or a fresh compile)
            g = em.jit(lambda x: em.sum(em.exp(x * 0.5)))  # compiled after the fork
            g(x)
            ok = expected is None or again.tobytes() == expected.tobytes()
            print("child", threads.forked_after_threads(), threads.num_threads(), ok,
                  flush=True)
            print(em.codegen.backend_status(check_gpu=False), flush=True)
            os._exit(0 if ok else 3)
        except BaseException as exc:
            print("child failed", repr(exc), flush=True)
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    f(x)  # the parent keeps its threads
    print("parent", threads.num_threads(), os.waitstatus_to_exitcode(status), flush=True)
    sys.exit(os.waitstatus_to_exitcode(status))
""")


# Slow tier: a fork after threads ran, in a fresh process.
@pytest.mark.slow
@pytest.mark.parametrize("before", ["threads-ran", "nothing-ran"])
def test_fork_after_threaded_kernels_does_not_hang(tmp_path, before):
    """libgomp's pool does not survive fork(): without the guard the child's first
    parallel kernel waited forever. The child runs on one thread, or keeps its threads
    when none ran before the fork."""
    openmp_toolchain_or_skip()
    script = _FORK_SCRIPT.replace("sys.argv[1]", repr(before))
    try:
        proc = _run(script, {"EXECMODE_NUM_THREADS": "2"}, tmp_path, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("the forked child hung in a parallel kernel")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.split("\n")
    if before == "threads-ran":
        assert "child True 1 True" in lines
        assert "1 thread(s) (forked after threaded kernels ran" in proc.stdout
    else:
        assert "child False 2 True" in lines
    assert "parent 2 0" in lines

