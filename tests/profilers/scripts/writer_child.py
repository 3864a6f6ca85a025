"""Writes a session in steps that its parent test controls through stdin/stdout.

    python writer_child.py SESSION BATCHES BATCH_SIZE

For each batch: queue BATCH_SIZE op events, flush, print "batch N", wait for a line on
stdin. Then queue one more batch *without* flushing, print "queued" and wait again: the
background writer must commit it on its own. On the last line it exits without closing
the writer (the atexit handler must flush).
"""

import sys

import numpy as np
from execmode.profilers.writer import SessionWriter

from execmode.backend import CPU
from execmode.instrument import OpEvent
from execmode.source import SourceLocation

session, batches, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
writer = SessionWriter(session, {"note": "writer_child"})
loc = SourceLocation(__file__, 1, "<module>")
shape = ((4, 4), np.dtype("float32"), CPU)
seq = 0


def queue_batch():
    global seq
    for _ in range(size):
        writer.put(OpEvent(seq, "add", {}, (shape, shape), shape, seq * 10, seq * 10 + 5, 64,
                           "", loc))
        seq += 1


for i in range(batches):
    queue_batch()
    writer.flush()
    print(f"batch {i}", flush=True)
    sys.stdin.readline()
queue_batch()
print("queued", flush=True)
sys.stdin.readline()
queue_batch()  # committed by the atexit flush only
