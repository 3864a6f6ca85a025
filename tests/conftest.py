"""Shared pytest set-up: hypothesis profiles and the import path of ``tests/helpers.py``.

Profiles (choose with ``HYPOTHESIS_PROFILE``):

* ``ci`` (the default): ~25 examples per property, no deadline (shared CI machines have
  noisy clocks), derandomized when ``CI=true`` so a CI failure reproduces exactly;
* ``fuzz``: 2000 examples per property, for a long local search.

Outside CI every property draws a fresh seed; a failing one names its seed under the
failure (``pytest --hypothesis-seed=N NODEID`` replays that run) next to the
``@reproduce_failure`` blob of the shrunk example (``print_blob``), and the example
database (``.hypothesis/``) replays it first on the next run.

Tiers (markers in pyproject.toml): ``pytest`` runs everything but the fuzzers' long tiers;
``pytest -m "not slow"`` is the ~1 minute tier for every change (``slow`` is marked where
the tests are: ``pytestmark = pytest.mark.slow`` in a module of child processes or
end-to-end runs, ``@pytest.mark.slow`` on such a test in a fast module); ``pytest -m fuzz``
the program fuzzer's long tier, ``pytest -m model_fuzz`` the model fuzzer's.

Execution paths (execmode/jit_driver/paths.py): every test module starts on the paths the
environment asks for (``EXECMODE_EAGER_PATH``, ``EXECMODE_JIT_REPLAY``: run the suite
with ``EXECMODE_EAGER_PATH=c`` to take the C operators everywhere), and what a test
changes is put back after it; the ``eager_path`` fixture runs a test on both eager paths.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
from hypothesis import HealthCheck, settings

# Test folders have no __init__.py, so each test file is imported by its own folder. Put
# tests/ itself on the path so that every test can `import helpers`, whatever import mode
# pytest runs in.
_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

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


def pytest_configure(config):
    # execmode silences NumPy's RuntimeWarnings from inside its kernels (Inf/NaN are
    # returned quietly, as in PyTorch) with a filter set at import. pytest restores the
    # filters after collection, which drops that one: set it again for every test.
    config.addinivalue_line("filterwarnings", r"ignore::RuntimeWarning:execmode(\.|$)")


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): one worker per CPU this process may run on (the
    affinity mask, not the machine's count), at most 8, as each worker holds its own
    kernels and imports; ``PYTEST_XDIST_AUTO_NUM_WORKERS`` overrides it."""
    forced = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS")
    if forced:
        return int(forced)
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1
    return max(1, min(usable, 8))


def pytest_report_header(config):
    if _IN_CI:
        return "hypothesis: derandomized (CI=true)"
    return "hypothesis: a fresh seed per property, named under a failure"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # Hypothesis names the seed of a failure only when the failure did not reproduce. Name
    # it always. (A seed forced for the whole run with --hypothesis-seed would do too, but
    # turns off the example database that replays a failure on the next run.)
    report = (yield).get_result()
    seed = getattr(getattr(item, "obj", None), "_hypothesis_internal_use_generated_seed", None)
    if report.failed and report.when == "call" and seed is not None:
        report.sections.append(("hypothesis seed", f"pytest --hypothesis-seed={seed} "
                                f"'{item.nodeid}' replays this run (or @seed({seed}))"))


def pytest_collection_modifyitems(config, items):
    # The fuzzers' long tiers (>= 10,000 programs, >= 2,000 models) run only when asked for:
    # `pytest -m fuzz`, `pytest -m model_fuzz` (or any -m expression naming the marker as
    # a word). The default run keeps their fast tiers.
    named = set(re.findall(r"\w+", config.getoption("markexpr") or ""))
    for marker in ("fuzz", "model_fuzz"):
        if marker in named:
            continue
        slow = [item for item in items if item.get_closest_marker(marker) is not None]
        if slow:
            dropped = {id(item) for item in slow}
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if id(item) not in dropped]


# --- execution paths (execmode/jit_driver/paths.py) -------------------------------------
# Which path an op takes must not depend on the tests before it: the eager operators turn
# C after dispatch.HOT_CALLS plain calls anywhere in the process, and a test may pin a
# path and not put it back. Each module starts on the paths the environment asks for
# (EXECMODE_EAGER_PATH, EXECMODE_JIT_REPLAY; default auto, counting from zero), before its
# own fixtures run; each test then starts from the state the module's fixtures set, and
# what the test changes (the hot count included) is put back after it.

def _engine_paths():
    """jit_driver/paths.py once the engine is loaded, else None (nothing to pin yet)."""
    if "execmode.api" not in sys.modules:
        return None
    from execmode.jit_driver import paths
    return paths


def _apply_default_paths(paths) -> None:
    defaults = paths.defaults()
    paths.set_eager(defaults["eager"])
    if paths.current()["replay"] != defaults["replay"]:
        paths.set_replay(defaults["replay"])


_module_seen = [None]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before the fixtures of the module's first test (a module fixture may pin a path).
    module = getattr(item, "module", None)
    if module is not _module_seen[0]:
        _module_seen[0] = module
        paths = _engine_paths()
        if paths is not None:
            _apply_default_paths(paths)


@pytest.fixture(autouse=True)
def _execution_paths():
    paths = _engine_paths()
    if paths is None:
        yield
        paths = _engine_paths()
        if paths is not None:  # the test loaded the engine: start the next one afresh
            _apply_default_paths(paths)
        return
    from execmode._tensor import Tensor
    from execmode.codegen import eager_operators

    restore = eager_operators.snapshot(Tensor)
    replay = paths.current()["replay"]
    yield
    restore()
    if paths.current()["replay"] != replay:
        paths.set_replay(replay)


@pytest.fixture(params=["python", "c"])
def eager_path(request):
    """The test once on the Python eager operators and unary functions, once on the C ones
    (skipped where they cannot be built): a module opts in with
    ``pytestmark = pytest.mark.usefixtures("eager_path")``."""
    import execmode  # noqa: F401
    from execmode import api  # noqa: F401 - the engine, so that its paths exist
    from execmode.jit_driver import paths

    if request.param == "c" and not paths.eager_c_available():
        pytest.skip("the C eager operators cannot be built here")
    paths.set_eager(request.param)
    return request.param


@pytest.fixture(autouse=True)
def _private_session_folder(tmp_path_factory, monkeypatch):
    # Every recording verb writes to the session folder by default (profilers/session_dir.py):
    # each test gets its own, inherited by the child processes it starts, so tests never
    # fill the user's cache nor see each other's sessions. Apart from tmp_path, so tests
    # that look at what tmp_path holds are not disturbed.
    monkeypatch.setenv("EXECMODE_SESSION_DIR", str(tmp_path_factory.mktemp("sessions")))
