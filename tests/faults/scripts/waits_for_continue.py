"""One op, then prints done: for runs that must reach the end."""
import numpy as np

import execmode as em

y = em.tensor(np.ones(3, dtype=np.float32)) + 1.0
print("done", float(y.sum()), flush=True)
