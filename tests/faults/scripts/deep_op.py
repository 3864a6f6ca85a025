"""An op at the bottom of a recursion that ends argv[1] frames below the recursion limit,
then the limit as the script sees it afterwards."""
import sys

import numpy as np

import execmode as em

x = em.tensor(np.ones(3, np.float32))


def depth() -> int:
    f, n = sys._getframe(1), 0
    while f is not None:
        n += 1
        f = f.f_back
    return n


def down(n):
    if n == 0:
        return x * 2.0 + 1.0
    return down(n - 1)


limit = sys.getrecursionlimit()
y = down(limit - depth() - int(sys.argv[1]))
print("ok", y.numpy().tolist(), sys.getrecursionlimit(), flush=True)
