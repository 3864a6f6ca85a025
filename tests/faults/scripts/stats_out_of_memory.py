"""One op whose output is fine but whose statistics do not fit: an address-space limit
leaves room for the op's 64 MiB output, not for the finite-values copy that `max` needs
when the tensor holds a NaN. A condition on `max` then fails while being evaluated."""
import resource

import numpy as np

import execmode as em

N = 16 * 1024 * 1024  # float32: 64 MiB
data = np.ones(N, dtype=np.float32)
data[0] = np.nan
x = em.tensor(data)


def address_space() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


limit = address_space() + int(1.6 * 4 * N) + (16 << 20)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
y = x + 0.0      # fits; the condition's finite-values copy (another 64 MiB) does not
del y
z = x[:4] * 2.0  # small ops go on
print("survived", z.shape, flush=True)
