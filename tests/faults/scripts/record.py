"""Record eager ops and a jitted function into the session argv[1], then end as argv[2]
says: "close" (a finished session) or "kill" (SIGKILL after a flush: the writer dies with
committed rows in the -wal file)."""
import os
import signal
import sys

import numpy as np
from execmode.profilers.recorder import Recorder

import execmode as em

# Kernel rows too: the tests spoil and read them.
recorder = Recorder(sys.argv[1], calibrate=False, kernel_rows=True, meta={"script": __file__})
recorder.start()
x = em.tensor(np.ones(8, dtype=np.float32))
for _ in range(500):
    x = x * 1.0 + 0.5
f = em.jit(lambda a: em.tanh(a * 2.0) + 1.0)
for _ in range(20):
    f(x)
if sys.argv[2] == "kill":
    recorder.writer.flush()
    os.kill(os.getpid(), signal.SIGKILL)
recorder.close(status="ok", code=0)
