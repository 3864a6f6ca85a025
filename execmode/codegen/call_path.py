"""The Python side of a compiled kernel call, written for as little work per call as we can.

Each C kernel has an entry point taking one pointer: its *argument block*, an array of
data pointers that lives as long as the kernel object. A call only touches the block where
an argument is a different array object than last time (an ndarray never moves its data,
so the same object means the same pointer), then makes a one-argument ctypes call
(~0.2 us, against ~0.35 us for five pointer arguments).

The functions are generated per kernel (straight-line code for its number of inputs, like
the plan's replay functions in execmode/jit_driver/fastcall.py) from our own kernel signature,
never from user input; their text is kept in ``__source__``.
"""

from __future__ import annotations

from ..pysource import define
from .buffers import FREE_REFS
from .buffers import _getrefcount as getrefcount


def build_call_path(positions, entry, address, memo, rebind, pool, set_out, bind_out):
    """``(call, run_into)`` for a kernel reading ``args[p]`` for each p in ``positions``.

    ``memo[k]`` is ``[array, pointer]`` for input k (the block holds that pointer);
    ``rebind(k, array)`` resolves a new array and writes its pointer into the block;
    ``pool`` gives output buffers; ``set_out(pointer)`` writes the output pointer and
    ``bind_out(array)`` checks a caller's output array and writes its pointer.
    """
    ns = {"entry": entry, "address": address, "rebind": rebind, "entries": pool.entries,
          "take": pool.take, "getrefcount": getrefcount, "FREE": FREE_REFS,
          "set_out": set_out, "bind_out": bind_out, "out_memo": [None]}
    check = []
    for k, position in enumerate(positions):
        ns[f"m{k}"] = memo[k]
        check += [f"    a{k} = args[{position}]",
                  f"    if a{k} is not m{k}[0]:",
                  f"        rebind({k}, a{k})"]
    call = ["def call(*args):", *check,
            "    for buffer in entries:",
            "        if getrefcount(buffer[0]) == FREE:",
            "            break",
            "    else:",
            "        buffer = take()",
            "    if buffer is not out_memo[0]:",
            "        set_out(buffer[1])",
            "        out_memo[0] = buffer",
            "    entry(address)",
            "    return buffer[0]"]
    into = ["def run_into(out, *args):", *check,
            "    if out is not out_memo[0]:",
            "        bind_out(out)",
            "        out_memo[0] = out",
            "    entry(address)",
            "    return out"]
    source = "\n".join(call) + "\n\n" + "\n".join(into) + "\n"
    define(source, "<execmode kernel call>", ns)
    ns["call"].__source__ = ns["run_into"].__source__ = source
    return ns["call"], ns["run_into"]
