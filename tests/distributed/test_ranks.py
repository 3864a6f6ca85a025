"""Real ranks: one ``execmode launch -n 2`` of ranks_worker.py runs every check on both
ranks (collectives against NumPy, bad input, DistributedDataParallel against one process
on the whole batch, DistributedSampler), and each test here reads one check's outcome
on both. One launch for all of them: starting MPI and the engine twice costs more than
the checks. Skipped, with the reason, where mpi4py or mpiexec is missing."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from execmode.distributed.launch_cli import find_mpiexec

# Slow tier: two ranks under execmode launch (mpiexec); one launch runs every check.
pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("ranks_worker.py")
RANKS = 2
CHECKS = [
    "process_group",
    "all_reduce_each_op_and_dtype",
    "all_reduce_in_place_through_views_and_scalars",
    "broadcast_from_each_source",
    "all_gather_both_forms",
    "reduce_scatter_both_forms",
    "barrier_returns",
    "mismatched_shapes_name_both_ranks",
    "a_repeated_all_reduce_checks_as_the_first",
    "a_bad_argument_on_one_rank_fails_every_rank",
    "a_rank_in_a_barrier_while_another_reduces_fails_both",
    "a_rank_late_within_the_timeout_is_waited_for",
    "collectives_under_jit_are_graph_nodes",
    "collectives_under_jit_equal_eager_and_write_captures",
    "collectives_under_jit_that_cannot_be_nodes_break_the_graph",
    "a_jitted_step_averaging_gradients_is_one_graph",
    "ddp_trains_as_one_process_on_the_whole_batch",
    "ddp_no_sync_accumulates_locally_then_averages",
    "ddp_starts_each_bucket_while_backward_runs",
    "ddp_on_one_machine_averages_when_backward_ends_by_default",
    "ddp_unused_parameters_and_buffers",
    "ddp_refuses_models_that_differ",
    "ddp_jitted_forward_then_backward_outside_averages",
    "ddp_jitted_step_is_one_graph_with_a_node_per_bucket",
    "ddp_under_jit_no_sync_unused_parameters_and_buffers",
    "distributed_sampler_partitions",
    "ddp_trains_as_one_process_on_the_whole_batch_without_overlap",
    "ddp_no_sync_accumulates_locally_then_averages_without_overlap",
    "ddp_jitted_forward_then_backward_outside_averages_without_overlap",
]


def _missing() -> str | None:
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install 'execmode[distributed]')"
    if find_mpiexec() is None:
        return "no mpiexec (pip install 'execmode[distributed]' installs MPICH's)"
    return None


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    missing = _missing()
    if missing:
        pytest.skip(missing)
    out = tmp_path_factory.mktemp("ranks")
    # One thread per rank: two ranks on CI's two cores, and no BLAS threads on top.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "EXECMODE_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "execmode", "launch", "-n", str(RANKS), str(WORKER), str(out)],
        capture_output=True, text=True, timeout=120, env=env, cwd=out)
    ranks = []
    for r in range(RANKS):
        path = out / f"rank{r}.json"
        ranks.append(json.loads(path.read_text()) if path.exists() else {})
    return proc, ranks


def test_the_launch_ran_every_check_and_ended_cleanly(outcomes):
    proc, ranks = outcomes
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for r, results in enumerate(ranks):
        assert list(results) == CHECKS, f"rank {r} ran {list(results)}"


@pytest.mark.parametrize("name", CHECKS)
def test_check_on_every_rank(outcomes, name):
    proc, ranks = outcomes
    for r, results in enumerate(ranks):
        got = results.get(name, "did not run (an earlier check ended the launch)\n"
                                + proc.stderr[-2000:])
        assert got == "ok", f"rank {r}, {name}:\n{got}"


RAISES = """\
import execmode.torch as torch
import execmode.torch.distributed as dist

dist.init_process_group()
if dist.get_rank() == 1:
    raise ValueError("boom on rank 1")
dist.all_reduce(torch.ones(2))  # rank 0 waits here for a rank that is gone
"""


def test_a_rank_that_raises_ends_every_rank(tmp_path):
    missing = _missing()
    if missing:
        pytest.skip(missing)
    script = tmp_path / "raises.py"
    script.write_text(RAISES)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "EXECMODE_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "execmode", "launch", "-n", str(RANKS),
                           str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode != 0
    assert "boom on rank 1" in proc.stderr and "rank 1 raised; ending every rank" in proc.stderr


PROFILED = """\
import time
import execmode as em
import execmode.torch.distributed as dist

dist.init_process_group()
rank = dist.get_rank()
f = em.jit(lambda x: em.exp(x * 0.5).sum())
x = em.ones(64) * (rank + 1)
for _ in range(3):
    if rank == 1:
        time.sleep(0.05)  # the straggler: rank 0 waits for it at each all_reduce
    total = em.tensor([float(f(x).item())])
    dist.all_reduce(total)
