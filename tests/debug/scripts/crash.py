import ctypes
import os
import signal
import sys
import time

import execmode as em

mode = sys.argv[1]
x = em.ones(2) * 3.0
print("before", mode, flush=True)
time.sleep(0.3)  # the session's writer flushes at least every 100 ms: x is on disk
if mode == "exception":
    em.ones(2) @ em.ones(3)
elif mode == "exit":
    sys.exit(3)
elif mode == "os_exit":
    os._exit(7)
elif mode == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
elif mode == "segfault":
    ctypes.string_at(0)
print("after", flush=True)
