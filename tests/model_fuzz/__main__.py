"""Command line: ``python -m tests.model_fuzz [options]`` from the repository root.

    python -m tests.model_fuzz -n 500 --seed 7        # a campaign
    python -m tests.model_fuzz --model 7-123           # print and check one model
    python -m tests.model_fuzz -n 200 --backends numpy # only the NumPy-backend jit run

``--minimize`` shrinks one model per mismatch class and prints the repros.
"""

from __future__ import annotations

import argparse
import sys

from .campaign import Campaign
from .check import check
from .generator import generate


def main(argv=None) -> int:
    sys.path.insert(0, "tests")  # fuzz/ and helpers, as pytest sees them
    ap = argparse.ArgumentParser(prog="python -m tests.model_fuzz", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=100, help="models to run")
    ap.add_argument("--seed", type=int, default=None,
                    help="campaign seed (default: EXECMODE_FUZZ_SEED or a fresh one)")
    ap.add_argument("--start", type=int, default=0, help="index of the first model")
    ap.add_argument("--model", help="check one model, e.g. 7-123, and print it")
    ap.add_argument("--backends", default="numpy,c", help="jit backends to compare")
    ap.add_argument("--minimize", action="store_true", help="minimize one per class")
    args = ap.parse_args(argv)
    backends = tuple(args.backends.split(","))
    if args.model:
        spec = generate(args.model)
        print(spec.render())
        found = check(spec, backends)
        print("\n".join(str(m) for m in found) or "eager and jit agree")
        return 1 if found else 0
    from fuzz.campaign import seed_from_env

    seed = args.seed if args.seed is not None else seed_from_env()
    camp = Campaign(seed, args.n, start=args.start, backends=backends)

    def progress(i, c):
        if (i + 1) % 50 == 0:
            print(f"  {c.models_run} models, {len(c.failures)} failing", flush=True)

    camp.run(progress=progress)
    print(camp.summary())
    if args.minimize and camp.failures:
        for key, fail in camp.minimize_groups().items():
            print(f"\n--- {key[0]} / {key[1]} ---\n{fail.report()}")
    return 1 if camp.failures else 0


if __name__ == "__main__":
    sys.exit(main())
