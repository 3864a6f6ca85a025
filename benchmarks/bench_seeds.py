"""The six seed workloads: NumPy op by op vs execmode eager vs execmode jit, and the
memory-bandwidth floor measured in the same rounds.

    python benchmarks/bench_seeds.py            # the full run (~2 minutes)
    python benchmarks/bench_seeds.py --quick    # fewer calls, 5 rounds: a smoke test
    python benchmarks/bench_seeds.py --threads 2  # kernels on 2 threads (default: 1)
    python benchmarks/bench_seeds.py --steps    # the training steps: NumPy, eager, plan
                                                # replay, one-call program

Steady state: NumPy, eager and jit in interleaved rounds of many calls
(benchmarks/timing.py), per call, the median and interquartile range of the rounds; a
ratio only when the rounds carry one. "first call" is the jitted function's first call
(trace, passes, code generation, the C compiler) in a fresh process with an empty kernel
cache, one process per round, the workloads interleaved: what a person waits the first
time. Every jitted result is checked against eager before it is timed. Targets are judged
on the medians: met, missed or undecided.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import timing  # noqa: E402
from timing import N_LARGE  # noqa: E402
from workloads import numpy_mlp_sgd_step, train_step  # noqa: E402

import execmode as em  # noqa: E402
from execmode.codegen import backend_status  # noqa: E402


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
    import execmode.jit_driver.compiled_segment as compiled_segment

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
    original = compiled_segment.compile_graph

    def without_program(lowered, graph_id, backend=None):
        plan = original(lowered, graph_id, backend)
        plan.program = None
        return plan

    compiled_segment.compile_graph = without_program
    try:
        replay_jit(x, y)
    finally:
        compiled_segment.compile_graph = original
    program_jit(x, y)
    plan = next(iter(program_jit._segments.values())).plan
    state = {"plan": plan, "model": program_model}
    return (numpy_fn, lambda: eager_step(x, y), lambda: replay_jit(x, y),
            lambda: program_jit(x, y), state)


class ProgramRuns:
    """The program's own count of native runs over the timed rounds' steps (warm-up calls
    left out): 1.00 when every step taken was one native call."""

    def __init__(self, plan):
        self.program = plan.program
        self.runs = self.steps = self.at_start = 0

    def before_round(self, name) -> None:
        if name == "program" and self.program is not None:
            self.at_start = self.program.calls

    def after_round(self, name, _round, steps) -> None:
        if name == "program" and self.program is not None:
            self.runs += self.program.calls - self.at_start
            self.steps += steps

    def per_step(self) -> float:
        return self.runs / max(self.steps, 1)


def run_train_steps(report, quick, rounds) -> None:
    """mlp_train_step (SGD, Adam): NumPy, eager, plan replay, one-call program, rounds
    interleaved as in run()."""
    rows = []
    calls = 20 if quick else 200
    for optimizer in ("sgd", "adam"):
        numpy_fn, eager_fn, replay_fn, program_fn, state = _train_step_variants(optimizer,
                                                                               quick)
        plan = state["plan"]
        candidates = {"numpy": numpy_fn, "eager": eager_fn, "replay": replay_fn,
                      "program": program_fn}
        runs = ProgramRuns(plan)
        spreads = timing.measure({k: fn for k, fn in candidates.items() if fn is not None},
                                 rounds=rounds, calls=calls, warmup=1,
                                 before_round=runs.before_round, after_round=runs.after_round)
        program = spreads["program"]
        numpy_spread = spreads.get("numpy")
        rows.append([f"mlp_train_step ({optimizer})", timing.time_cell(numpy_spread),
                     timing.time_cell(spreads["eager"]), timing.time_cell(spreads["replay"]),
                     timing.time_cell(program),
                     timing.ratio_cell(spreads["replay"], program, "replay", "program"),
                     timing.ratio_cell(spreads["eager"], program, "eager", "program"),
                     timing.ratio_cell(numpy_spread, program, "NumPy", "program"),
                     f"{runs.per_step():.2f}"])
        if plan.program_reason:
            report.note(f"mlp_train_step ({optimizer}): no program: {plan.program_reason}")
    report.table(["step (64x512 -> 256 -> 128 -> 2, float32)", "NumPy by hand", "eager",
                  "jit plan replay (before)", "jit one-call program (after)",
                  "replay / program", "eager / program", "NumPy / program",
                  "program calls per step"], rows,
                 title=f"Per step: median (interquartile range) of {rounds} interleaved "
                       "rounds; ratios > 1: the program is faster")


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

def run(name, quick, rounds) -> dict:
    """Steady state of one workload: {candidate: Spread} (ns per call)."""
    numpy_fn, eager_fn, jit_fn, calls = WORKLOADS[name](quick)
    jit_fn()  # the first call here is warm-up; its cold time is measured in fresh processes
    if name in CHECKED_AGAINST_EAGER:
        check(jit_fn(), eager_fn(), rtol=1e-4, atol=1e-4)
    candidates = {"numpy": numpy_fn, "eager": eager_fn, "jit": jit_fn}
    if name == "ew_chain_large":
        # The bandwidth floor in the same rounds: a copy of one input (16M float32).
        candidates["copy"] = timing.copy_candidate(N_LARGE)
    return timing.measure(candidates, rounds=rounds, calls=calls, warmup=1)


def _ew_floor(spreads):
    """tanh(x*a+b)*0.5 + relu(x) reads three 64 MB inputs and writes one: twice a copy."""
    return timing.scaled(spreads["copy"], 4 * N_LARGE * 4 / timing.copy_bytes(N_LARGE))


def targets(name, spreads, first) -> tuple:
    """(the target in words, its verdicts) on the medians."""
    jit, eager, numpy_ = spreads["jit"], spreads["eager"], spreads["numpy"]

    def faster_than_numpy():
        return timing.judge_ratio(jit, numpy_, 1.0, a_name="jit", b_name="NumPy")

    if name in ("matpow", "matpow_program"):
        return "jit <= 0.1x eager and < NumPy", (
            timing.judge_ratio(jit, eager, 0.1, a_name="jit", b_name="eager"),
            faster_than_numpy())
    if name in ("mlp_forward", "fancy_func"):
        return "jit < NumPy", (faster_than_numpy(),)
    if name == "ew_chain_large":
        return "jit <= 1.3x floor", (timing.judge_ratio(jit, _ew_floor(spreads), 1.3,
                                                         a_name="jit", b_name="floor"),)
    if name == "mlp_train_step":
        return "jit < NumPy; first call <= 1 s", (
            faster_than_numpy(),
            timing.judge_value(first, 1e9, name="first call") if first else None)
    return "-", ()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), help="workloads")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for large kernels (EXECMODE_NUM_THREADS; default 1: "
                        "single-threaded, as the peers are compared)")
    parser.add_argument("--steps", action="store_true",
                        help="only the training steps: NumPy, eager, plan replay, program")
    parser.add_argument("--no-first-call", action="store_true",
                        help="leave out the first calls (fresh processes)")
    parser.add_argument("--first-call", choices=sorted(WORKLOADS), help=argparse.SUPPRESS)
    timing.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.threads < 1:
        parser.error("--threads must be a positive integer")
    # Before anything reads it; the fresh processes of the first calls inherit it.
    os.environ["EXECMODE_NUM_THREADS"] = str(args.threads)
    if args.first_call:
        timing.report_first_call(WORKLOADS[args.first_call](True)[2])
        return 0
    rounds = timing.rounds_of(args)
    report = timing.Report(args)
    print("# " + str(backend_status()).replace("\n", "\n# "))
    if args.steps:
        timing.steady_state_operators()
        run_train_steps(report, args.quick, rounds)
        report.finish()
        return 0

    names = args.only or list(WORKLOADS)
    timing.steady_state_operators()
    firsts = {}
    if not args.no_first_call:
        print(f"first calls: {len(names)} workloads x {rounds} fresh processes...", flush=True)
        firsts = timing.first_call_spreads(
            {name: timing.child_argv(__file__, "--first-call", name) for name in names},
            rounds)
    rows, floor = [], None
    for name in names:
        spreads = run(name, args.quick, rounds)
        first = firsts.get(name)
        jit, eager, numpy_ = spreads["jit"], spreads["eager"], spreads["numpy"]
        print(f"  {name:15s} numpy {timing.time_cell(numpy_)}, eager {timing.time_cell(eager)}"
              f", jit {timing.time_cell(jit)}, first call {timing.time_cell(first)}", flush=True)
        target, verdicts = targets(name, spreads, first)
        rows.append([name, timing.time_cell(numpy_), timing.time_cell(eager),
                     timing.time_cell(jit), timing.ratio_cell(numpy_, jit, "NumPy", "jit"),
                     timing.ratio_cell(eager, jit, "eager", "jit"), timing.time_cell(first),
                     target, timing.goal_cell(*verdicts)])
        if "copy" in spreads:
            floor = (spreads["copy"], _ew_floor(spreads))
    if floor is not None:
        rows.append(["bandwidth floor (copy 16M f32)", timing.time_cell(floor[0]), "", "", "",
                     "", "", f"ew floor {timing.time_cell(floor[1])}", ""])
    report.table(["workload", "NumPy op by op", "execmode eager", "execmode jit",
                  "NumPy / jit", "eager / jit", "jit first call (fresh process, cold cache)",
                  "target", "met"], rows,
                 title=f"Per call: median (interquartile range) of {rounds} interleaved rounds; "
                       "ratios > 1: jit is faster")
    report.note("matpow_program calls the compiled whole-graph program directly, without "
                "em.jit's call path (what em.jit's matpow row adds on top of it).")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
