"""The list of slow tests (tests/slow_tests.py) stays true to the files: a renamed module or
test would otherwise fall silently into the fast tier, or the list keep dead names."""

from __future__ import annotations

import ast
import os

import pytest
from slow_tests import _TESTS_DIR, SLOW_MODULES, SLOW_TESTS, mark_slow_tests, slow_key


def _test_functions(module: str) -> set[str]:
    with open(os.path.join(_TESTS_DIR, module), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    return {node.name for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test")}


@pytest.mark.parametrize("module", sorted(SLOW_MODULES))
def test_each_slow_module_exists_and_has_tests(module):
    assert _test_functions(module), f"{module}: no such test module, or no test in it"


@pytest.mark.parametrize("test", sorted(SLOW_TESTS))
def test_each_slow_test_exists_in_a_module_that_is_not_slow_whole(test):
    module, function = test.split("::")
    assert module not in SLOW_MODULES, f"{test}: its whole module is already slow"
    assert function in _test_functions(module), f"{test}: no such test"


def test_slow_key_names_a_test_as_the_list_does():
    path = os.path.join(_TESTS_DIR, "fuzz", "test_fuzz.py")
    assert slow_key(path, "test_fast_tier") == ("fuzz/test_fuzz.py",
                                                "fuzz/test_fuzz.py::test_fast_tier")


class _Item:
    """What mark_slow_tests reads of a pytest item, and the markers it adds."""

    def __init__(self, module: str, name: str):
        self.path = os.path.join(_TESTS_DIR, *module.split("/"))
        self.name, self.originalname = name, name.split("[")[0]
        self.markers: list[str] = []

    def add_marker(self, marker):
        self.markers.append(marker.name)


def test_listed_modules_and_tests_are_marked_and_their_neighbours_are_not():
    items = [_Item("debug/test_controller.py", "test_anything"),
             _Item("fuzz/test_fuzz.py", "test_fast_tier"),
             _Item("fuzz/test_fuzz.py", "test_generation_is_deterministic"),
             _Item("faults/test_hostile_conditions.py",
                   "test_a_hostile_condition_is_refused_when_parsed[x-y]"),
             _Item("faults/test_hostile_conditions.py",
                   "test_the_run_command_refuses_a_bad_condition_before_any_op[a]")]
    mark_slow_tests(items)
    assert [item.markers for item in items] == [["slow"], ["slow"], [], [], ["slow"]]
