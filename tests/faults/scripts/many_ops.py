"""argv[1] eager ops, then the sum of the last result (to check the script ran to the end)."""
import sys

import numpy as np

import execmode as em

x = em.tensor(np.ones(4, np.float32))
for _ in range(int(sys.argv[1])):
    x = x * 1.0 + 0.0
print("done", float(x.sum()), flush=True)