print(f"rank {rank}: {total.item():.4f}")
"""


def test_a_profiled_launch_records_each_rank_and_merges_them_in_one_trace(tmp_path):
    missing = _missing()
    if missing:
        pytest.skip(missing)
    script = tmp_path / "profiled.py"
    script.write_text(PROFILED)
    runs = tmp_path / "runs"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "EXECMODE_NUM_THREADS": "1",
           "EXECMODE_SESSION_DIR": str(tmp_path / "sessions")}
    proc = subprocess.run([sys.executable, "-m", "execmode", "launch", "-n", str(RANKS),
                           "--profile", "--session-dir", str(runs), str(script)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (folder,) = runs.iterdir()
    assert f"execmode report {folder}" in proc.stderr
    from execmode.profilers.ranks import collective_waits, rank_sessions
    from execmode.profilers.session import open_session

    sessions = rank_sessions(folder)
    assert [r for r, _ in sessions] == list(range(RANKS))
    for r, path in sessions:
        with open_session(path) as s:
            assert s.meta["rank"] == {"rank": r, "world_size": RANKS, "local_rank": r}
            assert s.count("op_events") > 0 and s.status == "finished"
    report = subprocess.run([sys.executable, "-m", "execmode", "report", str(folder),
                             "--summary"], capture_output=True, text=True, timeout=120,
                            env=env)
    assert report.returncode == 0, report.stderr[-3000:]
    assert all(f"rank {r}: " in report.stdout for r in range(RANKS))
    # each collective is an op of its rank, with its wait for the others: rank 0 waited
    # for the sleeping rank 1, which the summary names. At the first all_reduce the ranks
    # arrive as their start-up and the jit's compile let them (a loaded machine can make
    # rank 0 the later one there); after it they leave each all_reduce together, and rank 1
    # sleeps before the next, so it arrives last at the other two at least.
    assert "rank 0: " in report.stdout and "3 collectives" in report.stdout
    assert "the ranks waited for rank 1: it arrived last at " in report.stdout
    # the ops side by side: all_reduce in both ranks' columns, rank 0's the longer
    table = report.stdout[report.stdout.index("Ops and kernels per rank"):].splitlines()
    assert table[1].split() == ["op", "calls", "rank", "0", "rank", "1", "slowest/fastest"]
    assert any(line.split()[:2] == ["all_reduce", "3"] for line in table[3:])
    # one timeline of both ranks (the TUI's Ranks view): rank 0 waited at the collectives
    from execmode.profilers.rank_compare import WAITING, rank_timeline, timeline_cells

    with open_session(sessions[0][1]) as s0, open_session(sessions[1][1]) as s1:
        timeline = rank_timeline([(0, s0), (1, s1)])
        waits = [collective_waits(s) for s in (s0, s1)]
    lane0, lane1 = timeline.lanes
    assert lane0.totals[WAITING] == waits[0].waited_ns
    assert lane1.totals[WAITING] == waits[1].waited_ns
    by_number = [dict(w.by_collective) for w in waits]
    assert sorted(by_number[0]) == sorted(by_number[1]) and len(by_number[0]) == 3
    for number in sorted(by_number[0])[1:]:  # rank 1 slept: rank 0 waited for it
        assert by_number[0][number] > by_number[1][number]
    for lane in timeline.lanes:  # no slice holds more than its width
        assert all(sum(cell) <= timeline.width_ns for cell in lane.slices)
    assert WAITING in timeline_cells(lane0, timeline.width_ns, 80)
    trace = json.loads(folder.with_name(folder.name + ".trace.json").read_text())
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert sorted(names) == [1 + r for r in range(RANKS)]
    assert all(names[1 + r].startswith(f"rank {r}: ") for r in range(RANKS))
    for r in range(RANKS):  # every rank's ops and its jit's compile, on the one clock
        mine = [e for e in events if e["pid"] == 1 + r and e.get("ph") == "X"]
        assert any(e["cat"] == "op" for e in mine) and any(e["cat"] == "compile" for e in mine)
        assert min(e["ts"] for e in mine) >= 0
        reduces = [e for e in mine if e["name"] == "all_reduce"]
        assert len(reduces) == 3 and all("waited_us=" in e["args"]["attrs"] and
                                         "moved_bytes=4" in e["args"]["attrs"] for e in reduces)
        assert [e["args"]["attrs"].split("collective=")[1] for e in reduces] == \
            [str(n) for n in sorted(by_number[r])]
    # complete events nest or follow each other on each track
    tracks: dict = {}
    for e in events:
        if e.get("ph") == "X":
            tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends: list = []
        for start, end in spans:
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1]
            open_ends.append(end)
    # a folder that is not a run is refused with the reason
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = subprocess.run([sys.executable, "-m", "execmode", "report", str(empty)],
                             capture_output=True, text=True, timeout=60, env=env)
    assert refused.returncode == 2 and "without rank sessions" in refused.stderr


@pytest.mark.parametrize("verb", ["profile", "run"])
def test_mpiexec_runs_execmode_on_each_rank_into_one_run_folder(tmp_path, verb):
    """``mpiexec -n 2 execmode profile|run SCRIPT``: each rank's execmode starts the script
    in a child process, which must still reach MPICH's launcher (its PMI_FD), and records
    into the run folder the ranks share, which report merges."""
    missing = _missing()
    if missing:
        pytest.skip(missing)
    script = tmp_path / "profiled.py"
    script.write_text(PROFILED)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "EXECMODE_NUM_THREADS": "1",
           "EXECMODE_SESSION_DIR": str(tmp_path / "sessions")}
    proc = subprocess.run([find_mpiexec(), "-n", str(RANKS), sys.executable, "-m", "execmode",
                           verb, str(script)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (folder,) = (tmp_path / "sessions").iterdir()
    assert folder.name.startswith("profiled-") and folder.name.endswith("-ranks")
    assert verb == "run" or f"execmode report {folder}" in proc.stderr
    from execmode.profilers.ranks import rank_sessions
    from execmode.profilers.session import open_session

    sessions = rank_sessions(folder)
    assert [r for r, _ in sessions] == list(range(RANKS))
    for r, path in sessions:
        with open_session(path) as s:
            assert s.status == "finished" and s.meta["rank"]["rank"] == r
    report = subprocess.run([sys.executable, "-m", "execmode", "report", str(folder),
                             "--summary"], capture_output=True, text=True, timeout=120,
                            env=env)
    assert "the ranks waited for rank 1" in report.stdout, report.stdout + report.stderr


LATE = """\
import time
import execmode.torch as torch
import execmode.torch.distributed as dist

