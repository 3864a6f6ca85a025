"""The Array API conformance suite against execmode and NumPy, with the same flags, counted
side by side (issue 36).

    python tools/array_api_conformance.py --suite ~/src/array-api-tests
    python tools/array_api_conformance.py --suite PATH --max-examples 5 --modules execmode

The suite (data-apis/array-api-tests) is not on PyPI: PATH is the user's checkout of it,
with its ``array-api`` submodule (``git submodule update --init``) and its requirements
(``pip install -r requirements.txt``). It is never copied into this repository.

Each module runs in its own pytest process in the checkout, one after the other (the
runs are CPU-bound), with the flags docs/array-api.md gives: ``--max-examples``, the
``linalg`` and ``fft`` extensions disabled (``--extensions`` runs them too), every dtype
drawn (``--skip-dtypes`` leaves some out), ``--continue-on-collection-errors`` (so a test
module that cannot load is counted,
not the end of the run) and the API version pinned for both modules (the suite would
otherwise test NumPy at its ``__array_api_version__`` and a module without one at the
newest). The counts come from the run's JSON report (pytest-json-report, one of the
suite's requirements): passed, failed, skipped, errors and test modules not loaded, and,
by test id, how many of the tests NumPy passes execmode passes too (the issue's goal:
95%).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODULES = ("execmode", "numpy")
# NumPy 2.4's __array_api_version__, and the version docs/array-api.md describes
DEFAULT_VERSION = "2024.12"
DEFAULT_SKIP_DTYPES = ""  # complex64 and complex128 included, since execmode has them
OUTCOMES = ("passed", "failed", "skipped", "error")


class ConformanceError(Exception):
    """What stops the run before the suite starts (a bad --suite, a missing plugin)."""


@dataclass(frozen=True)
class Counts:
    """One module's run: the counts, the ids of the tests it passed, the modules not loaded."""

    module: str
    passed: int
    failed: int
    skipped: int
    errors: int
    not_loaded: tuple[str, ...]
    passed_ids: frozenset[str]
    seconds: float


def check_suite(path: Path) -> Path:
    """The suite's root, or a ConformanceError that says what is missing."""
    path = path.expanduser().resolve()
    if not (path / "array_api_tests").is_dir():
        raise ConformanceError(
            f"{path} is not a checkout of data-apis/array-api-tests (no array_api_tests/ "
            "folder): git clone https://github.com/data-apis/array-api-tests")
    spec = path / "array-api" / "spec"
    if not spec.is_dir():
        raise ConformanceError(
            f"{path} lacks the spec submodule ({spec}): run `git submodule update --init` "
            "in the checkout")
    return path


def check_plugins() -> None:
    try:
        import pytest_jsonreport  # noqa: F401 - the suite's requirement, read for the counts
    except ImportError:
        raise ConformanceError(
            "pytest-json-report is not installed: pip install -r requirements.txt in the "
            "suite's checkout (hypothesis, ndindex, pytest-json-report)") from None


def pytest_command(report: Path, max_examples: int, extra: list[str],
                   extensions: bool = False) -> list[str]:
    """The one command line both modules run (only the environment differs)."""
    disabled = [] if extensions else ["--disable-extension", "linalg", "fft"]
    return [sys.executable, "-m", "pytest", "array_api_tests",
            f"--max-examples={max_examples}", *disabled,
            "-q", "-p", "no:cacheprovider", "--continue-on-collection-errors",
            "--json-report", f"--json-report-file={report}", *extra]


