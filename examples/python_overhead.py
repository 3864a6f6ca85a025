"""Graph mode removes most of the Python overhead ("10-100x less").

Measured two ways on the same MLP forward: the Python function calls per iteration
(deterministic, counted with sys.setprofile), and, with py-spy, the share of samples in
user code, execmode dispatch and kernels (needs permission to attach; skipped in quick
mode).

    python examples/python_overhead.py
"""

import os
import sqlite3
import subprocess
import sys
import tempfile

from _common import QUICK, size

import execmode as em

em.random.seed(0)
net = em.nn.MLP([512, 256, 128, 2])
x = em.randn(1, 512)
fast = em.jit(net)
fast(x)


def python_calls(fn, n=20) -> float:
    count = 0

    def profiler(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profiler)
    try:
        for _ in range(n):
            fn()
    finally:
        sys.setprofile(None)
    return count / n


eager_calls = python_calls(lambda: net(x))
jit_calls = python_calls(lambda: fast(x))
print("Python-level calls per forward pass (Python functions and C builtins):")
print(f"  eager {eager_calls:7.0f}")
print(f"  jit   {jit_calls:7.0f}   ({eager_calls / jit_calls:.2f}x fewer)")


def pyspy_split(mode: str) -> dict | None:
    """Run this file's workload under `execmode profile --pyspy`; category -> share."""
    with tempfile.TemporaryDirectory() as tmp:
        session = os.path.join(tmp, f"{mode}.emsession")
        cmd = [sys.executable, "-m", "execmode", "profile", "--pyspy", "--rate", "500",
               "--session", session, "-o", os.path.join(tmp, "r.json"),
               os.path.abspath(__file__), "--workload", mode]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not os.path.exists(session):
            return None
        con = sqlite3.connect(session)
        rows = con.execute("select category, sum(count) from samples group by category")
        counts = dict(rows.fetchall())
        total = sum(counts.values())
        return {k: v / total for k, v in counts.items()} if total else None


if len(sys.argv) > 2 and sys.argv[1] == "--workload":
    run = net if sys.argv[2] == "eager" else fast
    for _ in range(size(30000, 1000)):
        run(x)
    sys.exit(0)

if QUICK:
    print("py-spy split: skipped in quick mode")
else:
    splits = {mode: pyspy_split(mode) for mode in ("eager", "jit")}
    if all(splits.values()):
        cats = sorted({c for s in splits.values() for c in s})
        print("py-spy samples by category (share of the run):")
        print("  " + "".join(f"{c:>11}" for c in cats))
        for mode, split in splits.items():
            print(f"  {mode:<6}" + "".join(f"{split.get(c, 0):10.0%} " for c in cats))
    else:
        print("py-spy split: py-spy could not attach here (see `execmode profile --pyspy`)")
ratio = eager_calls / jit_calls
verdict = "confirmed" if ratio >= 10 else "depends"
print(f"VERDICT: {verdict} - a jitted call makes {ratio:.2f}x fewer Python calls than the "
      "eager forward pass (what remains: argument checks, and one call per plan step).")
