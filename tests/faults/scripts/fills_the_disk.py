"""Ops, then fill the disk that argv[1] is on (as a script writing checkpoints might), then
more ops: the session on that disk cannot grow any more."""
import errno
import sys
import time

import numpy as np

import execmode as em

x = em.tensor(np.ones(4, np.float32))
for _ in range(200):
    x = x * 1.0 + 0.0
time.sleep(0.2)  # the recorder commits every 50 ms: these ops are in the file now
try:
    with open(sys.argv[1], "wb") as f:
        while True:
            f.write(b"\0" * 65536)
            f.flush()
except OSError as exc:
    assert exc.errno in (errno.ENOSPC, errno.EDQUOT), exc
for _ in range(3000):
    x = x * 1.0 + 0.0
print("done", float(x.sum()), flush=True)
