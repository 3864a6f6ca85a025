"""The GPU rows: execmode on CuPy against raw CuPy, PyTorch and jax.jit on the same card, in
one run, as ratios.

    python benchmarks/bench_gpu.py            # the full run (~1 minute on an H100)
    python benchmarks/bench_gpu.py --quick    # fewer rounds

Rows (each result is checked against raw CuPy, or against eager, before it is timed):

* **copy bandwidth**: a large device-to-device copy (bytes read + bytes written), the floor
  that the fused chain is measured against (METHOD: measure the ceiling, don't quote it);
* **fused chain**: ``tanh(x*a + b)*0.5 + relu(x)`` over 64M float32, em.jit's one CUDA
  kernel against CuPy op by op, execmode eager, jax.jit and torch (eager). The floor is
  3 reads + 1 write at the copy bandwidth; the goal is >= 80% of it;
* **eager per op**: the host time of one small op (a 1-element and a 1000-element add)
  through execmode eager against the same CuPy call (goal <= 1.2x);
* **MLP train step**: MLP 512-256-128-2, batch 64, SGD: execmode eager, em.jit, torch.

Device time is taken with CUDA events around many calls after a warm-up; the median of
several rounds. Host-bound rows (eager per op) are host clocks around many calls with one
synchronize at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from workloads import train_step  # noqa: E402

import execmode as em  # noqa: E402

ROWS: list[tuple[str, str, str]] = []


def row(name: str, value: str, note: str = "") -> None:
    ROWS.append((name, value, note))
    print(f"{name}: {value}  {note}", flush=True)


def device_ms(cp, fn, calls: int, rounds: int) -> float:
    """Median over ``rounds`` of the device milliseconds per call of ``fn`` (CUDA events
    around ``calls`` calls, after a warm-up)."""
    fn()
    cp.cuda.get_current_stream().synchronize()
    times = []
    for _ in range(rounds):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / calls)
    return statistics.median(times)


def host_us(cp, fn, calls: int, rounds: int) -> float:
    """Best over ``rounds`` of the host microseconds per call (one synchronize a round)."""
    fn()
    cp.cuda.get_current_stream().synchronize()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        cp.cuda.get_current_stream().synchronize()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def optional(name):
    try:
        return __import__(name)
    except Exception as exc:  # noqa: BLE001 - a peer that does not import is left out
        print(f"({name} not used: {exc})")
        return None


def copy_bandwidth(cp, rounds):
    n = 256 * 1024 * 1024  # 1 GiB of float32
    src = cp.random.standard_normal(n, dtype=cp.float32)
    dst = cp.empty_like(src)
    ms = device_ms(cp, lambda: cp.copyto(dst, src), 5, rounds)
    gbs = 2 * src.nbytes / (ms * 1e-3) / 1e9
    row("copy bandwidth (1 GiB, read+write)", f"{gbs:.0f} GB/s")
    return gbs


def fused_chain(cp, bandwidth, rounds, torch, jax):
    n = 64 * 1024 * 1024
    rng = cp.random.default_rng(3)
    xc, ac, bc = (rng.standard_normal(n, dtype=cp.float32) for _ in range(3))
    x, a, b = (em.tensor(v, device="cuda") for v in (xc, ac, bc))

    def chain(x, a, b):
        return em.tanh(x * a + b) * 0.5 + em.relu(x)

    def cupy_chain():
        return cp.tanh(xc * ac + bc) * cp.float32(0.5) + cp.maximum(xc, 0)

    want = cupy_chain()
    jitted = em.jit(chain)
    got = jitted(x, a, b)
    np.testing.assert_allclose(cp.asnumpy(got._data[:1 << 20]), cp.asnumpy(want[:1 << 20]),
                               rtol=2e-6, atol=2e-6)
    floor_ms = 4 * 4 * n / (bandwidth * 1e9) * 1e3
    timings = {
        "CuPy op by op": device_ms(cp, cupy_chain, 10, rounds),
        "execmode eager": device_ms(cp, lambda: chain(x, a, b), 10, rounds),
        "execmode em.jit": device_ms(cp, lambda: jitted(x, a, b), 10, rounds),
    }
    if torch is not None:
        xt, at, bt = (torch.as_tensor(v, device="cuda") for v in (xc, ac, bc))
        timings["torch eager"] = device_ms(
            cp, lambda: torch.tanh(xt * at + bt) * 0.5 + torch.relu(xt), 10, rounds)
    if jax is not None:
        import jax.numpy as jnp
        xj, aj, bj = (jnp.asarray(cp.asnumpy(v)) for v in (xc, ac, bc))
        jf = jax.jit(lambda x, a, b: jnp.tanh(x * a + b) * 0.5 + jnp.maximum(x, 0))
        np.testing.assert_allclose(np.asarray(jf(xj, aj, bj))[:1 << 20],
                                   cp.asnumpy(want[:1 << 20]), rtol=2e-6, atol=2e-6)
        # jax runs on its own stream: time with its own block_until_ready.
        jf(xj, aj, bj).block_until_ready()
        best = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(10):
                r = jf(xj, aj, bj)
            r.block_until_ready()
            best.append((time.perf_counter() - t0) / 10 * 1e3)
        timings["jax.jit"] = statistics.median(best)
    for name, ms in timings.items():
        row(f"fused chain 64M f32: {name}", f"{ms:.3f} ms",
            f"{floor_ms / ms * 100:.0f}% of the copy floor ({floor_ms:.3f} ms)")


def eager_add_and_exp(cp, n, rounds):
    ac = cp.ones(n, cp.float32)
    bc = cp.ones(n, cp.float32)
    a, b = em.tensor(ac, device="cuda"), em.tensor(bc, device="cuda")
    assert float((a + b).sum().item()) == 2.0 * n
    raw = host_us(cp, lambda: ac + bc, 2000, rounds)
    ours = host_us(cp, lambda: a + b, 2000, rounds)
    ours_fn = host_us(cp, lambda: em.add(a, b), 2000, rounds)
    row(f"eager add, {n} element(s): CuPy / execmode a+b / em.add",
        f"{raw:.1f} / {ours:.1f} / {ours_fn:.1f} us", f"{ours / raw:.2f}x CuPy (goal <= 1.2x)")
    torch = optional("torch")
    if torch is not None:
        at, bt = torch.as_tensor(ac, device="cuda"), torch.as_tensor(bc, device="cuda")
        row(f"eager add, {n} element(s): torch (for reference)",
            f"{host_us(cp, lambda: at + bt, 2000, rounds):.1f} us")
    ex = host_us(cp, lambda: cp.exp(ac), 2000, rounds)
    ours_ex = host_us(cp, lambda: em.exp(a), 2000, rounds)
    row(f"eager exp, {n} element(s): CuPy / execmode", f"{ex:.1f} / {ours_ex:.1f} us",
        f"{ours_ex / ex:.2f}x CuPy")


def eager_per_op(cp, rounds):
    for n in (1, 1000):
        eager_add_and_exp(cp, n, rounds)
    a = em.ones(1000, device="cuda")
    jitted = em.jit(lambda a: em.exp(a) * 2.0)
    np.testing.assert_allclose(jitted(a).numpy(), np.exp(1.0) * 2.0, rtol=1e-6)
    eager = host_us(cp, lambda: em.exp(a) * 2.0, 2000, rounds)
    jit = host_us(cp, lambda: jitted(a), 2000, rounds)
    row("exp(a) * 2.0, 1000 elements: eager (2 ops) / em.jit (1 kernel)",
        f"{eager:.1f} / {jit:.1f} us", f"jit {jit / eager:.2f}x eager")
    single = em.jit(em.exp)
    np.testing.assert_allclose(single(a).numpy(), np.exp(1.0), rtol=1e-6)
    eager = host_us(cp, lambda: em.exp(a), 2000, rounds)
    jit = host_us(cp, lambda: single(a), 2000, rounds)
    row("em.exp, 1000 elements: eager / em.jit(em.exp)", f"{eager:.1f} / {jit:.1f} us",
        f"jit {jit / eager:.2f}x eager (goal <= 1.2x)")


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
    timings = {
        "execmode eager": host_us(cp, lambda: step(x, y), 50, rounds),
        "execmode em.jit": host_us(cp, lambda: jitted(x, y), 50, rounds),
    }
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

        timings["torch eager"] = host_us(cp, torch_step, 50, rounds)
    for name, us in timings.items():
        row(f"MLP train step (SGD, batch 64): {name}", f"{us:.0f} us/step")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 3 if args.quick else 7
    if not em.cuda_is_available():
        from execmode.backend import cuda_problem
        print(f"no GPU: {cuda_problem()}")
        return 0
    import cupy as cp
    torch = optional("torch")
    jax = optional("jax")
    props = cp.cuda.runtime.getDeviceProperties(0)
    print(f"device: {props['name'].decode()}, CuPy {cp.__version__}, NumPy {np.__version__}")
    failed = 0
    found = {}
    rows = [("copy", lambda: copy_bandwidth(cp, rounds)),
            ("chain", lambda: fused_chain(cp, found["copy"], rounds, torch, jax)),
            ("eager", lambda: eager_per_op(cp, rounds)),
            ("mlp", lambda: mlp_train_step(cp, rounds, torch))]
    for name, fn in rows:
        try:
            found[name] = fn()
        except Exception:  # noqa: BLE001 - report every row that fails, then go on
            failed += 1
            print(f"row {name} FAILED:\n{traceback.format_exc()}", flush=True)
    print("\n| row | value | note |\n|---|---|---|")
    for name, value, note in ROWS:
        print(f"| {name} | {value} | {note} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
