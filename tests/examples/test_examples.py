"""Every example runs (EXECMODE_QUICK=1: small sizes, a few seconds each), so none can rot,
and runs under ``execmode profile``: its Chrome trace must nest on every track (Perfetto
draws slices that overlap without nesting as garbage, and a compile drawn once per kernel
overlapped itself). The claim examples must end with a verdict line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict

import pytest

# Slow tier: every example script, in quick mode, each in its own interpreter.
pytestmark = pytest.mark.slow

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "examples")
SCRIPTS = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".py") and not f.startswith("_"))
CLAIMS = {"matpow.py", "mlp_forward.py", "python_overhead.py", "single_call.py",
          "size_sweep.py", "batch_sweep.py", "side_effects.py", "dynamic_branch.py",
          "varlen.py", "fusion.py", "memory_planning.py", "error_lines.py", "autograd.py",
          "passes_tour.py", "char_gpt.py", "digits_cnn.py",
          "sampling_loop.py"}


def test_every_claim_has_an_example():
    assert CLAIMS <= set(SCRIPTS)


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One kernel and calibration cache for the examples: each would compile the same
    kernels and measure the same profiler cost again."""
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("name", SCRIPTS)
def test_example_runs_in_quick_mode_and_its_trace_nests(name, tmp_path, shared_cache):
    env = dict(os.environ, EXECMODE_QUICK="1", EXECMODE_CACHE_DIR=str(shared_cache),
               EXECMODE_SESSION_DIR=str(tmp_path))
    trace = tmp_path / "trace.json"
    command = [sys.executable, "-m", "execmode", "profile", "--format", "chrome", "-o",
               str(trace), os.path.join(EXAMPLES, name)]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    if name in CLAIMS:
        assert "VERDICT: " in done.stdout, done.stdout[-2000:]
    assert_nested(json.loads(trace.read_text())["traceEvents"])


def assert_nested(events: list) -> None:
    """Complete ("X") events on each track either nest or follow each other."""
    by_track = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            by_track[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"]))
    for track, spans in by_track.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_spans: list = []
        for start, end, name in spans:
            while open_spans and open_spans[-1][1] <= start:
                open_spans.pop()
            if open_spans:
                outer = open_spans[-1]
                assert end <= outer[1], (f"track {track}: {name!r} [{start}, {end}] overlaps "
                                         f"{outer[2]!r} [{outer[0]}, {outer[1]}] without nesting")
            open_spans.append((start, end, name))


def test_the_nesting_check_finds_an_overlap():
    events = [{"ph": "X", "pid": 1, "tid": 3, "ts": 0.0, "dur": 10.0, "name": "a"},
              {"ph": "X", "pid": 1, "tid": 3, "ts": 5.0, "dur": 10.0, "name": "b"}]
    with pytest.raises(AssertionError, match="without nesting"):
        assert_nested(events)
    assert_nested([dict(events[1], tid=4), events[0]])  # other tracks: no overlap
