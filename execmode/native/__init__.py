"""execmode's hand-written C, in one place, and the contract between it and Python.

Each C file here is a cache of a decision Python made: Python decides what the fast path
may do, the C only looks up and calls, and every call it does not take goes back to the
Python version (which stays the reference: jit_driver/paths.py forces each path, and the
tests compare them). The generated kernels' headers (em_common.h, em_dialect_*.h,
em_eager_sum.h, em_gemm.h) and the kernel clock (em_clock.h, which generated programs and
the fast entry share) belong to codegen, not here.

Files, and who builds and installs each (its owner, through codegen/extension_build.py or
its own ctypes loader; this package imports nothing):

* ``em_native.h``: what the extensions share, declared once: a __slots__ member's offset,
  the clock (em_clock.h's, time.perf_counter_ns's on Linux), the current scope
  (``scope._state.current``) and the OpEvent's field order (``EM_OP_EVENT_FIELDS``, which
  must match instrument.OpEvent's fields: the C checks it before building an event, and
  tests/codegen/test_native_contract.py checks the header against the class).
* ``eager_operators.c`` (``_em_eager_operators``): Tensor's ``+ - * /`` and 22 unary
  functions; codegen/eager_operators.py loads it, dispatch's paths install it.
* ``eager_erf.c`` (ctypes): erf's inner intervals for large eager inputs; loaded beside the
  operators (codegen/eager_erf.py), called by ops/erf.py.
* ``fast_entry.c`` (``_em_fast_entry``): a jitted call's replay; the jit driver builds one
  per qualifying plan (codegen/fast_entry.py, jit_driver/fastcall.py).
* ``op_ring.c`` (``_em_op_ring``) and its parts ``op_ring_*.h``, ``cpu_memory.h``: the
  recorder's per-op path, compiled as one translation unit (profilers/native.py).
* ``blas_workers.c`` (ctypes, opt-in): OpenBLAS's parallel jobs on the kernels' OpenMP
  team (codegen/blas_workers.py).

The Python state the C reads, and where it is owned (the C reads these by name from the
owner's module dict, handed to it when an extension object is made; renaming one of them
is a change to this contract):

* dispatch.py: ``_plain`` (no tracer or listener: the operators may take the call),
  ``_tracing`` (threads tracing), ``_grad_enabled`` / ``_thread.grad`` (grad mode),
  ``_fast_with_events``, ``_native_binary``, ``_native_general`` (how an op with a
  listener is handed over), ``_on_op`` (the op listeners), ``_seq`` (the op counter),
  ``_NO_ATTRS``, ``_EAGER``, ``CPU``, ``OpEvent`` (the event built), ``_scope`` (scope.py,
  whose ``_state.current`` is the scope), ``_locations`` and ``user_location`` (source.py:
  the user's line); an OpDef's ``impl`` (ops/).
* jit_driver/jit.py: ``_jit_disabled``; a JitFunction's ``_fast`` and ``_call``;
  instrument.py's hook lists (held, filled in place).
* The op ring reads nothing by name: the recorder passes it what it reads (the op counter,
  the scope thread-local, the internal-code test, the location function, the Tensor type
  and its ``_data`` slot).
"""

from __future__ import annotations

import os

FOLDER = os.path.dirname(os.path.abspath(__file__))


def source_path(name: str) -> str:
    """The path of the C file ``name`` in this package."""
    return os.path.join(FOLDER, name)
