"""The jitted-forward family: every model with only the model jitted (``FORWARD =
JIT(model)``), the loss, ``backward()`` through the jitted results, clipping and the
optimizer step eager (spec.jitted = "forward"; the general campaign draws it for 15% of
its models). Backward runs the compiled backward graph of jit_driver/backward.py.

    python -m tests.model_fuzz.forward_family -n 200 --seed 7

Model ``i`` is ``generate(f"{seed}-{i}")`` with ``jitted="forward"``: reproduce one with
``forward_model("7-12")``.
"""

from __future__ import annotations

import argparse
import sys
import time

from .campaign import Campaign, Failure
from .check import check
from .generator import generate


def forward_model(seed: str):
    return generate(seed).replace(jitted="forward")


class ForwardCampaign(Campaign):
    """A campaign whose models all jit only the model (a Campaign in every other way)."""

    def run(self, stop_after: int | None = None, progress=None) -> ForwardCampaign:
        t0 = time.monotonic()
        for i in range(self.start, self.start + self.count):
            seed = f"{self.seed}-{i}"
            spec = forward_model(seed)
            mismatches = check(spec, self.backends)
            self.models_run += 1
            self.steps_run += len(spec.steps)
            if mismatches:
                self.failures.append(Failure(seed, spec, mismatches))
                if stop_after is not None and len(self.failures) >= stop_after:
                    break
            if progress is not None:
                progress(i, self)
        self.seconds = time.monotonic() - t0
        return self


def main(argv=None) -> int:
    sys.path.insert(0, "tests")
    ap = argparse.ArgumentParser(prog="python -m tests.model_fuzz.forward_family",
                                 description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=100, help="models to run")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--backends", default="numpy,c")
    ap.add_argument("--minimize", action="store_true")
    args = ap.parse_args(argv)
    camp = ForwardCampaign(args.seed, args.n, start=args.start,
                           backends=tuple(args.backends.split(",")))
    camp.run(progress=lambda i, c: (i + 1) % 25 == 0 and print(
        f"  {c.models_run} models, {len(c.failures)} failing", flush=True))
    print(camp.summary())
    if args.minimize and camp.failures:
        for key, fail in camp.minimize_groups().items():
            print(f"\n--- {key[0]} / {key[1]} ---\n{fail.report()}")
    return 1 if camp.failures else 0


if __name__ == "__main__":
    sys.exit(main())
