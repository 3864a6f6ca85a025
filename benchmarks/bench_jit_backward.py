"""A training step three ways: eager; the model jitted with the loss, ``backward()`` and
the SGD step eager (``model = em.jit(model)``: the compiled backward graph of
jit_driver/backward.py); and the whole step jitted (forward, backward and update in one
graph). An MLP (ReLU, cross-entropy, SGD with momentum), medians of interleaved rounds
(profilers/measure.py), on the machine as it is: the load and threads are printed.

    python benchmarks/bench_jit_backward.py                 # the default sizes
    python benchmarks/bench_jit_backward.py --sizes 16x32x64x10 64x256x512x10
"""

from __future__ import annotations

import argparse

from execmode.profilers import measure

import execmode as em
from execmode import nn


def _setup(batch: int, features: int, hidden: int, classes: int, seed: int = 0):
    em.random.seed(seed)
    model = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                          nn.ReLU(), nn.Linear(hidden, classes))
    opt = em.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = em.random.normal((batch, features))
    y = em.random.randint(0, classes, (batch,))
    return model, opt, x, y


def candidates(batch: int, features: int, hidden: int, classes: int) -> dict:
    eager_model, eager_opt, x, y = _setup(batch, features, hidden, classes)
    fwd_model, fwd_opt, _, _ = _setup(batch, features, hidden, classes)
    step_model, step_opt, _, _ = _setup(batch, features, hidden, classes)
    jitted_model = em.jit(fwd_model)

    def eager():
        eager_opt.zero_grad()
        nn.functional.cross_entropy(eager_model(x), y).backward()
        eager_opt.step()

    def jit_forward():
        fwd_opt.zero_grad()
        nn.functional.cross_entropy(jitted_model(x), y).backward()
        fwd_opt.step()

    @em.jit
    def whole_step(x, y):
        step_opt.zero_grad()
        nn.functional.cross_entropy(step_model(x), y).backward()
        step_opt.step()

    return {"eager": eager, "jit forward, eager backward+step": jit_forward,
            "whole step jitted": lambda: whole_step(x, y)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["16x32x64x10", "64x256x512x10"],
                    help="BATCHxFEATURESxHIDDENxCLASSES")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    print(measure.context_line())
    for size in args.sizes:
        batch, features, hidden, classes = (int(n) for n in size.split("x"))
        spreads = measure.measure(candidates(batch, features, hidden, classes),
                                  rounds=args.rounds)
        print(f"\nMLP batch {batch}, {features}-{hidden}-{hidden}-{classes}:")
        base = spreads["eager"]
        for name, spread in spreads.items():
            verdict = measure.decide(spread, base, a_name=name, b_name="eager")
            ratio = "(the baseline)" if spread is base else \
                f"{verdict.ratio:.2f}x eager" if verdict.ratio is not None else \
                f"undecided ({verdict.reason})"
            crowded = f"; crowded: {spread.crowding_text()}" if spread.crowded else ""
            print(f"  {name:34s} {spread.text()}  {ratio}{crowded}")
    print(f"\nload after: {measure.load_text()}")


if __name__ == "__main__":
    main()
