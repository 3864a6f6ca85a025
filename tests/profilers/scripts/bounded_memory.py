"""Records many tiny ops and prints how much the process grew (peak RSS, KiB).

    python bounded_memory.py SESSION WARM_OPS MEASURED_OPS
"""

import json
import resource
import sys

from execmode.profilers.recorder import Recorder

import execmode as em

session, warm, measured = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])


def run(n):
    a = em.ones(4)
    b = em.ones(4)
    for _ in range(n // 2):
        a + b
        em.exp(a)


rec = Recorder(session, calibrate=False).start()
run(warm)
rec.flush()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
run(measured)
rec.flush()
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
rec.close()
print(json.dumps({"before_kib": before, "after_kib": after, "ops": rec.writer.ops_written,
                  "max_pending": rec.writer.max_pending}))
