"""Plain Python for a long time (no op): p pauses in it, q ends it, at once."""
import time

import execmode as em

x = em.ones(2) * 2.0
print("sleeping")
time.sleep(60)
y = x + 1.0
print("done")
