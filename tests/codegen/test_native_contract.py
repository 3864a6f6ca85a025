"""execmode/native's declarations are the ones the C and Python both follow.

The C builds an OpEvent by position (em_native.h's EM_OP_EVENT_FIELDS): the header's list
must be instrument.OpEvent's fields in order. The C checks it at run time before its first
event; this checks it without a compiler. The helpers the header declares once (a slot's
offset, the clock, the current scope) stay declared once. The Python names the C reads
are the ones native.MODULE_STATE and OBJECT_ATTRIBUTES declare, and exist, and the C spells
them only through the macros the build generates from that table. And every extension
builds wherever the machine has what a build needs.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
from execmode.profilers import native as op_ring

from execmode import native
from execmode.codegen import eager_operators, fast_entry
from execmode.codegen.extension_build import HEADERS, _with_local_headers
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


def _declared_names() -> set[str]:
    return {n for names in native.MODULE_STATE.values() for n in names} \
        | set(native.OBJECT_ATTRIBUTES)


def _c_without_comments(path: Path) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", path.read_text(encoding="utf-8"), flags=re.S)


# The C's own interface (an extension type's keyword list and members) may share a word
# with a Python name it reads (Operator's keyword and member `impl`, OpDef's `impl`): those
# literals name the C's API, not Python's state.
_OWN_INTERFACE = re.compile(r"static\s+char\s*\*\s*\w+\[\]\s*=\s*\{[^}]*\}"
                            r"|static\s+PyMemberDef\s+\w+\[\]\s*=\s*\{.*?\n\};", re.S)


def test_the_c_spells_no_declared_name_but_through_its_macro():
    """em_state_names.h is generated from native's table, so a name spelled as a literal
    would be a second definition that no rename of the table reaches."""
    declared = _declared_names()
    for path in NATIVE.glob("*.[ch]"):
        code = _OWN_INTERFACE.sub(" ", _c_without_comments(path))
        spelled = sorted(set(re.findall(r'"([^"\\\n]*)"', code)) & declared)
        assert not spelled, f"{path.name} spells {spelled} (use the EM_NAME_ macros)"
        assert not re.search(r'PyUnicode_InternFromString\(\s*"', code), \
            f"{path.name} interns a name the table does not declare"


def test_the_c_uses_every_generated_macro_and_no_other():
    header = native.state_names_header()
    generated = set(re.findall(r"#define (EM_NAME_\w+) ", header))
    assert generated == {native.state_name_macro(n) for n in _declared_names()}
    used = set()
    for path in NATIVE.glob("*.[ch]"):
        used.update(re.findall(r"\bEM_NAME_\w+", _c_without_comments(path)))
    assert used - generated == set(), "C uses EM_NAME_ macros the table does not generate"
    assert generated - used == set(), "declared names no C file reads any more"


def test_the_build_inlines_the_generated_header():
    source = _with_local_headers('#include "em_native.h"\n', (str(NATIVE), HEADERS),
                                 native.generated_headers())
    assert '#define EM_NAME_PLAIN "_plain"' in source
    assert "#include" not in re.sub(r"#include\s*<[^>]+>", "", source)
    assert not (NATIVE / native.GENERATED_HEADER).exists(), \
        "the build generates em_state_names.h: a file of that name would be a stale copy"


def test_two_names_that_would_share_a_macro_are_refused(monkeypatch):
    monkeypatch.setattr(native, "OBJECT_ATTRIBUTES", (*native.OBJECT_ATTRIBUTES, "__plain"))
    with pytest.raises(ValueError, match="EM_NAME_PLAIN"):
        native.state_names_header()


@pytest.mark.parametrize("module", sorted(native.MODULE_STATE))
def test_every_declared_module_name_exists(module):
    owner = importlib.import_module(module)
    missing = [n for n in native.MODULE_STATE[module] if not hasattr(owner, n)]
    assert not missing, f"{module} no longer has {missing}, which the C reads"


def test_the_declared_attributes_exist_where_the_c_reads_them():
    from execmode import dispatch
    from execmode._tensor import Tensor
    from execmode.jit_driver.jit import JitFunction
    from execmode.ops import OPS

    assert all(type(Tensor.__dict__[n]).__name__ == "member_descriptor"
               for n in ("_data", "requires_grad"))
    assert hasattr(dispatch._thread, "grad")
    assert isinstance(dispatch._scope._state.current, str)
    assert all(hasattr(op, "impl") for op in OPS.values())
    jitted = JitFunction(lambda x: x)
    assert callable(jitted._call) and hasattr(jitted, "_fast")


BUILD_STATUS = {"eager_operators": eager_operators.extension_status,
                "fast_entry": fast_entry.extension_status, "op_ring": op_ring.status}


@pytest.mark.parametrize("extension", sorted(BUILD_STATUS))
def test_each_extension_builds_where_the_machine_has_what_it_needs(extension):
    """The tests of each extension skip where it is unavailable; only a machine without a
    compiler, headers or a cache folder may skip here: a C error fails."""
    status = BUILD_STATUS[extension]()
    if status["machine_lacks"]:
        pytest.skip(f"{extension} needs {status['machine_lacks']}: {status['reason']}")
    assert status["ok"], f"{extension} did not build: {status['reason']}"
