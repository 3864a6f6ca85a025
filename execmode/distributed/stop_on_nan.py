"""``execmode launch -n N --break nan``: the first rank whose op makes a NaN (or an Inf,
``--break inf``) stops, naming its rank, the op and the user's line; the other ranks stop
at their next collective, saying why, instead of waiting for it forever.

The rank's watch is a listener after each eager op and each compiled step (kernels run
step by step while it listens, as under the debugger). When it fires, it tells every other
rank first (a message on the group's communicator, collectives.announce_stop), then
raises ``StoppedOnNaN`` at the op; the others find the message while they wait in their
next collective's header exchange and raise ``DistributedError`` with it. Under
``execmode launch`` a raising rank then ends the job (rank_runner.py).
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..source import user_location
from .errors import DistributedError

CONDITIONS = {"nan": "NaN", "inf": "Inf"}


class StoppedOnNaN(DistributedError):
    """This rank made the first NaN/Inf the launch watched for."""


class NaNWatch:
    """The listener: ``condition`` is "nan" or "inf"."""

    def __init__(self, condition: str, rank: int):
        self.condition, self.rank = condition, rank
        self.fired = False

    def _bad(self, array) -> bool:
        if not isinstance(array, np.ndarray) or array.dtype.kind not in "fc" or self.fired:
            return False
        test = np.isnan if self.condition == "nan" else np.isinf
        return bool(test(array).any())

    def on_op(self, event, output) -> None:
        data = output._data if isinstance(output, Tensor) else None
        if self._bad(data):
            where = event.location
            self._stop(f"{event.op} made a {CONDITIONS[self.condition]}", where)

    def after_kernel(self, plan, index, output) -> None:
        if self._bad(output):
            step = plan.steps[index]
            members = step.node.body or (step.node,)
            self._stop(f"kernel {step.name} ({' '.join(m.op for m in members)}) of "
                       f"{plan.graph_id} made a {CONDITIONS[self.condition]}",
                       members[-1].loc or user_location())

    def _stop(self, what: str, where) -> None:
        from .exchange import announce_stop

        self.fired = True
        at = f" at {where.filename}:{where.lineno}" if where is not None else ""
        message = f"rank {self.rank}: breakpoint {self.condition}: {what}{at}"
        announce_stop(message)
        raise StoppedOnNaN(message)
