"""execmode's graph mode against its peers on the CPU, side by side in one run: NumPy op by
op, jax.jit and PyTorch (eager), each where it is installed (``pip install -e '.[bench]'``).

    python benchmarks/bench_peers.py             # every row (~10 minutes on 2 cores)
    python benchmarks/bench_peers.py --quick     # fewer calls, 5 rounds
    python benchmarks/bench_peers.py --only relu_chain mlp_train_step
    python benchmarks/bench_peers.py --only first  # the first-call rows only
    python benchmarks/bench_peers.py --threads 2 # every framework on 2 threads

Single-threaded by default, every framework alike: the process is pinned to one CPU
(``--threads N``: N CPUs), and BLAS, XLA's CPU client and PyTorch's intra-op pool are asked
for that many threads before any of them is imported; execmode's kernels too.
Each peer's result is checked against NumPy's before it is timed. Steady state: the
frameworks in interleaved rounds of many calls (benchmarks/timing.py), per call, the
median and interquartile range of the rounds. "first call" rows time one call of a
function never traced before, compile included, each in a fresh process (execmode with an
empty kernel cache: no kernel, no fast-entry extension built before; the C compiler's time
is in it, as in the user's wait), one process per framework and round, interleaved. The
"vs jax.jit" column is the ratio the performance issue sets goals in (< 1: execmode is
faster), or undecided when the rounds cannot carry one; goals are judged on the medians.
A peer that is not installed leaves its column out, and the report says why.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def _single_threaded(threads: int) -> None:
    """Thread counts for every framework, before any of them is imported. The process is
    also pinned to ``threads`` CPUs: XLA's CPU client ignored every flag asked of it and
    ran a 64x2048 @ 2048x2048 matmul on both cores (CPU time 1.94x the wall time; pinned,
    6.3 ms instead of 3.9 ms), which made jax.jit look 2x faster than any one-thread BLAS."""
    usable = sorted(os.sched_getaffinity(0))
    if threads < len(usable):
        os.sched_setaffinity(0, usable[-threads:])
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    os.environ["EXECMODE_NUM_THREADS"] = str(threads)
    if threads == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false"
                                   " intra_op_parallelism_threads=1").strip()
    os.environ["JAX_PLATFORMS"] = "cpu"
    if not _ARGS.first_call:
        # A fresh cache for the steady rows (a first-call child gets an empty one from its
        # parent, benchmarks/timing.py).
        os.environ["EXECMODE_CACHE_DIR"] = tempfile.mkdtemp(prefix="execmode-bench-cache-")


_ARGS = None


def _parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*",
                        help="row names, or 'first' for the first-call rows (default: all)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--first-call", nargs=2, metavar=("ROW", "PEER"),
                        help=argparse.SUPPRESS)
    # timing.add_arguments' options, spelled out: importing timing loads NumPy, whose
    # OpenBLAS reads its thread count once, before _single_threaded has set it.
    parser.add_argument("--quick", action="store_true", help="fewer calls, 5 rounds")
    parser.add_argument("--rounds", type=int, default=None,
                        help="interleaved rounds (default 7, quick 5; at least 5)")
    parser.add_argument("--markdown", metavar="FILE",
                        help="also write the tables, stamped with the machine, to FILE")
    return parser.parse_args(argv)


if __name__ == "__main__":
    _ARGS = _parse()
    _single_threaded(_ARGS.threads)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import timing  # noqa: E402
from workloads import numpy_mlp_sgd_step, train_step  # noqa: E402

import execmode as em  # noqa: E402

MISSING_PEERS: dict = {}  # name: why it is left out


def _optional(name):
    try:
        return __import__(name)
    except Exception as exc:  # noqa: BLE001 - a peer that does not import is left out
        MISSING_PEERS[name] = repr(exc)
        return None


jax = _optional("jax")
torch = _optional("torch")
if jax is not None:
    import jax.numpy as jnp
if torch is not None:
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))


def _np(value):
    if isinstance(value, em.Tensor):
        return value.numpy()
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().numpy()
    return np.asarray(value)


def _check(name, got, want, rtol=1e-4, atol=1e-4):
    np.testing.assert_allclose(_np(got), _np(want), rtol=rtol, atol=atol,
                               err_msg=f"{name}: a peer's result differs from NumPy's")


def _jax_ready(fn):
    return lambda: fn().block_until_ready()


# --- workloads: each returns {framework: zero-argument callable}, the NumPy reference and
# --- calls per round. Every callable computes the same function of the same data.

def relu_chain(quick):
    rng = np.random.default_rng(1)
    w_np = (rng.standard_normal((100, 100)) * (1.4 / 10)).astype(np.float32)
    x_np = rng.standard_normal((100, 100)).astype(np.float32)

    def chain(x, w, relu):
        for _ in range(100):
            x = relu(x @ w)
        return x

    w, x = em.tensor(w_np), em.tensor(x_np)
    jitted = em.jit(lambda x: chain(x, w, em.relu))
    fns = {"numpy": lambda: chain(x_np, w_np, lambda v: np.maximum(v, 0)),
           "execmode": lambda: jitted(x)}
    if jax is not None:
        wj, xj = jnp.asarray(w_np), jnp.asarray(x_np)
        jf = jax.jit(lambda x: chain(x, wj, jax.nn.relu))
        fns["jax"] = _jax_ready(lambda: jf(xj))
    if torch is not None:
        wt, xt = torch.from_numpy(w_np), torch.from_numpy(x_np)
        fns["torch"] = lambda: chain(xt, wt, torch.relu)
    return fns, 10 if quick else 100


def _mlp_weights(widths, seed):
    rng = np.random.default_rng(seed)
    return [((rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32),
             (rng.standard_normal(o) * 0.1).astype(np.float32))
            for i, o in zip(widths[:-1], widths[1:])]


def _forward(x, weights, relu):
    for k, (w, b) in enumerate(weights):
        x = x @ w.T + b
        if k < len(weights) - 1:
            x = relu(x)
    return x


def _em_mlp(weights):
    model = em.nn.MLP([weights[0][0].shape[1]] + [w.shape[0] for w, _ in weights])
    layers = [layer for layer in model if hasattr(layer, "weight")]
    for layer, (w, b) in zip(layers, weights):
        layer.weight._data[...] = w
        layer.bias._data[...] = b
    return model


def mlp_forward_width(width):
    """MLP width -> width -> width -> 10, batch 64, no grad."""
    def workload(quick):
        weights = _mlp_weights([width, width, width, 10], 2)
        x_np = np.random.default_rng(3).standard_normal((64, width)).astype(np.float32)
        model = _em_mlp(weights)
        with em.no_grad():
            jitted = em.jit(lambda x: model(x))
        x = em.tensor(x_np)

        def ours():
            with em.no_grad():
                return jitted(x)

        fns = {"numpy": lambda: _forward(x_np, weights, lambda v: np.maximum(v, 0)),
               "execmode": ours}
        if jax is not None:
            wj = [(jnp.asarray(w), jnp.asarray(b)) for w, b in weights]
            xj = jnp.asarray(x_np)
            jf = jax.jit(lambda x: _forward(x, wj, jax.nn.relu))
            fns["jax"] = _jax_ready(lambda: jf(xj))
        if torch is not None:
            wt = [(torch.from_numpy(w), torch.from_numpy(b)) for w, b in weights]
            xt = torch.from_numpy(x_np)

            def torch_forward():
                with torch.no_grad():
                    return _forward(xt, wt, torch.relu)

            fns["torch"] = torch_forward
        calls = max(10, int(2e8 / (64 * width * width * 3))) // (10 if quick else 1)
        return fns, max(calls, 5)
    return workload


def mlp_train_step(quick):
    """MLP 512-256-128-2, batch 64, MSE, plain SGD (lr 0.01): one step per call. Every
    framework starts from the same weights and takes the same steps, so the weights after
    each round agree."""
    weights = _mlp_weights([512, 256, 128, 2], 4)
    rng = np.random.default_rng(4)
    x_np = rng.standard_normal((64, 512)).astype(np.float32)
    y_np = rng.standard_normal((64, 2)).astype(np.float32)
    model = _em_mlp(weights)
    opt = em.optim.SGD(model.parameters(), lr=0.01)
    x, y = em.tensor(x_np), em.tensor(y_np)

    jitted = em.jit(train_step(model, opt))
    np_state = [[w.copy(), b.copy()] for w, b in weights]

    def numpy_step():
        return numpy_mlp_sgd_step(np_state, x_np, y_np)

    fns = {"numpy": numpy_step, "execmode": lambda: jitted(x, y)}
    if jax is not None:
        params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in weights]
        xj, yj = jnp.asarray(x_np), jnp.asarray(y_np)

        def loss_fn(params, x, y):
            return jnp.mean((_forward(x, params, jax.nn.relu) - y) ** 2)

        @jax.jit
        def jax_step(params, x, y):
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
            return loss, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)

        state = {"params": params}

        def run_jax():
            loss, state["params"] = jax_step(state["params"], xj, yj)
            return loss.block_until_ready()

        fns["jax"] = run_jax
    if torch is not None:
        tm = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.ReLU(),
                                 torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                 torch.nn.Linear(128, 2))
        with torch.no_grad():
            for layer, (w, b) in zip([m for m in tm if hasattr(m, "weight")], weights):
                layer.weight.copy_(torch.from_numpy(w))
                layer.bias.copy_(torch.from_numpy(b))
        topt = torch.optim.SGD(tm.parameters(), lr=0.01)
        xt, yt = torch.from_numpy(x_np), torch.from_numpy(y_np)

        def torch_step():
            loss = torch.nn.functional.mse_loss(tm(xt), yt)
            topt.zero_grad()
            loss.backward()
            topt.step()
            return loss

        fns["torch"] = torch_step
    return fns, 20 if quick else 200


def matpow(quick):
    rng = np.random.default_rng(0)
    x_np = rng.uniform(0.0, 0.1, (10, 10)).astype(np.float32)

    def power(x, eye, matmul):
        result = eye
        for _ in range(100):
            result = matmul(x, result)
        return result

    x = em.tensor(x_np)
    jitted = em.jit(lambda x: power(x, em.eye(10, dtype=em.float32), em.matmul))
    fns = {"numpy": lambda: power(x_np, np.eye(10, dtype=np.float32), np.matmul),
           "execmode": lambda: jitted(x)}
    if jax is not None:
        xj = jnp.asarray(x_np)
        jf = jax.jit(lambda x: power(x, jnp.eye(10, dtype=jnp.float32), jnp.matmul))
        fns["jax"] = _jax_ready(lambda: jf(xj))
    if torch is not None:
        xt = torch.from_numpy(x_np)
        fns["torch"] = lambda: power(xt, torch.eye(10), torch.matmul)
    return fns, 100 if quick else 1000


def fancy_func(quick):
    arrays = [np.array([v], np.float32) for v in (1.0, 2.0, 3.0, 4.0)]

    def fancy(a, b, c, d):
        return (a + b) + (c + d)

    tensors = [em.tensor(a) for a in arrays]
    jitted = em.jit(fancy)
    fns = {"numpy": lambda: fancy(*arrays), "execmode": lambda: jitted(*tensors)}
    if jax is not None:
        aj = [jnp.asarray(a) for a in arrays]
        jf = jax.jit(fancy)
        fns["jax"] = _jax_ready(lambda: jf(*aj))
    if torch is not None:
        at = [torch.from_numpy(a) for a in arrays]
        fns["torch"] = lambda: fancy(*at)
    return fns, 1000 if quick else 10000


def _transcendental_chain(n_ops):
    """n_ops elementwise ops, a third of them tanh: one fused kernel in execmode and XLA."""
    def chain(x, tanh):
        for k in range(n_ops):
            x = tanh(x) if k % 3 == 0 else (x * 1.0001 if k % 3 == 1 else x + 0.001)
        return x
    return chain


def chain_1000_steady(quick):
    """A 1000-op elementwise chain (333 tanh) over 64K float32: the fused kernel's
    steady-state speed."""
    chain = _transcendental_chain(1000)
    x_np = np.random.default_rng(5).standard_normal(1 << 16).astype(np.float32)
    x = em.tensor(x_np)
    jitted = em.jit(lambda x: chain(x, em.tanh))
    fns = {"numpy": lambda: chain(x_np, np.tanh), "execmode": lambda: jitted(x)}
    if jax is not None:
        xj = jnp.asarray(x_np)
        jf = jax.jit(lambda x: chain(x, jnp.tanh))
        fns["jax"] = _jax_ready(lambda: jf(xj))
    if torch is not None:
        xt = torch.from_numpy(x_np)
        fns["torch"] = lambda: chain(xt, torch.tanh)
    return fns, 3 if quick else 20


def ew_chain_large(quick):
    rng = np.random.default_rng(3)
    n = 16 * 1024 * 1024
    x_np, a_np, b_np = (rng.standard_normal(n, dtype=np.float32) for _ in range(3))

    def chain(x, a, b, tanh, relu):
        return tanh(x * a + b) * 0.5 + relu(x)

    x, a, b = em.tensor(x_np), em.tensor(a_np), em.tensor(b_np)
    jitted = em.jit(lambda x, a, b: chain(x, a, b, em.tanh, em.relu))
    fns = {"numpy": lambda: chain(x_np, a_np, b_np, np.tanh, lambda v: np.maximum(v, 0)),
           "execmode": lambda: jitted(x, a, b)}
    if jax is not None:
        xj, aj, bj = (jnp.asarray(v) for v in (x_np, a_np, b_np))
        jf = jax.jit(lambda x, a, b: chain(x, a, b, jnp.tanh, jax.nn.relu))
        fns["jax"] = _jax_ready(lambda: jf(xj, aj, bj))
    if torch is not None:
        xt, at, bt = (torch.from_numpy(v) for v in (x_np, a_np, b_np))
        fns["torch"] = lambda: chain(xt, at, bt, torch.tanh, torch.relu)
    return fns, 2 if quick else 10


STEADY = {
    "relu_chain": (relu_chain, 0.9),
    "mlp_train_step": (mlp_train_step, 0.8),
    "matpow": (matpow, None),
    "fancy_func": (fancy_func, None),
    "ew_chain_large (16M)": (ew_chain_large, None),
    "chain_1000_steady": (chain_1000_steady, 1.5),
    **{f"mlp_forward w={w}": (mlp_forward_width(w), 1.0) for w in (64, 256, 1024, 2048)},
}


# --- first calls: trace + compile + run once, a function never seen before -----------------

def _chain_plain(n_ops):
    def chain(x):
        for k in range(n_ops):
            x = x * 1.0001 if k % 2 == 0 else x + 0.5
        return x
    return chain


def _ladder(n_ops, matmul, ones, scale):
    """n_ops/8 small matmuls made at once, multiplied together, then again: the 'wide'
    shape of bench_compile_scaling.py (a ladder of small matmuls)."""
    n = max(2, n_ops // 8)

    def wide(x):
        w = ones
        ys = [matmul(x, scale(w, float(i))) for i in range(n)]
        s = ys[0]
        for y in ys[1:]:
            s = matmul(s, y) * 0.25
        zs = [matmul(s, w + float(i)) for i in range(n)]
        t = zs[0]
        for z in zs[1:]:
            t = matmul(t, z) * 0.125
        return t
    return wide


def first_chain_5000():
    x_np = np.random.default_rng(6).standard_normal(256).astype(np.float32)
    chain = _chain_plain(5000)
    fns = {"execmode": lambda: em.jit(chain)(em.tensor(x_np))}
    if jax is not None:
        fns["jax"] = lambda: jax.jit(chain)(jnp.asarray(x_np)).block_until_ready()
    return fns, chain(x_np)


def first_matmuls_1000():
    x_np = np.full((4, 4), 0.25, np.float32)
    want = _ladder(1000, np.matmul, np.ones((4, 4), np.float32), lambda w, s: w * s)(x_np)
    w = em.tensor(np.ones((4, 4), np.float32))
    fns = {"execmode": lambda: em.jit(_ladder(1000, em.matmul, w, lambda w, s: w * s))(
        em.tensor(x_np))}
    if jax is not None:
        wj = jnp.ones((4, 4), jnp.float32)
        fns["jax"] = lambda: jax.jit(_ladder(1000, jnp.matmul, wj, lambda w, s: w * s))(
            jnp.asarray(x_np)).block_until_ready()
    return fns, want


def first_chain_1000_tanh():
    """chain_1000_steady's function (333 tanh) called once: its kernel's compile."""
    x_np = np.random.default_rng(5).standard_normal(1 << 16).astype(np.float32)
    chain = _transcendental_chain(1000)
    fns = {"execmode": lambda: em.jit(lambda x: chain(x, em.tanh))(em.tensor(x_np))}
    if jax is not None:
        fns["jax"] = lambda: jax.jit(lambda x: chain(x, jnp.tanh))(
            jnp.asarray(x_np)).block_until_ready()
    return fns, chain(x_np, np.tanh)


FIRST = {
    "chain of 5000 ops, first call": (first_chain_5000, 1.0),
    "1000 small matmuls, first call": (first_matmuls_1000, 1.5),
    "chain_1000_steady's function, first call": (first_chain_1000_tanh, None),
}


# --- running -------------------------------------------------------------------------------

PEERS = ("numpy", "execmode", "jax", "torch")
HEADINGS = {"numpy": "NumPy", "execmode": "execmode em.jit", "jax": "jax.jit",
            "torch": "torch eager"}


def run_steady(name, workload, quick, rounds) -> dict:
    """{peer: Spread} (ns per call)."""
    fns, calls = workload(quick)
    want = fns["numpy"]()
    for peer, fn in fns.items():
        if peer != "numpy":
            _check(f"{name} ({peer})", fn(), want, rtol=2e-3, atol=2e-3)
    if name == "mlp_train_step":
        fns, calls = workload(quick)  # fresh weights: every framework takes the same steps
    return timing.measure(fns, rounds=rounds, calls=calls, warmup=1)


def first_call_child(row: str, peer: str) -> None:
    """In a fresh process: one peer's first call of one FIRST row, checked, reported."""
    fns, want = FIRST[row][0]()
    t0 = time.perf_counter()
    got = fns[peer]()
    seconds = time.perf_counter() - t0
    _check(f"first call ({peer})", got, want, rtol=1e-3, atol=1e-3)
    timing.report_child_result(seconds)


