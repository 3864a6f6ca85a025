"""The compiler probe is remembered per compiler and machine (codegen/toolchain_record.py):
a second process runs no compiler to learn the flags, an upgraded compiler is probed again,
and a damaged record is ignored. A wrapper script stands in front of the real compiler and
logs each call, so the test sees what ran."""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from execmode.codegen import toolchain, toolchain_record

REAL_CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
pytestmark = pytest.mark.skipif(REAL_CC is None, reason="no C compiler on PATH")


@pytest.fixture
def logged_cc(tmp_path, monkeypatch):
    """CC is a script that logs its arguments and runs the real compiler; a fresh cache
    folder; the process's probe caches cleared before and after."""
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "logged-cc"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {REAL_CC} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CC", str(wrapper))
    monkeypatch.setenv("EXECMODE_CACHE_DIR", str(tmp_path / "cache"))
    _forget_this_process()
    yield wrapper, log
    _forget_this_process()


def _forget_this_process():
    for cached in (toolchain._probe, toolchain._compiler, toolchain._takes):
        cached.cache_clear()


def _calls(log) -> list:
    return log.read_text().splitlines() if log.exists() else []


def test_a_second_process_probes_nothing(logged_cc):
    wrapper, log = logged_cc
    first = toolchain.get_toolchain()
    assert any("--version" in c for c in _calls(log)) and \
        any("probe.c" in c for c in _calls(log)), _calls(log)
    probed = len(_calls(log))

    _forget_this_process()  # as a new process would start
    again = toolchain.get_toolchain()
    assert again == first
    assert toolchain.compiler() == (first.command, first.version)
    assert len(_calls(log)) == probed, "the remembered probe ran the compiler again"


def test_an_extra_flag_answer_is_remembered_too(logged_cc):
    wrapper, log = logged_cc
    tc = toolchain.get_toolchain()
    takes = toolchain._takes(tc.command, tc.flags, toolchain.LARGE_UNIT_FLAGS)
    asked = len(_calls(log))
    _forget_this_process()
    tc = toolchain.get_toolchain()
    assert toolchain._takes(tc.command, tc.flags, toolchain.LARGE_UNIT_FLAGS) == takes
    assert len(_calls(log)) == asked


def test_a_changed_compiler_is_probed_again(logged_cc):
    wrapper, log = logged_cc
    toolchain.get_toolchain()
    probed = len(_calls(log))
    # An upgrade replaces the program: another size (and time) than the remembered one.
    wrapper.write_text(wrapper.read_text() + "# upgraded\n")
    _forget_this_process()
    toolchain.get_toolchain()
    assert len(_calls(log)) > probed


@pytest.mark.parametrize("damage", ["not json{", '["a list"]',
                                    '{"KEY": {"version": 3, "flags": "x"}}'])
def test_a_damaged_record_is_ignored(logged_cc, damage):
    wrapper, log = logged_cc
    first = toolchain.get_toolchain()
    record = os.path.join(os.environ["EXECMODE_CACHE_DIR"], "toolchain", "probe.json")
    key = toolchain_record.key(os.environ["CC"], first.command, toolchain._ATTEMPTS,
                               toolchain.cpu_identity())
    with open(record, "w") as f:
        f.write(damage.replace("KEY", key))
    _forget_this_process()
    probed = len(_calls(log))
    assert toolchain.get_toolchain() == first
    assert len(_calls(log)) > probed  # probed again, and the record repaired
    assert toolchain_record.load(key) is not None


def test_a_failing_compiler_is_not_remembered(tmp_path, monkeypatch):
    broken = tmp_path / "broken-cc"
    broken.write_text("#!/bin/sh\necho 'broken 1.0'\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("CC", str(broken))
    monkeypatch.setenv("EXECMODE_CACHE_DIR", str(tmp_path / "cache"))
    _forget_this_process()
    try:
        with pytest.raises(toolchain.NoCompiler):
            toolchain.get_toolchain()
        assert toolchain_record.load(toolchain_record.key(
            str(broken), (str(broken),), toolchain._ATTEMPTS, toolchain.cpu_identity())) is None
    finally:
        _forget_this_process()
