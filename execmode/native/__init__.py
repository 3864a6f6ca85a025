"""execmode's hand-written C, in one place, and the contract between it and Python.

The three CPython extensions (the eager operators, the jit's fast entry, the op ring) are
caches of decisions Python made: Python decides what the fast path may do, the C only
looks up and calls, and every call it does not take goes back to the Python version
(which stays the reference: jit_driver/paths.py forces each path, and the tests compare
them); erf, max pooling and the BLAS workers are plain C libraries
loaded with ctypes. The generated kernels' headers (em_common.h, em_dialect_*.h,
em_eager_sum.h, em_gemm.h) and the kernel clock (em_clock.h, which generated programs and
the fast entry share) belong to codegen, not here.

Files, and who builds and installs each (its owner, through codegen/extension_build.py or
its own ctypes loader; this package imports nothing of execmode's):

* ``em_native.h``: what the extensions share, declared once: a __slots__ member's offset,
  the clock (em_clock.h's, time.perf_counter_ns's on Linux), the current scope
  (``scope._state.current``) and the OpEvent's field order (``EM_OP_EVENT_FIELDS``, which
  must match instrument.OpEvent's fields: the C checks it before building an event, and
  tests/codegen/test_native_contract.py checks the header against the class).
* ``eager_operators.c`` (``_em_eager_operators``): Tensor's ``+ - * /`` and 22 unary
  functions; codegen/eager_operators.py builds and installs it once dispatch says the
  operators are hot (api.py hands dispatch that hook) or jit_driver/paths.py pins it.
* ``eager_erf.c`` (ctypes): eager erf and GELU (float64: fdlibm, NumPy's exp for the tails;
  float32: codegen's ``em_erf_f32``, the one header it includes); loaded beside the
  operators (codegen/eager_erf.py), called by ops/erf.py.
* ``windows.c`` (ctypes): max pooling (values, indices, the gradient), im2col and col2im,
  called by ops/pooling.py's and ops/conv.py's primitives eagerly and as plan steps
  (codegen/eager_windows.py, ops/window_kernels.py), and by whole-graph programs through
  their addresses (codegen/program_windows.py).
* ``eager_adam.c`` (ctypes): Adam's and AdamW's per-parameter update in one pass, for the
  optimizers' plain path (codegen/eager_adam.py, optim/plain.py's ``ADAM``).
* ``fast_entry.c`` (``_em_fast_entry``): a jitted call's replay; the jit driver builds one
  per qualifying plan (codegen/fast_entry.py, jit_driver/fastcall.py).
* ``op_ring.c`` (``_em_op_ring``) and its parts ``op_ring_*.h``, ``cpu_memory.h``: the
  recorder's per-op path, compiled as one translation unit (profilers/native.py).
* ``blas_workers.c`` (ctypes, opt-in): OpenBLAS's parallel jobs on the kernels' OpenMP
  team (codegen/blas_workers.py).
* ``clock_ticks.c`` (ctypes, x86-64): the time-stamp counter read from Python, to learn
  the kernel clock's ns per tick (codegen/clock_mode.py).

The Python state the C reads is declared below, once: MODULE_STATE (names the C looks up
in its owners' module dicts, handed to it when an extension object is made) and
OBJECT_ATTRIBUTES (attributes of objects it is handed). The C spells none of them: the
build generates ``em_state_names.h`` from this table (state_names_header: one
``EM_NAME_...`` macro per name; em_native.h includes it, codegen/extension_build.py
inlines the generated text, so there is no copy on disk to fall out of step). Renaming
one of them is a change to this contract: tests/codegen/test_native_contract.py checks
that every declared name exists, and that the C uses every macro and spells no declared
name as a literal. Besides those, the fast entry holds instrument.py's kernel hook lists
(``_on_kernel``, ``_before_kernel``, ``_after_kernel``: instrument fills them in place,
never rebinds them), and the op ring reads nothing by name: the recorder passes it what
it reads (the op counter, the scope thread-local, the internal-code test, the location
function, the Tensor type and its ``_data`` slot).
"""

from __future__ import annotations

import os

FOLDER = os.path.dirname(os.path.abspath(__file__))

MODULE_STATE = {
    "execmode.dispatch": (
        "_plain",              # no tracer, no listener: the operators may take the call
        "_tracing",            # how many threads trace
        "_grad_enabled",       # grad mode on in every thread (else _thread.grad)
        "_thread",             # the thread-local grad mode
        "_fast_with_events",   # listeners that want events after ops only (the recorder)
        "_native_binary",      # the op ring's entry for an operator's op, or None
        "_native_general",     # the op ring's entry for any eager op, or None
        "_on_op",              # the op listeners (a list, filled in place)
        "_seq",                # the op counter
        "_NO_ATTRS", "_EAGER", "CPU", "OpEvent",   # what an OpEvent is built from
        "_scope",              # scope.py, whose _state.current is the scope path
        "_locations", "user_location",             # source.py: the user's line
    ),
    "execmode.jit_driver.jit": (
        "_jit_disabled",       # em.disable_jit()
    ),
}
OBJECT_ATTRIBUTES = (
    "_data", "requires_grad",   # Tensor's slots, whose offsets the operators read once
    "impl",      # an OpDef's eager implementation (ops/), read per call
    "grad",      # dispatch._thread.grad
    "_state",    # scope._state, the thread-local
    "current",   # scope._state.current
    "_fast",     # a JitFunction's fast replay
    "_call",     # a JitFunction's general path
)


def source_path(name: str) -> str:
    """The path of the C file ``name`` in this package."""
    return os.path.join(FOLDER, name)


GENERATED_HEADER = "em_state_names.h"


def state_name_macro(name: str) -> str:
    """The C macro that spells the declared Python name ``name``: ``_plain`` is
    ``EM_NAME_PLAIN``."""
    return "EM_NAME_" + name.lstrip("_").upper()


def state_names_header() -> str:
    """em_state_names.h's text: a string macro for every name the tables above declare."""
    owners = [(f"{module}'s module dict", names) for module, names in MODULE_STATE.items()]
    owners.append(("attributes of objects the C is handed", OBJECT_ATTRIBUTES))
    lines = ["/* em_state_names.h: generated by the build from execmode/native/__init__.py's",
             " * MODULE_STATE and OBJECT_ATTRIBUTES (state_names_header); not a file to edit. */",
             "#ifndef EM_STATE_NAMES_H", "#define EM_STATE_NAMES_H"]
    spelled: dict[str, str] = {}
    for owner, names in owners:
        lines.append(f"/* {owner} */")
        for name in names:
            macro = state_name_macro(name)
            if spelled.setdefault(macro, name) != name:
                raise ValueError(f"{name!r} and {spelled[macro]!r} would both be {macro}")
            lines.append(f'#define {macro} "{name}"')
    lines.append("#endif /* EM_STATE_NAMES_H */")
    return "\n".join(lines) + "\n"


def generated_headers() -> dict:
    """The headers the build generates for the C here, by the name the C includes."""
    return {GENERATED_HEADER: state_names_header()}
