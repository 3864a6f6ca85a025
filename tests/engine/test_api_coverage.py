"""Guards that keep the suite in step with the public API."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import execmode as em
from execmode import functional as EF

ENGINE_TESTS = Path(__file__).resolve().parent


def test_every_public_function_is_exercised_by_a_test():
    # A function added to execmode.functional.__all__ needs a test in tests/engine that
    # calls it as em.<name>, or names it in a table of cases ("isnan": np.isnan) that a
    # test runs through getattr(em, name). This lists the ones that have neither.
    # tests/array_api holds the Array API's own functions' tests (issue 36).
    files = [*ENGINE_TESTS.glob("test_*.py"), *ENGINE_TESTS.parent.glob("array_api/test_*.py")]
    text = "\n".join(p.read_text() for p in files)
    called = set(re.findall(r"\bem\.(\w+)\b", text)) | set(re.findall(r'"(\w+)"', text))
    missing = sorted(set(EF.__all__) - called)
    assert not missing, f"no test calls these functions: {missing}"


def test_every_public_function_is_exported_at_the_top_level():
    assert all(getattr(em, name) is getattr(EF, name) for name in EF.__all__)


def test_aliases():
    assert em.pow is em.power and em.transpose is em.permute_dims
    x = em.tensor([2.0, 3.0])
    assert em.pow(x, 2).tolist() == [4.0, 9.0]
    assert em.to_device(x, "cpu") is x


def test_debug_print_prints_and_passes_the_tensor_through(capsys):
    x = em.tensor([1.5, 2.0])
    assert em.debug_print(x, "x = {}").tolist() == [1.5, 2.0]
    assert capsys.readouterr().out.strip() == f"x = {np.array([1.5, 2.0], np.float32)}"