def run_first(row: str, rounds: int) -> dict:
    """{peer: Spread}: each peer's first call, one fresh process per peer and round."""
    fns, _ = FIRST[row][0]()
    threads = ["--threads", str((_ARGS or _parse()).threads)]
    return timing.first_call_spreads(
        {peer: timing.child_argv(__file__, *threads, "--first-call", row, peer)
         for peer in fns}, rounds)


def _versus_jax(spreads, goal) -> list:
    """The "vs jax.jit" cell and, with a goal, its verdict (both on the medians)."""
    if "jax" not in spreads:
        return []
    ours, theirs = spreads["execmode"], spreads["jax"]
    ratio = timing.ratio_cell(ours, theirs, "execmode", "jax.jit")
    if goal is None:
        return [ratio, "-", "-"]
    verdict = timing.judge_ratio(ours, theirs, goal, a_name="execmode", b_name="jax.jit")
    return [ratio, f"<= {goal}x", timing.goal_cell(verdict)]


def _selected(name: str, args, first: bool) -> bool:
    if not args.only:
        return True
    return name in args.only or name.split(" ")[0] in args.only or (first and "first" in
                                                                       args.only)


def main() -> int:
    args = _ARGS or _parse()
    if args.first_call:
        first_call_child(*args.first_call)
        return 0
    rounds = timing.rounds_of(args)
    report = timing.Report(args)
    versions = [f"{name} {module.__version__}" for name, module in (("jax", jax),
                                                                   ("torch", torch)) if module]
    if versions:
        report.note(f"Peers: {', '.join(versions)}; {args.threads} thread(s) each, the process "
                    f"pinned to {len(os.sched_getaffinity(0))} CPU(s).")
    for name, why in MISSING_PEERS.items():
        report.note(f"{name} is not installed here ({why}): its column is left out "
                    "(`pip install -e '.[bench]'`).")
    peers = [p for p in PEERS if p not in ("jax", "torch") or p not in MISSING_PEERS]
    versus = ["vs jax.jit", "goal vs jax.jit", "met"] if "jax" in peers else []

    rows = []
    for name, (workload, goal) in STEADY.items():
        if not _selected(name, args, first=False):
            continue
        spreads = run_steady(name, workload, args.quick, rounds)
        print(f"  {name}: " + ", ".join(f"{p} {timing.time_cell(s)}" for p, s in spreads.items()),
              flush=True)
        rows.append([name, *(timing.time_cell(spreads.get(p)) for p in peers),
                     timing.ratio_cell(spreads["execmode"], spreads["numpy"], "execmode",
                                       "NumPy"), *_versus_jax(spreads, goal)])
    if rows:
        report.table(["workload", *(HEADINGS[p] for p in peers), "vs NumPy", *versus], rows,
                     title=f"Steady state, per call: median (interquartile range) of {rounds} "
                           "interleaved rounds; ratios are execmode's time over the peer's")

    first_rounds = args.rounds or timing.MIN_ROUNDS
    firsts = []
    for name, (_, goal) in FIRST.items():
        if not _selected(name, args, first=True):
            continue
        spreads = run_first(name, first_rounds)
        print(f"  {name}: " + ", ".join(f"{p} {timing.time_cell(s)}" for p, s in spreads.items()),
              flush=True)
        firsts.append([name, *(timing.time_cell(spreads.get(p)) for p in ("execmode", "jax")
                               if p in peers), *_versus_jax(spreads, goal)])
    if firsts:
        report.table(["first call (a fresh process each)", HEADINGS["execmode"],
                      *([HEADINGS["jax"]] if "jax" in peers else []), *versus], firsts,
                     title=f"First calls: median (interquartile range) of {first_rounds} "
                           "fresh processes each, interleaved; execmode's kernel cache empty")
    report.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
