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
    "a_bad_argument_on_one_rank_fails_every_rank",
    "collectives_under_jit_say_graph_mode_is_not_built",
    "ddp_trains_as_one_process_on_the_whole_batch",
    "ddp_no_sync_accumulates_locally_then_averages",
    "ddp_unused_parameters_and_buffers",
    "ddp_refuses_models_that_differ_and_graph_mode",
    "distributed_sampler_partitions",
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
