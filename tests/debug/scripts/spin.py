import sys
import time

import execmode as em

x = em.ones(2) * 2.0
print("spinning", flush=True)
# Plain Python from here on: no op reaches the debugger's hooks.
deadline = time.monotonic() + float(sys.argv[1])
while time.monotonic() < deadline:
    time.sleep(0.01)
print("ran to the end", flush=True)
