"""A script that ends or multiplies its process in one of several ways (argv[1]).

Each mode prints "result <number>" lines that must equal a plain `python` run's, and
"before" once its first ops are on their way to the session."""
import ctypes
import multiprocessing
import os
import sys
import threading
import time

import numpy as np

import execmode as em


def work(seed: int) -> float:
    x = em.tensor(np.arange(8, dtype=np.float32) + seed)
    for _ in range(10):
        x = x * 0.5 + 1.0
    return float(x.sum().item())


if __name__ == "__main__":  # spawned workers import this file: run nothing then
    mode = sys.argv[1]
    print("result", work(0), flush=True)
    print("before", flush=True)
    time.sleep(0.3)  # the session's writer flushes at least every 100 ms: the ops are on disk
    if mode == "os_exit":
        os._exit(7)
    elif mode == "segfault":
        ctypes.string_at(0)
    elif mode == "fork":
        pid = os.fork()
        if pid == 0:  # the child computes, prints and leaves without cleanup, as forked workers do
            print("result", work(1), flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(status), flush=True)
        print("result", work(2), flush=True)
    elif mode in ("pool-fork", "pool-spawn"):
        with multiprocessing.get_context(mode.split("-")[1]).Pool(2) as pool:
            for value in pool.map(work, [1, 2, 3]):
                print("result", value, flush=True)
        print("result", work(4), flush=True)
    elif mode == "threads":
        results = {}
        threads = [threading.Thread(target=lambda s=s: results.__setitem__(s, work(s)))
                   for s in (1, 2, 3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for seed in sorted(results):
            print("result", results[seed], flush=True)
    print("end", flush=True)
