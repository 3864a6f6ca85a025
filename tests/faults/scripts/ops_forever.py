"""Eager ops until stopped; writes its pid to argv[1] once some ops are recorded.
argv[2] (optional): "sleep" to block in one long sleep instead, "stubborn" to swallow
every request to stop."""
import os
import sys
import time

import numpy as np

import execmode as em

mode = sys.argv[2] if len(sys.argv) > 2 else "ops"
x = em.tensor(np.ones(4, dtype=np.float32))
for _ in range(20):
    x = x * 1.0 + 0.0
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])  # whole, or not there
started = False
while True:
    # Everything after "started" is inside the try (the print itself, the loop's jump
    # back): a signal handler may run at any bytecode boundary, and "stubborn" must
    # swallow the request wherever it lands.
    try:
        while True:
            if not started:
                started = True
                print("started", flush=True)
            if mode == "sleep":
                time.sleep(3600)
            x = x * 1.0 + 0.0
            time.sleep(0.001)
    except BaseException:  # noqa: BLE001 - "stubborn": the grace period must end it
        if mode != "stubborn":
            raise