def module_env(module: str, version: str, skip_dtypes: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ARRAY_API_TESTS_MODULE"] = module
    env["ARRAY_API_TESTS_VERSION"] = version
    env["ARRAY_API_TESTS_SKIP_DTYPES"] = skip_dtypes
    # execmode from this tree, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def counts_from_report(module: str, report: dict, seconds: float = 0.0) -> Counts:
    """The counts of one pytest-json-report document."""
    summary = report.get("summary", {})
    passed_ids = frozenset(t["nodeid"] for t in report.get("tests", ())
                           if t.get("outcome") == "passed")
    not_loaded = tuple(c["nodeid"] for c in report.get("collectors", ())
                       if c.get("outcome") == "failed")
    return Counts(module, summary.get("passed", 0), summary.get("failed", 0),
                  summary.get("skipped", 0), summary.get("error", 0), not_loaded,
                  passed_ids, seconds)


def run_module(suite: Path, module: str, args) -> Counts:
    with tempfile.TemporaryDirectory(prefix="array-api-") as tmp:
        report_path = Path(tmp) / "report.json"
        cmd = pytest_command(report_path, args.max_examples, args.pytest_args,
                             args.extensions)
        print(f"running the suite against {module} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=suite, env=module_env(module, args.version,
                                                              args.skip_dtypes),
                              capture_output=True, text=True, timeout=args.timeout)
        seconds = time.perf_counter() - start
        if args.log_dir:
            Path(args.log_dir).mkdir(parents=True, exist_ok=True)
            (Path(args.log_dir) / f"{module}.txt").write_text(proc.stdout + proc.stderr)
        if not report_path.exists():
            # The conftest itself failed (a module the suite cannot import, a suite newer
            # than this script): nothing ran, so there are no counts to show.
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise ConformanceError(
                f"the suite did not start against {module} (pytest exit {proc.returncode}):"
                f"\n{tail}")
        return counts_from_report(module, json.loads(report_path.read_text()), seconds)


def share_of(reference: Counts, other: Counts) -> tuple[int, int]:
    """(tests both passed, tests the reference passed)."""
    return len(reference.passed_ids & other.passed_ids), len(reference.passed_ids)


def table(results: list[Counts]) -> str:
    """The counts as a Markdown table, one row per module."""
    lines = ["| module | passed | failed | skipped | errors | modules not loaded | seconds |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for c in results:
        lines.append(f"| {c.module} | {c.passed:,} | {c.failed:,} | {c.skipped:,} | "
                     f"{c.errors:,} | {len(c.not_loaded)} | {c.seconds:.0f} |")
    by_name = {c.module: c for c in results}
    if "numpy" in by_name:
        for c in results:
            if c.module == "numpy":
                continue
            both, ref = share_of(by_name["numpy"], c)
            if ref:
                lines.append(f"\n{c.module} passes {both:,} of the {ref:,} tests NumPy "
                             f"passes ({100 * both / ref:.1f}%).")
    for c in results:
        for nodeid in c.not_loaded:
            lines.append(f"\n{c.module}: {nodeid} did not load")
    return "\n".join(lines)


def suite_commit(suite: Path) -> str:
    proc = subprocess.run(["git", "-C", str(suite), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)
    return proc.stdout.strip() or "unknown (not a git checkout)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", required=True, type=Path,
                        help="a checkout of data-apis/array-api-tests (with its submodule)")
    parser.add_argument("--modules", nargs="+", default=list(DEFAULT_MODULES),
                        help="the array modules to run it against (default: execmode numpy)")
    parser.add_argument("--max-examples", type=int, default=20,
                        help="hypothesis examples per test (default 20)")
    parser.add_argument("--version", default=DEFAULT_VERSION,
                        help=f"the standard's version to test (default {DEFAULT_VERSION})")
    parser.add_argument("--skip-dtypes", default=DEFAULT_SKIP_DTYPES,
                        help=f"dtypes the suite leaves out (default {DEFAULT_SKIP_DTYPES}; "
                             "'' for none)")
    parser.add_argument("--extensions", action="store_true",
                        help="run the linalg and fft extensions' tests too (off by default)")
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds one module's run may take (default 3600)")
    parser.add_argument("--log-dir", help="keep each run's pytest output there")
    parser.add_argument("pytest_args", nargs="*",
                        help="more pytest arguments, after --, for every module alike")
    args = parser.parse_args(argv)
    try:
        suite = check_suite(args.suite)
        check_plugins()
        results = [run_module(suite, m, args) for m in args.modules]
    except ConformanceError as exc:
        print(f"array_api_conformance: {exc}", file=sys.stderr)
        return 2
    except subprocess.TimeoutExpired as exc:
        print(f"array_api_conformance: a run took over {exc.timeout:.0f} s (--timeout)",
              file=sys.stderr)
        return 2
    print(f"array-api-tests {suite_commit(suite)}, API {args.version}, "
          f"--max-examples={args.max_examples}, linalg and fft "
          f"{'enabled' if args.extensions else 'disabled'}, "
          f"skipped dtypes: {args.skip_dtypes or 'none'}\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
