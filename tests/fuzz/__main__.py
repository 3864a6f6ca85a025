"""Command line: ``python -m tests.fuzz [options]`` from the repository root.

    python -m tests.fuzz -n 2000 --seed 7            # a campaign with the default features
    python -m tests.fuzz -n 500 --only view_writes   # the defaults plus one feature
    python -m tests.fuzz -n 500 --all                # every feature on
    python -m tests.fuzz --program 7-123             # print and check one program
    python -m tests.fuzz --per-feature -n 300        # each OFF feature alone, minimized

``--minimize`` shrinks one program per mismatch class and prints the repros.
"""

from __future__ import annotations

import argparse
import sys

from .campaign import Campaign, seed_from_env
from .check import check
from .features import CHECKS, FEATURES, all_on, only
from .generator import generate


def _features(args) -> dict:
    feats = all_on() if args.all else dict(FEATURES)
    if args.only:
        feats = only(*args.only, base=feats)
    for name in args.off or ():
        feats[name] = False
    return feats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=200, help="programs to run")
    ap.add_argument("--seed", type=int, default=None,
                    help="campaign seed (default: EXECMODE_FUZZ_SEED or a fresh one)")
    ap.add_argument("--only", nargs="*", help="turn these features on as well")
    ap.add_argument("--off", nargs="*", help="turn these features off")
    ap.add_argument("--all", action="store_true", help="start from every feature on")
    ap.add_argument("--program", help="one program by its seed string (S-i)")
    ap.add_argument("--minimize", action="store_true", help="minimize one program per class")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per minimization")
    ap.add_argument("--per-feature", action="store_true",
                    help="for each feature that is off by default: the defaults plus it")
    ap.add_argument("--check", nargs="*", default=[],
                    help="turn these comparator checks on (features.CHECKS)")
    ap.add_argument("--groups", type=int, default=6, help="classes to minimize per campaign")
    args = ap.parse_args(argv)
    feats = _features(args)
    for name in args.check:
        if name not in CHECKS:
            ap.error(f"unknown check {name!r}; checks are {', '.join(CHECKS)}")
        CHECKS[name] = True

    if args.program:
        program = generate(args.program, feats)
        print(program.render())
        for m in check(program):
            print(m)
        return 0

    seed = seed_from_env(args.seed)
    if args.per_feature:
        for name in [n for n, on in FEATURES.items() if not on]:
            camp = Campaign(seed, args.n, only(name, base=dict(FEATURES))).run()
            print(f"\n===== feature {name} =====")
            print(camp.summary())
            if args.minimize:
                for key, fail in camp.minimize_groups(args.budget, args.groups).items():
                    print(f"\n--- {key[0]} / {key[1]} ---")
                    print(fail.report())
                    sys.stdout.flush()
            sys.stdout.flush()
        return 0

    camp = Campaign(seed, args.n, feats).run()
    print(camp.summary())
    if args.minimize:
        for key, fail in camp.minimize_groups(args.budget, args.groups).items():
            print(f"\n--- {key[0]} / {key[1]} ---")
            print(fail.report())
            sys.stdout.flush()
    return 1 if camp.failures else 0


if __name__ == "__main__":
    sys.exit(main())
