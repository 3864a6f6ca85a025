"""tools/array_api_conformance.py: what it counts, and that it runs a suite's checkout
against each module with the same command. The real suite may not be committed (issue 36),
so the end-to-end test runs the tool over a two-test suite written here in the suite's
layout, with its options; the runner, pytest and the JSON report are the real ones."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "array_api_conformance.py"


def _load_tool():
    spec = importlib.util.spec_from_file_location("array_api_conformance", TOOL)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


tool = _load_tool()

REPORT = {
    "summary": {"passed": 2, "failed": 1, "skipped": 1, "total": 4},
    "collectors": [{"nodeid": "array_api_tests/test_a.py", "outcome": "passed"},
                   {"nodeid": "array_api_tests/test_b.py", "outcome": "failed"}],
    "tests": [{"nodeid": "t::one", "outcome": "passed"}, {"nodeid": "t::two", "outcome": "passed"},
              {"nodeid": "t::three", "outcome": "failed"},
              {"nodeid": "t::four", "outcome": "skipped"}],
}


def test_counts_come_from_the_json_report():
    c = tool.counts_from_report("execmode", REPORT)
    assert (c.passed, c.failed, c.skipped, c.errors) == (2, 1, 1, 0)
    assert c.not_loaded == ("array_api_tests/test_b.py",)
    assert c.passed_ids == {"t::one", "t::two"}


def test_the_table_puts_both_modules_side_by_side_with_the_share_of_numpys_passes():
    ours = tool.counts_from_report("execmode", REPORT)
    numpy_report = {**REPORT, "tests": [*REPORT["tests"], {"nodeid": "t::five",
                                                            "outcome": "passed"}],
                    "summary": {"passed": 3, "failed": 0, "skipped": 1}, "collectors": []}
    text = tool.table([ours, tool.counts_from_report("numpy", numpy_report)])
    assert "| execmode | 2 | 1 | 1 | 0 | 1 |" in text
    assert "| numpy | 3 | 0 | 1 | 0 | 0 |" in text
    assert "execmode passes 2 of the 3 tests NumPy passes (66.7%)" in text
    assert "array_api_tests/test_b.py did not load" in text


def test_a_folder_that_is_not_the_suite_is_refused_with_what_is_missing(tmp_path):
    with pytest.raises(tool.ConformanceError, match="not a checkout of data-apis"):
        tool.check_suite(tmp_path)
    (tmp_path / "array_api_tests").mkdir()
    with pytest.raises(tool.ConformanceError, match="git submodule update --init"):
        tool.check_suite(tmp_path)


def _tiny_suite(root: Path) -> Path:
    """Two tests in the suite's layout, taking the suite's options and its module variable."""
    (root / "array-api" / "spec").mkdir(parents=True)
    tests = root / "array_api_tests"
    tests.mkdir()
    (root / "conftest.py").write_text(textwrap.dedent("""
        def pytest_addoption(parser):
            parser.addoption("--max-examples", type=int)
            parser.addoption("--disable-extension", nargs="+")
    """))
    (tests / "test_tiny.py").write_text(textwrap.dedent("""
        import importlib, os
        xp = importlib.import_module(os.environ["ARRAY_API_TESTS_MODULE"])

        def test_namespace():
            assert xp.asarray([1.0]).__array_namespace__() is xp

        def test_version_is_pinned():
            assert os.environ["ARRAY_API_TESTS_VERSION"] == "2024.12"
    """))
    return root


@pytest.mark.skipif(importlib.util.find_spec("pytest_jsonreport") is None,
                    reason="needs the optional package pytest-json-report (the conformance "
                           "suite's requirement, which the tool reads its counts from)")
@pytest.mark.slow  # two pytest child runs of a tiny suite, one per module
def test_the_tool_runs_one_command_against_execmode_and_numpy(tmp_path, capsys):
    suite = _tiny_suite(tmp_path / "suite")
    assert tool.main(["--suite", str(suite), "--max-examples", "1"]) == 0
    out = capsys.readouterr().out
    assert "| execmode | 2 | 0 | 0 | 0 | 0 |" in out
    assert "| numpy | 2 | 0 | 0 | 0 | 0 |" in out
    assert "execmode passes 2 of the 2 tests NumPy passes (100.0%)" in out
