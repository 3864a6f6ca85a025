"""The six seed workloads: NumPy op by op vs execmode eager vs execmode jit, and the
memory-bandwidth floor measured in the same run.

    python benchmarks/bench_seeds.py            # the full run (~1 minute)
    python benchmarks/bench_seeds.py --quick    # fewer calls, for a smoke test
    python benchmarks/bench_seeds.py --threads 2  # kernels on 2 threads (default: 1)

Steady state is the best of several rounds of many calls, per call; the rounds of NumPy,
eager and jit interleave so that machine drift affects all three alike. "first call" is the
jitted function's first call (trace, passes, code generation, C compile) with an empty
kernel cache: the script points EXECMODE_CACHE_DIR at a fresh temporary directory before
anything compiles. Every jitted result is checked against eager before it is timed.
The table printed at the end is markdown, ready to paste into a README.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time

# A cold kernel cache for this run (before execmode compiles anything).
os.environ["EXECMODE_CACHE_DIR"] = tempfile.mkdtemp(prefix="execmode-bench-cache-")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from timing import N_LARGE, best_per_call, copy_seconds, fmt_time  # noqa: E402
from workloads import numpy_mlp_sgd_step, train_step  # noqa: E402

import execmode as em  # noqa: E402
from execmode.codegen import backend_status  # noqa: E402


def first_call(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def check(got, want, rtol=1e-4, atol=1e-5):
    got = got.numpy() if isinstance(got, em.Tensor) else np.asarray(got)
    want = want.numpy() if isinstance(want, em.Tensor) else np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# --- workloads -------------------------------------------------------------------------------
# Each returns (numpy_fn, eager_fn, jit_fn, calls): zero-argument callables.

def matpow(quick):
    rng = np.random.default_rng(0)
    x_np = rng.uniform(0.0, 0.1, (10, 10)).astype(np.float32)
    x = em.tensor(x_np)

    def power(x, y):
        result = em.eye(10, dtype=em.float32)
        for _ in range(y):
            result = em.matmul(x, result)
        return result

    def numpy_power(x, y):
        result = np.eye(10, dtype=np.float32)
        for _ in range(y):
            result = np.matmul(x, result)
        return result

    jitted = em.jit(power)
    return (lambda: numpy_power(x_np, 100), lambda: power(x, 100), lambda: jitted(x, 100),
            100 if quick else 1000)


def relu_chain(quick):
    rng = np.random.default_rng(1)
    w_np = (rng.standard_normal((100, 100)) * (1.4 / 10)).astype(np.float32)
    x_np = rng.standard_normal((100, 100)).astype(np.float32)
    w, x = em.tensor(w_np), em.tensor(x_np)

    def chain(x):
        for _ in range(100):
            x = em.relu(x @ w)
        return x

    def numpy_chain(x):
        for _ in range(100):
            x = np.maximum(x @ w_np, 0)
        return x

    jitted = em.jit(chain)
    return (lambda: numpy_chain(x_np), lambda: chain(x), lambda: jitted(x),
            10 if quick else 100)


def _mlp(seed):
    em.random.seed(seed)
    model = em.nn.MLP([512, 256, 128, 2])
    weights = [(layer.weight.numpy(), layer.bias.numpy()) for layer in model
               if hasattr(layer, "weight")]
    return model, weights


def mlp_forward(quick):
    model, weights = _mlp(2)
    x_np = np.random.default_rng(2).standard_normal((1, 512)).astype(np.float32)
    x = em.tensor(x_np)

    def numpy_forward(x):
        for i, (w, b) in enumerate(weights):
            x = x @ w.T + b
            if i < len(weights) - 1:
                x = np.maximum(x, 0)
        return x

    with em.no_grad():
        jitted = em.jit(lambda x: model(x))

    def eager():
        with em.no_grad():
            return model(x)

    def jit():
        with em.no_grad():
            return jitted(x)

    return lambda: numpy_forward(x_np), eager, jit, 100 if quick else 1000


def fancy_func(quick):
    arrays = [np.array([v], np.float32) for v in (1.0, 2.0, 3.0, 4.0)]
    tensors = [em.tensor(a) for a in arrays]

    def fancy(a, b, c, d):
        e = a + b
        f = c + d
        return e + f

    jitted = em.jit(fancy)
    return (lambda: fancy(*arrays), lambda: fancy(*tensors), lambda: jitted(*tensors),
            1000 if quick else 10000)


def ew_chain_large(quick):
    rng = np.random.default_rng(3)
    x_np, a_np, b_np = (rng.standard_normal(N_LARGE, dtype=np.float32) for _ in range(3))
    x, a, b = em.tensor(x_np), em.tensor(a_np), em.tensor(b_np)

    def chain(x, a, b):
        return em.tanh(x * a + b) * 0.5 + em.relu(x)

    def numpy_chain(x, a, b):
        return np.tanh(x * a + b) * np.float32(0.5) + np.maximum(x, 0)

    jitted = em.jit(chain)
    return (lambda: numpy_chain(x_np, a_np, b_np), lambda: chain(x, a, b),
            lambda: jitted(x, a, b), 2 if quick else 10)


def mlp_train_step(quick):
    model, _ = _mlp(4)
    opt = em.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(4)
    x = em.tensor(rng.standard_normal((64, 512)).astype(np.float32))
    y = em.tensor(rng.standard_normal((64, 2)).astype(np.float32))
    np_weights = [[layer.weight.numpy().copy(), layer.bias.numpy().copy()] for layer in model
                  if hasattr(layer, "weight")]
    x_np, y_np = x.numpy(), y.numpy()

    step = train_step(model, opt)

    def numpy_step():
        return numpy_mlp_sgd_step(np_weights, x_np, y_np)

    jitted = em.jit(step)
    return numpy_step, lambda: step(x, y), lambda: jitted(x, y), 20 if quick else 200


def _train_step_variants(optimizer: str, quick):
    """(numpy, eager, plan replay, one-call program) step functions of the same MLP
    training step on four copies of one model; the replay's plan has its program taken
    away, so it steps through the plan in Python as em.jit did before programs wrote
    assigns and called BLAS."""
    import execmode.jit_driver.jit as jit_module

    rng = np.random.default_rng(4)
    x_np = rng.standard_normal((64, 512)).astype(np.float32)
    y_np = rng.standard_normal((64, 2)).astype(np.float32)
    x, y = em.tensor(x_np), em.tensor(y_np)

    def make():
        model, _ = _mlp(4)
        opt = em.optim.SGD(model.parameters(), lr=0.01) if optimizer == "sgd" else \
            em.optim.Adam(model.parameters(), lr=1e-3)
        return model, train_step(model, opt)

    numpy_fn = WORKLOADS["mlp_train_step"](quick)[0] if optimizer == "sgd" else None
    _, eager_step = make()
    program_model, program_step = make()
    replay_model, replay_step = make()
    program_jit, replay_jit = em.jit(program_step), em.jit(replay_step)
    original = jit_module.compile_graph

    def without_program(lowered, graph_id, backend=None):
        plan = original(lowered, graph_id, backend)
        plan.program = None
        return plan

    jit_module.compile_graph = without_program
    try:
        replay_jit(x, y)
    finally:
        jit_module.compile_graph = original
    program_jit(x, y)
    plan = next(iter(program_jit._segments.values())).plan
    state = {"plan": plan, "model": program_model}
    return (numpy_fn, lambda: eager_step(x, y), lambda: replay_jit(x, y),
            lambda: program_jit(x, y), state)


def run_train_steps(quick) -> list[dict]:
    """mlp_train_step (SGD, Adam): NumPy, eager, plan replay, one-call program, rounds
    interleaved as in run()."""
    rows = []
    calls = 20 if quick else 200
    for optimizer in ("sgd", "adam"):
        numpy_fn, eager_fn, replay_fn, program_fn, state = _train_step_variants(optimizer,
                                                                               quick)
        plan = state["plan"]
        before = plan.program.calls if plan.program is not None else 0
        variants = [("numpy", numpy_fn), ("eager", eager_fn), ("replay", replay_fn),
                    ("program", program_fn)]
        row = {"name": f"mlp_train_step ({optimizer})", "calls": calls,
               "program": float("inf"), "reason": plan.program_reason}
        for key, fn in variants:
            row[key] = float("inf") if fn is not None else None
        for _ in range(3 if quick else 5):
            for key, fn in variants:
                if fn is not None:
                    row[key] = min(row[key], best_per_call(fn, calls, rounds=1))
        runs = (plan.program.calls - before) if plan.program is not None else 0
        row["native_calls_per_step"] = runs / (calls * (3 if quick else 5))
        rows.append(row)
    return rows


def print_train_steps(rows) -> None:
    print("\n| step (64x512 -> 256 -> 128 -> 2, float32) | NumPy by hand | eager | "
          "jit plan replay (before) | jit one-call program (after) | program vs replay "
          "| program vs eager | program vs NumPy | program calls per step |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        numpy_text = fmt_time(r["numpy"]) if r["numpy"] is not None else "-"
        vs_numpy = f"{r['numpy'] / r['program']:.2f}x" if r["numpy"] is not None else "-"
        print(f"| {r['name']} | {numpy_text} | {fmt_time(r['eager'])} | "
              f"{fmt_time(r['replay'])} | {fmt_time(r['program'])} | "
              f"{r['replay'] / r['program']:.2f}x | {r['eager'] / r['program']:.2f}x | "
              f"{vs_numpy} | {r['native_calls_per_step']:.2f} |")
        if r["reason"]:
            print(f"|   (no program: {r['reason']}) |")


def matpow_program(quick):
    """matpow with the whole lowered graph as one C function (codegen.compile_program):
    what the plan could replay once it uses programs. Not through em.jit today."""
    from execmode.codegen.program import compile_program

    numpy_fn, eager_fn, jit_fn, calls = matpow(quick)
    x_np = np.random.default_rng(0).uniform(0.0, 0.1, (10, 10)).astype(np.float32)

    def power(x, y):
        result = em.eye(10, dtype=em.float32)
        for _ in range(y):
            result = em.matmul(x, result)
        return result

    state = {}

    def program_fn():
        if "program" not in state:
            graph = em.jit(power).lower(em.tensor(x_np), 100).graph
            state["program"] = compile_program(graph, "matpow")
        return em.tensor(state["program"].run([x_np])[0])

    return numpy_fn, eager_fn, program_fn, calls


WORKLOADS = {
    "matpow": matpow,
    "relu_chain": relu_chain,
    "mlp_forward": mlp_forward,
    "fancy_func": fancy_func,
    "ew_chain_large": ew_chain_large,
    "mlp_train_step": mlp_train_step,
    "matpow_program": matpow_program,
}
CHECKED_AGAINST_EAGER = {"matpow", "relu_chain", "mlp_forward", "fancy_func", "ew_chain_large",
                         "matpow_program"}


# --- running -------------------------------------------------------------------------------

def run(name, quick):
    numpy_fn, eager_fn, jit_fn, calls = WORKLOADS[name](quick)
    first = first_call(jit_fn)
    if name in CHECKED_AGAINST_EAGER:
        check(jit_fn(), eager_fn(), rtol=1e-4, atol=1e-4)
    # Rounds interleave the three variants, so that the drift of a shared VM (the second
    # vCPU comes and goes) hits all of them alike; each keeps its best round.
    rounds = 3 if name == "ew_chain_large" else 5
    row = {"name": name, "calls": calls, "first": first,
           "numpy": float("inf"), "eager": float("inf"), "jit": float("inf")}
    for _ in range(rounds):
        for key, fn in (("numpy", numpy_fn), ("eager", eager_fn), ("jit", jit_fn)):
            row[key] = min(row[key], best_per_call(fn, calls, rounds=1))
    return row


TARGETS = {
    "matpow": ("jit >= 10x eager and < NumPy",
               lambda r, f: r["eager"] / r["jit"] >= 10 and r["jit"] < r["numpy"]),
    "relu_chain": ("-", None),
    "mlp_forward": ("jit < NumPy", lambda r, f: r["jit"] < r["numpy"]),
    "fancy_func": ("jit < NumPy", lambda r, f: r["jit"] < r["numpy"]),
    "ew_chain_large": ("jit <= 1.3x floor", lambda r, f: r["jit"] <= 1.3 * f),
    "mlp_train_step": ("jit < NumPy; first call <= 1 s",
                       lambda r, f: r["jit"] < r["numpy"] and r["first"] <= 1.0),
    "matpow_program": ("(reference: the program without em.jit's call)",
                       lambda r, f: r["eager"] / r["jit"] >= 10 and r["jit"] < r["numpy"]),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls (smoke test)")
    parser.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), help="workloads")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for large kernels (EXECMODE_NUM_THREADS; default 1: "
                        "single-threaded, as the peers are compared)")
    parser.add_argument("--steps", action="store_true",
                        help="only the training steps: NumPy, eager, plan replay, program")
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be a positive integer")
    os.environ["EXECMODE_NUM_THREADS"] = str(args.threads)

    print(f"# execmode seed benchmarks - {platform.node()}, {platform.processor() or ''} "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, NumPy {np.__version__}")
    print("# " + str(backend_status()).replace("\n", "\n# "))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# load average at start: {load:.2f} (other processes on the machine skew every "
          "number; > 0.5 on 2 cores means the run shared its CPUs)\n")
    copy_s = copy_seconds(N_LARGE)
    bandwidth = 2 * N_LARGE * 4 / copy_s
    # tanh(x*a+b)*0.5 + relu(x): three 64 MB inputs read, one 64 MB output written.
    ew_floor = 4 * N_LARGE * 4 / bandwidth
    print(f"bandwidth floor: copy of 16M float32 {fmt_time(copy_s)} "
          f"({bandwidth / 1e9:.1f} GB/s); ew_chain_large moves 4 x 64 MB -> floor "
          f"{fmt_time(ew_floor)}\n")

    if args.steps:
        print_train_steps(run_train_steps(args.quick))
        print("\nTimes are per step (best round). Ratios > 1: the program is faster. "
              "'program calls per step': runs of the one native call per step taken.")
        print(f"# load average at end: {os.getloadavg()[0]:.2f}")
        return 0
    rows = []
    for name in args.only or WORKLOADS:
        row = run(name, args.quick)
        rows.append(row)
        print(f"  {name:15s} numpy {fmt_time(row['numpy']):>10s}  eager "
              f"{fmt_time(row['eager']):>10s}  jit {fmt_time(row['jit']):>10s}  "
              f"first call {fmt_time(row['first'])}", flush=True)

    print("\n| workload | calls | NumPy op by op | execmode eager | execmode jit | jit vs NumPy "
          "| jit vs eager | jit first call (cold cache) | target | met |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for row in rows:
        target, test = TARGETS[row["name"]]
        met = "-" if test is None else ("yes" if test(row, ew_floor) else "**no**")
        print(f"| {row['name']} | {row['calls']} | {fmt_time(row['numpy'])} | "
              f"{fmt_time(row['eager'])} | {fmt_time(row['jit'])} | "
              f"{row['numpy'] / row['jit']:.2f}x | {row['eager'] / row['jit']:.1f}x | "
              f"{fmt_time(row['first'])} | {target} | {met} |")
    print(f"| bandwidth floor (copy 16M f32) | | {fmt_time(copy_s)} | | | | | | "
          f"ew floor {fmt_time(ew_floor)} | |")
    print("\nTimes are per call (steady state: best of rounds). Speedups > 1 mean jit is "
          "faster. matpow_program calls the compiled whole-graph program directly, without "
          "em.jit's call path (what em.jit's matpow row adds on top of it).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
