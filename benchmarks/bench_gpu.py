"""The GPU rows: execmode on CuPy against raw CuPy, PyTorch and jax.jit on the same card, in
one run, as ratios.

    python benchmarks/bench_gpu.py            # the full run (~1 minute on an H100)
    python benchmarks/bench_gpu.py --quick    # 5 rounds

Rows (each result is checked against raw CuPy, or against eager, before it is timed):

* **copy bandwidth**: a device-to-device copy of one 256 MiB input (bytes read + bytes
  written), timed in the fused chain's rounds: the floor that the chain is measured
  against (METHOD: measure the ceiling, don't quote it);
* **fused chain**: ``tanh(x*a + b)*0.5 + relu(x)`` over 64M float32, em.jit's one CUDA
  kernel against CuPy op by op, execmode eager, jax.jit and torch (eager). The floor is
  3 reads + 1 write at the copy bandwidth; the goal is >= 80% of it;
* **eager per op**: the host time of one small op (a 1-element and a 1000-element add)
  through execmode eager against the same CuPy call (goal <= 1.2x), and ``em.exp``;
* **MLP train step**: MLP 512-256-128-2, batch 64, SGD: execmode eager, em.jit, torch.

The things a row compares run in interleaved rounds (benchmarks/timing.py); each value is
the median (interquartile range) of the rounds, a ratio only when the rounds carry one,
goals judged on the medians. Device time: CUDA events around 10 calls per round after a
warm-up (jax.jit, on its own stream: host clocks and its own ``block_until_ready``).
Host-bound rows (eager per op, the train step): host clocks around many calls, one
synchronize at the end of each round, inside its time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import timing  # noqa: E402
from workloads import train_step  # noqa: E402

import execmode as em  # noqa: E402

ROWS: list[tuple[str, str, str]] = []


def row(name: str, value: str, note: str = "") -> None:
    ROWS.append((name, value, note))
    print(f"{name}: {value}  {note}", flush=True)


def device_spreads(cp, fns: dict, calls: int, rounds: int) -> dict:
    """{name: Spread} of device ns per call: CUDA events around ``calls`` calls of each, one
    sample per round, the candidates interleaved. A candidate with a ``host_round``
    attribute (jax.jit, on its own stream) times its own round instead."""
    for fn in fns.values():
        fn()
    cp.cuda.get_current_stream().synchronize()

    def one_round(fn):
        host_round = getattr(fn, "host_round", None)
        if host_round is not None:
            return host_round(calls)
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) / calls * 1e6  # ms -> ns

    found = timing.run_interleaved({name: (lambda fn=fn: one_round(fn))
                                    for name, fn in fns.items()}, rounds=rounds)
    return {name: timing.Spread.of(samples) for name, samples in found.items()}


def host_spreads(cp, fns: dict, calls: int, rounds: int) -> dict:
    """{name: Spread} of host ns per call, interleaved rounds, a synchronize ending each."""
    return timing.measure(fns, rounds=rounds, calls=calls, warmup=1,
                          sync=cp.cuda.get_current_stream().synchronize)


def ratio_note(a, b, a_name: str, b_name: str, goal: float | None = None) -> str:
    text = f"{a_name} / {b_name} {timing.ratio_cell(a, b, a_name, b_name)}"
    if goal is not None:
        verdict = timing.judge_ratio(a, b, goal, a_name=a_name, b_name=b_name)
        text += f" (goal <= {goal}x: {timing.goal_cell(verdict)})"
    return text


def optional(name):
    try:
        return __import__(name)
    except Exception as exc:  # noqa: BLE001 - a peer that does not import is left out
        print(f"({name} not used: {exc})")
        return None


def fused_chain(cp, rounds, torch, jax):
    n = 64 * 1024 * 1024
    rng = cp.random.default_rng(3)
    xc, ac, bc = (rng.standard_normal(n, dtype=cp.float32) for _ in range(3))
    x, a, b = (em.tensor(v, device="cuda") for v in (xc, ac, bc))
    copied = cp.empty_like(xc)

    def chain(x, a, b):
        return em.tanh(x * a + b) * 0.5 + em.relu(x)

    def cupy_chain():
        return cp.tanh(xc * ac + bc) * cp.float32(0.5) + cp.maximum(xc, 0)

    want = cupy_chain()
    jitted = em.jit(chain)
    got = jitted(x, a, b)
    np.testing.assert_allclose(cp.asnumpy(got._data[:1 << 20]), cp.asnumpy(want[:1 << 20]),
                               rtol=2e-6, atol=2e-6)
    # The floor shares the rounds: a device copy of one input (one read, one write); the
    # chain reads three inputs and writes one, twice the copy's bytes.
    fns = {"copy (the floor)": lambda: cp.copyto(copied, xc),
           "CuPy op by op": cupy_chain,
           "execmode eager": lambda: chain(x, a, b),
           "execmode em.jit": lambda: jitted(x, a, b)}
    if torch is not None:
        xt, at, bt = (torch.as_tensor(v, device="cuda") for v in (xc, ac, bc))
        fns["torch eager"] = lambda: torch.tanh(xt * at + bt) * 0.5 + torch.relu(xt)
    if jax is not None:
        import jax.numpy as jnp
        xj, aj, bj = (jnp.asarray(cp.asnumpy(v)) for v in (xc, ac, bc))
        jf = jax.jit(lambda x, a, b: jnp.tanh(x * a + b) * 0.5 + jnp.maximum(x, 0))
        np.testing.assert_allclose(np.asarray(jf(xj, aj, bj))[:1 << 20],
                                   cp.asnumpy(want[:1 << 20]), rtol=2e-6, atol=2e-6)

        def jax_chain():
            return jf(xj, aj, bj)

        def jax_round(calls):
            # jax runs on its own stream: its own block_until_ready ends the round.
            t0 = time.perf_counter()
            for _ in range(calls):
                r = jax_chain()
            r.block_until_ready()
            return (time.perf_counter() - t0) / calls * 1e9

        jax_chain.host_round = jax_round
        fns["jax.jit"] = jax_chain
    spreads = device_spreads(cp, fns, 10, rounds)
    copy = spreads.pop("copy (the floor)")
    row("copy bandwidth (256 MiB, read + write)",
        f"{2 * xc.nbytes / (copy.median / 1e9) / 1e9:.0f} GB/s", "median")
    floor = timing.scaled(copy, 2)
    for name, spread in spreads.items():
        note = f"{floor.median / spread.median * 100:.0f}% of the copy floor (medians; " \
               f"floor {timing.time_cell(floor)})"
        if name == "execmode em.jit":
            # >= 80% of the floor: the kernel's time at most 1.25x the floor's.
            verdict = timing.judge_ratio(spread, floor, 1.25, a_name=name, b_name="floor")
            note += f"; goal >= 80%: {timing.goal_cell(verdict)}"
        row(f"fused chain 64M f32: {name}", timing.time_cell(spread), note)


def eager_add_and_exp(cp, n, rounds, torch):
    ac = cp.ones(n, cp.float32)
    bc = cp.ones(n, cp.float32)
    a, b = em.tensor(ac, device="cuda"), em.tensor(bc, device="cuda")
    assert float((a + b).sum().item()) == 2.0 * n
    fns = {"CuPy": lambda: ac + bc, "execmode a+b": lambda: a + b,
           "em.add": lambda: em.add(a, b), "CuPy exp": lambda: cp.exp(ac),
           "execmode em.exp": lambda: em.exp(a)}
    if torch is not None:
        at, bt = torch.as_tensor(ac, device="cuda"), torch.as_tensor(bc, device="cuda")
        fns["torch"] = lambda: at + bt
    s = host_spreads(cp, fns, 2000, rounds)
    row(f"eager add, {n} element(s): CuPy / execmode a+b / em.add",
        " / ".join(timing.time_cell(s[k]) for k in ("CuPy", "execmode a+b", "em.add")),
        ratio_note(s["execmode a+b"], s["CuPy"], "a+b", "CuPy", 1.2) + "; "
        + ratio_note(s["em.add"], s["CuPy"], "em.add", "CuPy", 1.2))
    if torch is not None:
        row(f"eager add, {n} element(s): torch (for reference)", timing.time_cell(s["torch"]))
    row(f"eager exp, {n} element(s): CuPy / execmode",
        f"{timing.time_cell(s['CuPy exp'])} / {timing.time_cell(s['execmode em.exp'])}",
        ratio_note(s["execmode em.exp"], s["CuPy exp"], "em.exp", "CuPy", 1.2))


def eager_per_op(cp, rounds, torch):
    for n in (1, 1000):
        eager_add_and_exp(cp, n, rounds, torch)
    a = em.ones(1000, device="cuda")
    jitted = em.jit(lambda a: em.exp(a) * 2.0)
    np.testing.assert_allclose(jitted(a).numpy(), np.exp(1.0) * 2.0, rtol=1e-6)
    single = em.jit(em.exp)
    np.testing.assert_allclose(single(a).numpy(), np.exp(1.0), rtol=1e-6)
    s = host_spreads(cp, {"eager chain": lambda: em.exp(a) * 2.0, "jit chain": lambda: jitted(a),
                          "eager exp": lambda: em.exp(a), "jit exp": lambda: single(a)},
                     2000, rounds)
    row("exp(a) * 2.0, 1000 elements: eager (2 ops) / em.jit (1 kernel)",
        f"{timing.time_cell(s['eager chain'])} / {timing.time_cell(s['jit chain'])}",
        ratio_note(s["jit chain"], s["eager chain"], "jit", "eager"))
    row("em.exp, 1000 elements: eager / em.jit(em.exp)",
        f"{timing.time_cell(s['eager exp'])} / {timing.time_cell(s['jit exp'])}",
        ratio_note(s["jit exp"], s["eager exp"], "jit", "eager", 1.2))


def mlp_train_step(cp, rounds, torch):
    em.random.seed(4)
    model = em.nn.MLP([512, 256, 128, 2], device="cuda")
    opt = em.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(4)
    x_np = rng.standard_normal((64, 512)).astype(np.float32)
    y_np = rng.standard_normal((64, 2)).astype(np.float32)
    x, y = em.tensor(x_np, device="cuda"), em.tensor(y_np, device="cuda")

    step = train_step(model, opt)
    jitted = em.jit(step)
    eager_loss = float(step(x, y).item())
    jit_loss = float(jitted(x, y).item())
    assert abs(eager_loss - jit_loss) < 0.05 * abs(eager_loss) + 1e-3, (eager_loss, jit_loss)
    fns = {"execmode eager": lambda: step(x, y), "execmode em.jit": lambda: jitted(x, y)}
    if torch is not None:
        tm = torch.nn.Sequential(torch.nn.Linear(512, 256), torch.nn.ReLU(),
                                 torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                 torch.nn.Linear(128, 2)).cuda()
        topt = torch.optim.SGD(tm.parameters(), lr=0.01)
        xt, yt = torch.as_tensor(x_np, device="cuda"), torch.as_tensor(y_np, device="cuda")

        def torch_step():
            loss = torch.nn.functional.mse_loss(tm(xt), yt)
            loss.backward()
            topt.step()
            topt.zero_grad()
            return loss

        fns["torch eager"] = torch_step
    s = host_spreads(cp, fns, 50, rounds)
    for name, spread in s.items():
        note = ratio_note(spread, s["torch eager"], name, "torch") \
            if "torch eager" in s and name != "torch eager" else ""
        row(f"MLP train step (SGD, batch 64): {name}", timing.time_cell(spread), note)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    timing.add_arguments(parser)
    args = parser.parse_args()
    rounds = timing.rounds_of(args)
    report = timing.Report(args)
    if not em.cuda_is_available():
        from execmode.backend import cuda_problem
        report.note(f"No GPU here: {cuda_problem()}")
        report.finish()
        return 0
    import cupy as cp
    torch = optional("torch")
    jax = optional("jax")
    props = cp.cuda.runtime.getDeviceProperties(0)
    report.note(f"Device: {props['name'].decode()}, CuPy {cp.__version__}")
    failed = 0
    rows = [("chain", lambda: fused_chain(cp, rounds, torch, jax)),
            ("eager", lambda: eager_per_op(cp, rounds, torch)),
            ("mlp", lambda: mlp_train_step(cp, rounds, torch))]
    for name, fn in rows:
        try:
            fn()
        except Exception:  # noqa: BLE001 - report every row that fails, then go on
            failed += 1
            print(f"row {name} FAILED:\n{traceback.format_exc()}", flush=True)
            ROWS.append((f"row {name}", "FAILED", "see the log"))
    report.table(["row", "value", "note"], [list(r) for r in ROWS],
                 title=f"Median (interquartile range) of {rounds} interleaved rounds")
    report.finish()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
