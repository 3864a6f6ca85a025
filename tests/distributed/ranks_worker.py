"""The checks that run inside every rank: ``execmode launch -n 2 ranks_worker.py OUT``
(tests/distributed/test_ranks.py starts it once). Each check runs on every rank; each rank
writes ``OUT/rank<R>.json``: check name -> "ok" or the failure's traceback. The checks
live in collective_checks.py and ddp_checks.py, and run in the order they are defined
there (worker_common.CHECKS), the collectives' first.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

import collective_checks  # noqa: F401  (registers its checks, first)
import ddp_checks  # noqa: F401  (registers its checks, after them)
from worker_common import CHECKS, RANK

import execmode.torch.distributed as dist


def in_step(comm, seconds: float) -> bool:
    """Whether every rank reached the end of the check within ``seconds``: a rank that
    failed halfway may have skipped a collective that another rank now waits in, and
    this rank must not wait for it forever (a non-blocking barrier, polled)."""
    request = comm.Ibarrier()
    deadline = time.monotonic() + seconds
    while not request.Test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def main(out_dir: str) -> None:
    path = os.path.join(out_dir, f"rank{RANK}.json")
    results = {}
    comm = dist.group.WORLD.comm
    for fn in CHECKS:
        results[fn.__name__] = "running (it never finished: a rank waits in a collective)"
        with open(path, "w") as f:
            json.dump(results, f, indent=1)
        try:
            fn()
            results[fn.__name__] = "ok"
        except Exception:
            results[fn.__name__] = traceback.format_exc()
        with open(path, "w") as f:  # after every check: a hang leaves what ran readable
            json.dump(results, f, indent=1)
        if not in_step(comm, 20.0):
            results[fn.__name__] += "\n(the other rank did not finish this check: ended)"
            with open(path, "w") as f:
                json.dump(results, f, indent=1)
            comm.Abort(3)
    dist.destroy_process_group()
    assert not dist.is_initialized()


if __name__ == "__main__":
    main(sys.argv[1])
