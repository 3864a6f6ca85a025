"""Shared pytest set-up: hypothesis profiles and the import path of ``tests/helpers.py``.

Profiles (choose with ``HYPOTHESIS_PROFILE``):

* ``ci`` (the default): ~25 examples per property, no deadline (shared CI machines have
  noisy clocks), derandomized when ``CI=true`` so a CI failure reproduces exactly;
* ``fuzz``: 2000 examples per property, for a long local search.

Outside CI each run draws one seed for all properties, shows it in the header and again
under a failure: ``pytest --hypothesis-seed=N`` replays that run's examples (the failing
example's ``@reproduce_failure`` blob is printed too: ``print_blob``).

Tiers (markers in pyproject.toml): ``pytest`` runs everything but the fuzzer's long tier;
``pytest -m "not slow"`` is the ~1 minute tier for every change (``slow`` is set on child
process and end-to-end modules by ``tests/slow_tests.py``); ``pytest -m fuzz`` the fuzzer.
"""

from __future__ import annotations

import os
import random
import sys

import pytest
from hypothesis import HealthCheck, settings

# Test folders have no __init__.py, so each test file is imported by its own folder. Put
# tests/ itself on the path so that every test can `import helpers`, whatever import mode
# pytest runs in.
_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from slow_tests import mark_slow_tests  # noqa: E402  (found through the path set above)

_IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    derandomize=_IN_CI,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz",
    max_examples=2000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.hookimpl(tryfirst=True)  # before hypothesis' own hook reads --hypothesis-seed
def pytest_configure(config):
    if not _IN_CI and config.getoption("--hypothesis-seed") is None:
        config.option.hypothesis_seed = str(random.SystemRandom().getrandbits(32))
    # execmode silences NumPy's RuntimeWarnings from inside its kernels (Inf/NaN are
    # returned quietly, as in PyTorch) with a filter set at import. pytest restores the
    # filters after collection, which drops that one: set it again for every test.
    config.addinivalue_line("filterwarnings", r"ignore::RuntimeWarning:execmode(\.|$)")


def _seed_line(config) -> str:
    if _IN_CI:
        return "hypothesis: derandomized (CI=true)"
    seed = config.getoption("--hypothesis-seed")
    return f"hypothesis seed {seed}: pytest --hypothesis-seed={seed} replays this run's examples"


def pytest_report_header(config):
    return _seed_line(config)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if terminalreporter.stats.get("failed"):
        terminalreporter.write_line(_seed_line(config))


@pytest.hookimpl(tryfirst=True)  # marked before -m selects by marker
def pytest_collection_modifyitems(config, items):
    mark_slow_tests(items)
    # The fuzzer's slow tier (>= 10,000 programs) runs only when asked for: `pytest -m fuzz`
    # (or any -m expression naming it). The default run keeps its fast tier.
    if "fuzz" in (config.getoption("markexpr") or ""):
        return
    slow = [item for item in items if item.get_closest_marker("fuzz") is not None]
    if slow:
        dropped = {id(item) for item in slow}
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if id(item) not in dropped]


@pytest.fixture(autouse=True)
def _private_session_folder(tmp_path_factory, monkeypatch):
    # Every recording verb writes to the session folder by default (profilers/session_dir.py):
    # each test gets its own, inherited by the child processes it starts, so tests never
    # fill the user's cache nor see each other's sessions. Apart from tmp_path, so tests
    # that look at what tmp_path holds are not disturbed.
    monkeypatch.setenv("EXECMODE_SESSION_DIR", str(tmp_path_factory.mktemp("sessions")))
