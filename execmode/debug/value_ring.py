"""The last eager ops' values, kept by the agent so that a past op can be inspected live.

The session store has every op's row and, with summaries, its statistics; the values
themselves are gone once the script moves on (or overwritten in place). The agent keeps
copies of the inputs and output of the last ``ops`` eager ops, each tensor up to
``max_tensor_bytes``, all of them within ``max_total_bytes`` (the oldest go first), so the
Tensor view can show a past op's values and slices (``op:N``, ``op:N:input:I``). N is the
op's number, the session store's seq and the Ops list's ``#`` (debug/numbering.py).
Copies, not references: a later in-place write must not change what op N produced.
``execmode tui --keep-values N`` sets ``ops`` (0: keep nothing).
"""

from __future__ import annotations

from collections import OrderedDict

from .._tensor import Tensor

DEFAULT_OPS = 64
MAX_TENSOR_BYTES = 1 << 20      # 1 MiB: a 512x512 float32
MAX_TOTAL_BYTES = 64 << 20


class ValueRing:
    def __init__(self, ops: int = DEFAULT_OPS, max_tensor_bytes: int = MAX_TENSOR_BYTES,
                 max_total_bytes: int = MAX_TOTAL_BYTES):
        self.ops = ops
        self.max_tensor_bytes = max_tensor_bytes
        self.max_total_bytes = max_total_bytes
        self._kept: OrderedDict = OrderedDict()  # op number -> (output, inputs, bytes)
        self._bytes = 0

    def keep(self, number: int, output, inputs) -> None:
        """Copy op ``number``'s output and tensor inputs (a too-large one keeps its reason)."""
        if self.ops <= 0:
            return
        kept_output = self._copy(output)
        kept_inputs = tuple(self._copy(x) for x in inputs if isinstance(x, Tensor))
        size = sum(a.nbytes for a in (kept_output, *kept_inputs) if not isinstance(a, str))
        self._kept[number] = (kept_output, kept_inputs, size)
        self._bytes += size
        while self._kept and (len(self._kept) > self.ops or self._bytes > self.max_total_bytes):
            _, (_, _, dropped) = self._kept.popitem(last=False)
            self._bytes -= dropped

    def value(self, number: int, which: str = "output", index: int = 0):
        """The kept array; ValueError (why not) when op ``number``'s values are not here."""
        entry = self._kept.get(number)
        if entry is None:
            raise ValueError(self._why_not(number))
        output, inputs, _ = entry
        if which == "output":
            found = output
        elif 0 <= index < len(inputs):
            found = inputs[index]
        else:
            raise ValueError(f"op {number} has {len(inputs)} tensor input(s), not input:{index}")
        if isinstance(found, str):
            raise ValueError(f"op {number}'s {which}: {found}")
        return found

    def _copy(self, x):
        data = x._data if isinstance(x, Tensor) else x
        if data.nbytes > self.max_tensor_bytes:
            return (f"not kept: {data.nbytes:,} bytes, over the {self.max_tensor_bytes:,} "
                    "a kept tensor may have")
        return data.copy()

    def _why_not(self, number: int) -> str:
        if self.ops <= 0:
            return (f"op {number}'s values were not kept: execmode tui --keep-values 0 keeps "
                    "none")
        newest = next(reversed(self._kept), None)
        if newest is not None and number > newest:
            return f"op {number} has not run yet (the newest op kept is op {newest})"
        oldest = next(iter(self._kept), None)
        return (f"op {number}'s values are no longer kept: the agent keeps the last "
                f"{self.ops} eager ops' tensors (up to {self.max_total_bytes >> 20} MiB in "
                f"all{'' if oldest is None else f'; the oldest kept is op {oldest}'}); "
                "execmode tui --keep-values N keeps more")
