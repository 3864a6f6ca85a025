"""The numbers the debugger gives ops and kernel runs: the session store's own.

Op #N is the N-th eager op recorded in the session, counted from 1: the store's
``op_events.seq``. Dispatch's op counter runs for the whole process (the profiler's
calibration, earlier recordings), so the recorder keeps its value at start
(``Recorder.seq_base``) and an op's number is its event's seq minus that. Kernel run #N is
the N-th compiled step run in the session: the store's ``kernels.id``. The status bar, the
Ops list, ``op:N`` in the Tensor view, ``execmode run``'s stop message and every export
show these numbers (docs/session-store.md, "How ops and kernels are numbered").
"""

from __future__ import annotations


class RunNumbers:
    """The last op's and kernel run's numbers, as the agent sees them run."""

    def __init__(self, seq_base: int | None = None):
        # The recorder's base; without a recorder, the first op seen is op 1.
        self.seq_base = seq_base
        self.last_op = 0        # the number of the last op that ran (0: none yet)
        self.kernel_runs = 0    # kernel runs begun: the one running is this number

    def op_ran(self, seq: int) -> int:
        """The number of the op whose event has ``seq``."""
        if self.seq_base is None:
            self.seq_base = seq - 1
        number = seq - self.seq_base
        # Another thread's op may report after a later one: the last is the largest.
        self.last_op = max(self.last_op, number)
        return number

    def kernel_begins(self) -> int:
        self.kernel_runs += 1
        return self.kernel_runs

    def op_paused_at(self, when: str) -> int:
        """The op a pause is at: before an op (or at its exception) the one about to run,
        which takes the next number; after an op, at a graph break or at em.breakpoint(),
        the last one that ran."""
        return self.last_op + 1 if when in ("before", "exception") else self.last_op
