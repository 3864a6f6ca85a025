"""execmode/native's shared header is the one declaration of what the C files share.

The C builds an OpEvent by position (em_native.h's EM_OP_EVENT_FIELDS): the header's list
must be instrument.OpEvent's fields in order. The C checks it at run time before its first
event; this checks it without a compiler. And the helpers the header declares once (a
slot's offset, the clock, the current scope) stay declared once.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from execmode import native
from execmode.instrument import OpEvent

NATIVE = Path(native.FOLDER)
HEADER = NATIVE / "em_native.h"


def _declared_event_fields() -> list[str]:
    text = HEADER.read_text(encoding="utf-8")
    macro = re.search(r"#define EM_OP_EVENT_FIELDS\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
    assert macro, "em_native.h no longer defines EM_OP_EVENT_FIELDS(X)"
    return re.findall(r"X\(\s*\w+\s*,\s*(\w+)\s*\)", macro.group(1))


def test_the_headers_event_layout_is_opevents():
    assert _declared_event_fields() == list(OpEvent._fields)


def _extension_sources() -> list[Path]:
    """The C files that define a CPython module (the ctypes libraries share nothing)."""
    return sorted(p for p in NATIVE.glob("*.c") if "PyMODINIT_FUNC" in p.read_text("utf-8"))


def test_every_extension_includes_the_shared_header():
    sources = _extension_sources()
    assert {p.name for p in sources} >= {"eager_operators.c", "fast_entry.c", "op_ring.c"}
    for path in sources:
        assert '#include "em_native.h"' in path.read_text(encoding="utf-8"), path.name


# Defined in em_native.h (with an em_ prefix); a definition starts its line with `name(`.
_SHARED = ("member_offset", "perf_counter_ns", "monotonic_ns", "current_scope", "slot")


@pytest.mark.parametrize("path", sorted(set(NATIVE.glob("*.[ch]")) - {HEADER}),
                         ids=lambda p: p.name)
def test_no_file_defines_the_shared_helpers_again(path):
    text = path.read_text(encoding="utf-8")
    for name in _SHARED:
        assert not re.search(rf"^{name}\(", text, re.MULTILINE), f"{path.name} defines {name}"
    if "PyMODINIT_FUNC" in text or path.suffix == ".h":
        # the clock is em_clock.h's, through em_native.h
        assert "clock_gettime" not in text, path.name
