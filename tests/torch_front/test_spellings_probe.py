"""The probe of common PyTorch spellings (spellings_probe.py): every case runs on
execmode.torch and on PyTorch from the same inputs and agrees. Issue 32's bar is at most 2
failing; the ones that fail are listed here with the reason and are expected to fail (a
case that starts passing fails the run, so the list stays true)."""

from __future__ import annotations

import pytest
from pytorch_twins import torch_or_skip
from torch_front.spellings_probe import CASES, check

import execmode.torch as ours

KNOWN_FAILING: dict[str, str] = {}


def test_the_probe_is_large_and_its_failures_few():
    assert len(CASES) >= 200
    assert len({name for name, _ in CASES}) == len(CASES)
    assert len(KNOWN_FAILING) <= 2 and set(KNOWN_FAILING) <= {name for name, _ in CASES}


@pytest.mark.parametrize("name,fn", CASES, ids=[name for name, _ in CASES])
def test_spelling_behaves_as_pytorch(name, fn):
    theirs = torch_or_skip()
    problem = check(fn, ours, theirs)
    if name in KNOWN_FAILING:
        assert problem is not None, f"{name} passes now: remove it from KNOWN_FAILING"
        pytest.xfail(KNOWN_FAILING[name])
    assert problem is None, f"{name}: {problem}"