dist.init_process_group()
if dist.get_rank() == 1:
    time.sleep(30)  # never arrives in time: rank 0 must not wait for it forever
dist.all_reduce(torch.ones(2))
"""


def _launch_with_a_1s_timeout(tmp_path, text: str, ranks: int):
    """(the launch's process, the end of what it said) of ``text`` on ``ranks`` ranks
    whose collectives wait at most 1 s."""
    missing = _missing()
    if missing:
        pytest.skip(missing)
    script = tmp_path / "late.py"
    script.write_text(text)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "EXECMODE_NUM_THREADS": "1",
           "EXECMODE_COLLECTIVE_TIMEOUT": "1"}
    proc = subprocess.run([sys.executable, "-m", "execmode", "launch", "-n", str(ranks),
                           str(script)], capture_output=True, text=True, timeout=60, env=env)
    return proc, proc.stdout[-2000:] + proc.stderr[-3000:]


def test_a_rank_that_never_arrives_is_named_when_the_collective_times_out(tmp_path):
    proc, said = _launch_with_a_1s_timeout(tmp_path, LATE, RANKS)
    assert proc.returncode != 0, said
    assert "all_reduce: rank(s) [1] did not arrive within 1 s" in proc.stderr, said
    assert "rank 0 raised; ending every rank" in proc.stderr, said  # the late rank ended


LATE_OF_THREE = """\
import time
import execmode.torch as torch
import execmode.torch.distributed as dist

dist.init_process_group()
if dist.get_rank() == 2:
    time.sleep(30)  # never arrives; rank 1 does, and answers rank 0's question
elif dist.get_rank() == 1:
    time.sleep(0.3)
dist.all_reduce(torch.ones(2))
"""


def test_of_three_ranks_only_the_one_that_never_arrives_is_named(tmp_path):
    proc, said = _launch_with_a_1s_timeout(tmp_path, LATE_OF_THREE, 3)
    assert proc.returncode != 0, said
    assert "all_reduce: rank(s) [2] did not arrive within 1 s" in proc.stderr, said
    assert "rank(s) [1, 2]" not in proc.stderr, said


NAN_ON_ONE_RANK = """\
import execmode as em
import execmode.torch.distributed as dist

dist.init_process_group()
rank = dist.get_rank()
broken = em.jit(lambda t: em.log(t - t) * 0.0) if {jit} else (lambda t: em.log(t - t) * 0.0)
x = em.ones(4)
for step in range(5):
    y = x * 2.0
    if rank == 1 and step == 2:
        y = broken(y)   # 0 * -inf: a NaN on rank 1 only
    dist.all_reduce(y)
print("never reached on a stopped rank", rank)
"""


@pytest.mark.parametrize("jit", [False, True])
def test_break_nan_stops_the_rank_that_made_it_and_the_others_at_their_collective(
        tmp_path, jit):
    missing = _missing()
    if missing:
        pytest.skip(missing)
    script = tmp_path / "nan.py"
    script.write_text(NAN_ON_ONE_RANK.format(jit=jit))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "EXECMODE_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "execmode", "launch", "-n", str(RANKS),
                           "--break", "nan", str(script)], capture_output=True, text=True,
                          timeout=60, env=env)
    said = proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.returncode != 0 and "never reached" not in proc.stdout, said
    made = "kernel k0 (subtract log multiply)" if jit else "multiply made a NaN"
    line = f"rank 1: breakpoint nan: {made}"
    # the op's own line: inside `broken`, line 6
    assert f"StoppedOnNaN: {line}" in proc.stderr and f"{script}:6" in proc.stderr, said
    assert f"all_reduce: stopped on rank 0, since {line}" in proc.stderr, said
